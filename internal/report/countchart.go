package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/api"
	stats "github.com/canaryd/canaryd/internal/judge"
)

// The drawing area of a counts chart, in SVG user units: narrower than a
// metric's chart, so that the two stand side by side on a wide screen
// and, one above the other on a phone (390 px), the labels stay about
// their 11 px.
const (
	countW, countH = 360.0, 222.0
	countLeft      = 46.0
	countRight     = 12.0
	countTop       = 24.0 // above the plot: the decisive look's label
	countPlotH     = 150.0
	countBottom    = countTop + countPlotH
	countPlotW     = countW - countLeft - countRight
	countInset     = 8.0
	// countMaxDecades bounds the e-value axis below: an e-value under
	// 10^-countMaxDecades is drawn at the bottom.
	countMaxDecades = 6
	// countRatioSpan bounds the ratio axis: from 1/countRatioSpan to
	// countRatioSpan; a bound beyond (a sequence the counts do not bound
	// yet) is drawn at the edge.
	countRatioSpan = 64.0
)

// countLook is what a counts measurement says of the test at its last
// look, read from its metadata.
type countLook struct {
	n         int // the measurement's index, from 0
	look      int
	e         float64
	threshold float64
	decision  string
	est       float64 // NaN without events
	lo, hi    float64 // hi is +Inf until the counts bound it
	tolerance float64
	direction string
	phase     api.Phase
	title     string
}

// countCharts are a counts metric (provider.judge.counts) over its looks:
// the e-value against 1/alpha, and the rate ratio's confidence sequence
// against the tolerance.
type countCharts struct {
	Metric string
	// Threshold, Tolerance and Decisive are the values, for a program to
	// read; Decisive is the decisive look, 0 when none.
	Threshold, Tolerance string
	Decisive             int
	E                    countChart
	Ratio                countChart
	Notes                []string
}

// countChart is one chart of countCharts.
type countChart struct {
	Grid   []gridLine
	XTicks []xLabel
	// Line is the path through the looks' values; Points are its marks.
	Line   string
	Points []countPoint
	// Band is the confidence sequence's area (the ratio chart only).
	Band string
	// RefY is the reference line (1/alpha, the tolerance) and RefLabel
	// what it is; RefLabelY places the label above or below the line.
	RefY, RefLabel, RefLabelY string
	// Mark is the decisive look, nil when the test has not decided.
	Mark    *countMark
	Caption string
	Label   string // the chart's aria-label
}

type countPoint struct {
	X, Y, Look, Value, Title string
	Phase                    string
}

type countMark struct {
	X, Y, Label, Anchor, LabelX string
}

// countLookOf reads a counts measurement; false for any other (a sample
// judge's, a Prometheus metric's), an Error, or one before the first look.
func countLookOf(i int, m *api.Measurement) (countLook, bool) {
	md := m.Metadata
	if md == nil || m.Phase == api.PhaseError {
		return countLook{}, false
	}
	if _, ok := md[stats.MetadataDecision]; !ok {
		return countLook{}, false
	}
	look, err := strconv.Atoi(md[stats.MetadataLooks])
	if err != nil || look <= 0 {
		return countLook{}, false
	}
	c := countLook{n: i, look: look, decision: md[stats.MetadataDecision], direction: md[stats.MetadataDirection], phase: m.Phase, title: m.Value}
	var ok1, ok2, ok3 bool
	c.e, ok1 = positive(md[stats.MetadataEValue], true)
	c.threshold, ok2 = positive(md[stats.MetadataThreshold], false)
	c.tolerance, ok3 = positive(md[stats.MetadataTolerance], false)
	if !ok1 || !ok2 || !ok3 {
		return countLook{}, false
	}
	parts := strings.Split(md[stats.MetadataRatio], ",")
	if len(parts) != 3 {
		return countLook{}, false
	}
	var errs [3]error
	c.est, errs[0] = strconv.ParseFloat(parts[0], 64)
	c.lo, errs[1] = strconv.ParseFloat(parts[1], 64)
	c.hi, errs[2] = strconv.ParseFloat(parts[2], 64)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || math.IsNaN(c.lo) || math.IsNaN(c.hi) || c.lo < 0 || c.hi < c.lo {
		return countLook{}, false
	}
	return c, true
}

