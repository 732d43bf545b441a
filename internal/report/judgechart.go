package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/judge"
)

// The drawing area of a judge chart: the two distributions, and beneath
// them the strip of the shift canary − baseline.
const (
	ecdfH       = 268.0
	ecdfPlotTop = padTop
	ecdfPlotH   = 140.0
	shiftTop    = 196.0 // the strip's band
	shiftH      = 24.0
)

// judgeChart draws one comparison of a judge metric: the canary's and the
// baseline's samples as empirical distribution functions (ECDF), and the
// Hodges-Lehmann estimate of the shift with its confidence interval.
type judgeChart struct {
	Metric   string
	Index    int
	Time     string
	Canary   ecdfLine
	Baseline ecdfLine
	Grid     []gridLine
	XTicks   []xLabel
	Shift    *shiftStrip
	Caption  string
	Notes    []string
}

type ecdfLine struct {
	D    string
	N    int // the sample's size
	Kept int // the values drawn
}

// shiftStrip is the shift's axis: its interval as a band, the estimate as
// a mark, and 0 (no shift) as a line.
type shiftStrip struct {
	CIX, CIW, HLX, ZeroX string
	Ticks                []xLabel
	// Estimate, Lo and Hi are the values, for a program to read.
	Estimate, Lo, Hi string
	Title            string
}

// newJudgeChart draws the comparison of the decisive measurement, or of the
// newest one that compared two samples; nil when none did.
func newJudgeChart(row *Metric, ms []api.Measurement) *judgeChart {
	pick := -1
	for i := len(ms) - 1; i >= 0; i-- {
		if _, ok := ms[i].Metadata[judge.MetadataCanarySample]; !ok {
			continue
		}
		if _, ok := ms[i].Metadata[judge.MetadataBaselineSample]; !ok {
			continue
		}
		if pick < 0 {
			pick = i
		}
		if row.Decisive != nil && sameMeasurement(&ms[i], row.Decisive) {
			pick = i
			break
		}
	}
	if pick < 0 {
		return nil
	}
	m := &ms[pick]
	md := m.Metadata
	canary, cn, ok1 := sampleOf(md[judge.MetadataCanarySample], md[judge.MetadataCanarySampleN])
	baseline, bn, ok2 := sampleOf(md[judge.MetadataBaselineSample], md[judge.MetadataBaselineSampleN])
	if !ok1 || !ok2 {
		return nil
	}
	c := &judgeChart{Metric: row.Name, Index: pick + 1}
	if at := measuredAt(m); !at.IsZero() {
		c.Time = at.UTC().Format(time.RFC3339)
	}
	lo, hi := math.Min(canary[0], baseline[0]), math.Max(canary[len(canary)-1], baseline[len(baseline)-1])
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.2, 1)
	}
	lo, hi = lo-span*0.05, hi+span*0.05
	xOf := func(v float64) float64 { return padLeft + plotW*(v-lo)/(hi-lo) }
	yOf := func(p float64) float64 { return ecdfPlotTop + ecdfPlotH*(1-p) }
	for _, p := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c.Grid = append(c.Grid, gridLine{Y: f1(yOf(p)), Label: num(p)})
	}
	for _, v := range ticks(lo, hi) {
		c.XTicks = append(c.XTicks, xLabel{X: f1(xOf(v)), Label: num(v), Anchor: "middle"})
	}
	c.Canary = ecdfLine{D: ecdfPath(canary, cn, xOf, yOf, lo, hi), N: cn, Kept: len(canary)}
	c.Baseline = ecdfLine{D: ecdfPath(baseline, bn, xOf, yOf, lo, hi), N: bn, Kept: len(baseline)}
	if len(canary) < cn || len(baseline) < bn {
		c.Notes = append(c.Notes, fmt.Sprintf("Each distribution is drawn from at most %d of its values, evenly spaced in order (the least and the greatest among them).", judge.MaxSampleValues))
	}

	// The caption: the classification, and the numbers it came from.
	parts := []string{fmt.Sprintf("Measurement #%d", pick+1)}
	if cls := md[analysis.MetadataClassification]; cls != "" {
		parts = append(parts, "classified "+cls)
	}
	if p := md[judge.MetadataPValue]; p != "" {
		parts = append(parts, "p = "+p)
	}
	est, errE := strconv.ParseFloat(md[judge.MetadataEstimate], 64)
	ciLo, ciHi, okCI := interval(md[judge.MetadataInterval])
	if errE == nil && okCI && !math.IsNaN(est) {
		level := md[judge.MetadataConfidenceLevel]
		pct := "the"
		if l, err := strconv.ParseFloat(level, 64); err == nil {
			pct = strconv.FormatFloat(l*100, 'g', 4, 64) + "%"
		}
		parts = append(parts, fmt.Sprintf("shift canary − baseline %s (Hodges-Lehmann), %s interval %s to %s", signed(est), pct, signed(ciLo), signed(ciHi)))
		c.Shift = newShiftStrip(est, ciLo, ciHi)
		c.Shift.Title = fmt.Sprintf("shift %s, %s interval %s to %s", signed(est), pct, signed(ciLo), signed(ciHi))
	}
	parts = append(parts, fmt.Sprintf("canary n = %d, baseline n = %d", cn, bn))
	c.Caption = strings.Join(parts, "; ") + "."
	return c
}