// positive parses a number > 0 (≥ 0 with zero); +Inf is refused.
func positive(s string, zero bool) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f == 0 && !zero) {
		return 0, false
	}
	return f, true
}

// newCountCharts draws a counts metric's measurements over their looks;
// nil when the metric has none that looked at counts.
func newCountCharts(row *Metric, ms []api.Measurement) *countCharts {
	// One point a look: a later measurement of the same look (a resumed
	// analysis' first) replaces an earlier one.
	byLook := map[int]countLook{}
	for i := range ms {
		if c, ok := countLookOf(i, &ms[i]); ok {
			byLook[c.look] = c
		}
	}
	if len(byLook) == 0 {
		return nil
	}
	looks := make([]countLook, 0, len(byLook))
	for _, c := range byLook {
		looks = append(looks, c)
	}
	sort.Slice(looks, func(a, b int) bool { return looks[a].look < looks[b].look })

	// The decisive look: the first at which the test decided (its
	// decision stays from there on), or the last look's conclusion.
	decisive := -1
	for k, c := range looks {
		if c.decision != stats.DecisionContinue {
			decisive = k
			break
		}
	}
	cc := &countCharts{Metric: row.Name}
	idx := thin(len(looks), decisive, MaxChartPoints)
	if len(idx) < len(looks) {
		cc.Notes = append(cc.Notes, fmt.Sprintf("%d of %d looks drawn, evenly spaced (the decisive one kept).", len(idx), len(looks)))
	}
	drawn := make([]countLook, len(idx))
	for k, i := range idx {
		drawn[k] = looks[i]
	}
	last := looks[len(looks)-1]
	cc.Threshold = strconv.FormatFloat(last.threshold, 'g', -1, 64)
	cc.Tolerance = strconv.FormatFloat(last.tolerance, 'g', -1, 64)
	var mark *countLook
	if decisive >= 0 {
		mark = &looks[decisive]
		cc.Decisive = mark.look
	}

	// The look axis, shared by both charts.
	first, lastLook := float64(drawn[0].look), float64(last.look)
	xOf := func(look int) float64 {
		if lastLook == first {
			return countLeft + countPlotW/2
		}
		return countLeft + countInset + (countPlotW-2*countInset)*(float64(look)-first)/(lastLook-first)
	}
	var xTicks []xLabel
	every := ticks(first, lastLook)
	if lastLook-first <= 10 {
		every = every[:0]
		for v := first; v <= lastLook; v++ {
			every = append(every, v)
		}
	}
	for _, v := range every {
		if v != math.Trunc(v) {
			continue
		}
		xTicks = append(xTicks, xLabel{X: f1(xOf(int(v))), Label: strconv.Itoa(int(v)), Anchor: "middle"})
	}

	cc.E = eValueChart(drawn, mark, xOf, last)
	cc.Ratio = ratioChart(drawn, mark, xOf, last)
	cc.E.XTicks, cc.Ratio.XTicks = xTicks, xTicks
	return cc
}

// eValueChart draws the e-values on a log scale against 1/alpha.
func eValueChart(looks []countLook, mark *countLook, xOf func(int) float64, last countLook) countChart {
	th := last.threshold
	minE, maxE := th, th
	for _, c := range looks {
		if c.e > 0 {
			minE = math.Min(minE, c.e)
		}
		maxE = math.Max(maxE, c.e)
	}
	// Whole decades, from at most 1 up to above 1/alpha's.
	lo := math.Floor(math.Log10(math.Min(minE, 1)))
	hi := math.Ceil(math.Log10(math.Max(maxE, th*5)))
	lo = math.Max(lo, -countMaxDecades)
	yOf := func(e float64) float64 {
		l := lo
		if e > 0 {
			l = math.Max(math.Log10(e), lo)
		}
		return countTop + countPlotH*(hi-l)/(hi-lo)
	}
	ch := countChart{Label: "e-value at each look against 1/alpha"}
	step := math.Max(1, math.Ceil((hi-lo)/5))
	for d := math.Floor(hi/step) * step; d >= lo; d -= step {
		ch.Grid = append(ch.Grid, gridLine{Y: f1(yOf(math.Pow(10, d))), Label: decade(int(d))})
	}
	var path strings.Builder
	for k, c := range looks {
		x, y := xOf(c.look), yOf(c.e)
		if k == 0 {
			path.WriteString("M" + f1(x) + "," + f1(y))
		} else {
			path.WriteString(" L" + f1(x) + "," + f1(y))
		}
		cmp := "under"
		if c.e >= c.threshold {
			cmp = "at or above"
		}
		ch.Points = append(ch.Points, countPoint{X: f1(x), Y: f1(y), Look: strconv.Itoa(c.look), Value: strconv.FormatFloat(c.e, 'g', -1, 64),
			Phase: string(c.phase), Title: fmt.Sprintf("look %d: e-value %s, %s 1/α = %s", c.look, sig(c.e), cmp, sig(c.threshold))})
	}
	ch.Line = path.String()
	ty := yOf(th)
	ch.RefY = f1(ty)
	ch.RefLabel = fmt.Sprintf("fails at %s = 1/α", sig(th))
	ch.RefLabelY = f1(ty - 5)
	if mark != nil {
		ch.Mark = decisiveMark(mark, xOf, yOf(mark.e))
	}
	alpha := 1 / th
	ch.Caption = fmt.Sprintf("The evidence, at each look, that the canary's rate of bad events is %s %s: the test fails when it reaches %s = 1/α (α = %s).",
		aboveBelow(last.direction), timesOf(last.tolerance), sig(th), sig(alpha))
	return ch
}

// ratioChart draws the rate ratio's estimate inside its confidence
// sequence against the tolerance, on a log scale.
func ratioChart(looks []countLook, mark *countLook, xOf func(int) float64, last countLook) countChart {
	tol := last.tolerance
	lo, hi := tol, tol
	for _, c := range looks {
		for _, v := range []float64{c.est, c.lo, c.hi} {
			if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	lo = math.Max(lo/1.25, 1/countRatioSpan)
	hi = math.Min(hi*1.25, countRatioSpan)
	if hi/lo < 4 {
		mid := math.Sqrt(hi * lo)
		lo, hi = mid/2, mid*2
	}
	l2lo, l2hi := math.Log2(lo), math.Log2(hi)
	yOf := func(v float64) float64 {
		l := l2lo
		switch {
		case math.IsInf(v, 1):
			l = l2hi
		case v > 0:
			l = math.Min(math.Max(math.Log2(v), l2lo), l2hi)
		}
		return countTop + countPlotH*(l2hi-l)/(l2hi-l2lo)
	}
	ch := countChart{Label: "rate ratio canary/baseline at each look, within its confidence sequence, against the tolerance"}
	for _, v := range ratioTicks(lo, hi) {
		ch.Grid = append(ch.Grid, gridLine{Y: f1(yOf(v)), Label: sig(v)})
	}
	// The band: the upper bounds left to right, the lower ones back.
	var band strings.Builder
	const half = 4.0 // a single look's band is this wide either side
	for k, c := range looks {
		x := xOf(c.look)
		if k == 0 {
			if len(looks) == 1 {
				band.WriteString("M" + f1(x-half) + "," + f1(yOf(c.hi)) + " L" + f1(x+half) + "," + f1(yOf(c.hi)))
				continue
			}
			band.WriteString("M" + f1(x) + "," + f1(yOf(c.hi)))
			continue
		}
		band.WriteString(" L" + f1(x) + "," + f1(yOf(c.hi)))
	}
	for k := len(looks) - 1; k >= 0; k-- {
		c := looks[k]
		x := xOf(c.look)
		if len(looks) == 1 {
			band.WriteString(" L" + f1(x+half) + "," + f1(yOf(c.lo)) + " L" + f1(x-half) + "," + f1(yOf(c.lo)))
			continue
		}
		band.WriteString(" L" + f1(x) + "," + f1(yOf(c.lo)))
	}
	band.WriteString(" Z")
	ch.Band = band.String()
	var path strings.Builder
	for _, c := range looks {
		if math.IsNaN(c.est) {
			continue
		}
		x, y := xOf(c.look), yOf(c.est)
		if path.Len() == 0 {
			path.WriteString("M" + f1(x) + "," + f1(y))
		} else {
			path.WriteString(" L" + f1(x) + "," + f1(y))
		}
		ch.Points = append(ch.Points, countPoint{X: f1(x), Y: f1(y), Look: strconv.Itoa(c.look), Value: strconv.FormatFloat(c.est, 'g', -1, 64),
			Phase: string(c.phase), Title: fmt.Sprintf("look %d: rate ratio %s [%s, %s]", c.look, sig(c.est), sig(c.lo), sig(c.hi))})
	}
	ch.Line = path.String()
	ty := yOf(tol)
	ch.RefY = f1(ty)
	ch.RefLabel = "tolerance " + sig(tol)
	// The label goes on the side of the line the failing ratios are not.
	ch.RefLabelY = f1(ty + 14)
	if last.direction == string(stats.DirectionDecrease) {
		ch.RefLabelY = f1(ty - 5)
	}
	if mark != nil && !math.IsNaN(mark.est) {
		ch.Mark = decisiveMark(mark, xOf, yOf(mark.est))
	}
	level := sig(100 * (1 - 1/last.threshold))
	ch.Caption = fmt.Sprintf("The canary's rate of bad events as a multiple of the baseline's, at each look, with the range it is within at %s%% confidence over all looks, narrowing as the counts grow; %s is the tolerance.",
		level, sig(tol))
	if last.hi > countRatioSpan || last.lo < 1/countRatioSpan {
		ch.Caption += fmt.Sprintf(" Bounds beyond %s or under 1/%s, or not yet bounded, are drawn at the edge.", sig(countRatioSpan), sig(countRatioSpan))
	}
	return ch
}

func decisiveMark(c *countLook, xOf func(int) float64, y float64) *countMark {
	x := xOf(c.look)
	m := &countMark{X: f1(x), Y: f1(y), Label: fmt.Sprintf("%s at look %d", c.decision, c.look), Anchor: "middle", LabelX: f1(x)}
	// Keep the label inside the chart.
	switch {
	case x < countLeft+70:
		m.Anchor, m.LabelX = "start", f1(math.Max(x-6, 2))
	case x > countW-countRight-70:
		m.Anchor, m.LabelX = "end", f1(math.Min(x+6, countW-2))
	}
	return m
}

// ratioTicks are the values of 1, 2, 5 times a power of ten from lo to
// hi, at most six of them (fewer kinds when more would fit).
func ratioTicks(lo, hi float64) []float64 {
	for _, mults := range [][]float64{{1, 2, 5}, {1, 3}, {1}} {
		var out []float64
		for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
			for _, m := range mults {
				v := m * math.Pow(10, d)
				if v >= lo && v <= hi {
					out = append(out, v)
				}
			}
		}
		if len(out) <= 6 {
			return out
		}
	}
	return []float64{1}
}

// decade labels 10^d: 0.01 to 10,000 written out, others as a power.
func decade(d int) string {
	if d >= -2 && d <= 4 {
		return sig(math.Pow(10, float64(d)))
	}
	const sup = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	digits := []rune(sup)
	s := "10"
	if d < 0 {
		s += "⁻"
		d = -d
	}
	for _, c := range strconv.Itoa(d) {
		s += string(digits[c-'0'])
	}
	return s
}

// sig writes a number for a person: 3 significant digits, thousands
// separated (4.4, 10.2, 2,693, 1.3e+07); ∞ for +Inf.
func sig(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "∞"
	case math.IsNaN(f):
		return "n/a"
	case math.Abs(f) >= 1000 && math.Abs(f) < 1e7:
		s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

func aboveBelow(direction string) string {
	if direction == string(stats.DirectionDecrease) {
		return "below"
	}
	return "above"
}

func timesOf(tolerance float64) string {
	if tolerance == 1 {
		return "the baseline's"
	}
	return sig(tolerance) + " times the baseline's"
}

// CountsSVG renders the charts of a counts metric over its looks alone,
// as the HTML report draws them: for a page that shows the same charts.
// Empty when the metric has no counts measurement past its first look.
func (r *Report) CountsSVG(metric string) (template.HTML, error) {
	for i := range r.Metrics {
		if r.Metrics[i].Name != metric {
			continue
		}
		c := newCountCharts(&r.Metrics[i], r.measurements(metric))
		if c == nil {
			return "", nil
		}
		var buf bytes.Buffer
		if err := htmlTemplate.ExecuteTemplate(&buf, "countcharts", c); err != nil {
			return "", err
		}
		return template.HTML(buf.String()), nil // #nosec: built by html/template
	}
	return "", fmt.Errorf("no metric %q", metric)
}