func signed(v float64) string {
	s := num(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// sampleOf reads a side's sample from a measurement's metadata.
func sampleOf(values, n string) ([]float64, int, bool) {
	if values == "" {
		return nil, 0, false
	}
	parts := strings.Split(values, ",")
	if len(parts) > judge.MaxSampleValues {
		return nil, 0, false
	}
	out := make([]float64, 0, len(parts))
	for _, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, 0, false
		}
		if len(out) > 0 && f < out[len(out)-1] {
			return nil, 0, false
		}
		out = append(out, f)
	}
	size, err := strconv.Atoi(n)
	if err != nil || size < len(out) {
		size = len(out)
	}
	return out, size, true
}

func interval(s string) (float64, float64, bool) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseFloat(a, 64)
	hi, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil || math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// ecdfPath is the step function of a sorted sample of n values of which
// kept are given (all, or evenly spaced order statistics).
func ecdfPath(values []float64, n int, xOf, yOf func(float64) float64, lo, hi float64) string {
	k := len(values)
	var b strings.Builder
	b.WriteString("M" + f1(xOf(lo)) + "," + f1(yOf(0)))
	for i, v := range values {
		j := i
		if n > k && k > 1 {
			j = int(math.Round(float64(i) * float64(n-1) / float64(k-1)))
		}
		b.WriteString(" H" + f1(xOf(v)) + " V" + f1(yOf(float64(j+1)/float64(n))))
	}
	b.WriteString(" H" + f1(xOf(hi)))
	return b.String()
}

func newShiftStrip(est, lo, hi float64) *shiftStrip {
	a, b := math.Min(math.Min(lo, est), 0), math.Max(math.Max(hi, est), 0)
	span := b - a
	if span == 0 {
		span = 1
	}
	a, b = a-span*0.1, b+span*0.1
	xOf := func(v float64) float64 { return padLeft + plotW*(v-a)/(b-a) }
	s := &shiftStrip{CIX: f1(xOf(lo)), CIW: f1(math.Max(xOf(hi)-xOf(lo), 1)), HLX: f1(xOf(est)), ZeroX: f1(xOf(0)),
		Estimate: strconv.FormatFloat(est, 'g', -1, 64), Lo: strconv.FormatFloat(lo, 'g', -1, 64), Hi: strconv.FormatFloat(hi, 'g', -1, 64)}
	for _, v := range ticks(a, b) {
		s.Ticks = append(s.Ticks, xLabel{X: f1(xOf(v)), Label: num(v), Anchor: "middle"})
	}
	return s
}

// JudgeSVG renders the chart of a judge metric's comparison alone (the
// distributions and the shift), as the HTML report draws it: for a page
// that shows the same charts. Empty when the metric has no measurement
// that compared two samples.
func (r *Report) JudgeSVG(metric string) (template.HTML, error) {
	for i := range r.Metrics {
		if r.Metrics[i].Name != metric {
			continue
		}
		c := newJudgeChart(&r.Metrics[i], r.measurements(metric))
		if c == nil {
			return "", nil
		}
		var buf bytes.Buffer
		if err := htmlTemplate.ExecuteTemplate(&buf, "judgechart", c); err != nil {
			return "", err
		}
		return template.HTML(buf.String()), nil // #nosec: built by html/template
	}
	return "", fmt.Errorf("no metric %q", metric)
}
