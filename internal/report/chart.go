package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// MaxChartPoints is the most measurements a chart draws. A metric with
// more (a long analysis, a backtest of days) is thinned to this many,
// evenly spaced, the decisive measurement always among them, and its chart
// says so; the measurements table is thinned the same way. It keeps a
// report of any analysis to some hundreds of kilobytes.
const MaxChartPoints = 240

// MaxTableRows is the most measurements a metric's table lists; a longer
// metric's are thinned as its chart's are.
const MaxTableRows = 60

// MaxStripCells is the most cells the verdict strip of a backtest series
// draws. A longer series is grouped into this many cells, each showing the
// worst verdict of the analyses it holds.
const MaxStripCells = 240

// RegionSamples is how many values across a chart's range the metric's
// compiled conditions are evaluated at to shade where they pass, fail or
// are inconclusive.
const RegionSamples = 200

// RegionBudget bounds the time spent evaluating conditions for the shaded
// regions of one report, from when it has a place of the Renderer's
// shading pool (MaxShading), and the wait for that place; regions not
// found by then are not drawn, and the chart says so.
const RegionBudget = 2 * time.Second

// The drawing area of a chart, in SVG user units.
const (
	chartW, chartH = 720.0, 220.0
	padLeft        = 64.0
	padRight       = 16.0
	padTop         = 10.0
	padBottom      = 46.0 // the x-axis labels and the lane of measurements without a value
	plotW          = chartW - padLeft - padRight
	plotH          = chartH - padTop - padBottom
	laneY          = chartH - 12.0
	inset          = 10.0 // keeps the first and last points off the chart's edges
)

// shape is how a measurement's result looks to the conditions: a scalar
// (float64) or a vector of n series ([]float64).
type shape struct {
	vector bool
	n      int
}

// value is what the chart makes of a measurement's displayed value.
type value struct {
	ok       bool    // a number to draw
	y        float64 // the point: the value, or the first series' value
	lo, hi   float64 // the least and greatest series values
	shape    shape
	numbered bool // the value was a number or a list of numbers (possibly empty)
}

// parseValue reads a measurement's value as the Prometheus provider writes
// it: "0.5" for a scalar, "[0.01]" or "[0.1,0.2]" for a vector, "[0.1,0.2,…
// (12000 values)]" for a long one; "NaN" and NaN series count as no value.
func parseValue(s string) value {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return value{numbered: true, shape: shape{}}
		}
		return value{ok: true, y: f, lo: f, hi: f, numbered: true}
	}
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return value{}
	}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	v := value{numbered: true, shape: shape{vector: true}}
	if inner == "" {
		return v
	}
	first := true
	for _, part := range strings.Split(inner, ",") {
		part = strings.TrimSpace(part)
		if i := strings.Index(part, "…"); i >= 0 {
			// "… (12000 values)": the count of the whole list.
			var n int
			if _, err := fmt.Sscanf(strings.TrimSpace(part[i+len("…"):]), "(%d values)", &n); err == nil {
				v.shape.n = n
			}
			break
		}
		f, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return value{}
		}
		v.shape.n++
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if !v.ok {
			v.lo, v.hi = f, f
		}
		v.lo, v.hi = min(v.lo, f), max(v.hi, f)
		if first {
			v.y = f
		}
		v.ok, first = true, false
	}
	return v
}

// sample is the result the conditions are given for y: the metric's own
// shape, every series at y.
func (s shape) sample(y float64) any {
	if !s.vector {
		return y
	}
	out := make([]float64, max(s.n, 1))
	for i := range out {
		out[i] = y
	}
	return out
}

// chart is one metric's measurements drawn over time.
type chart struct {
	Metric  string
	Regions []region
	Points  []point
	Lines   []gridLine // the y-axis grid and its labels
	XLabels []xLabel
	// Lane is drawn when some measurements have no value to draw.
	Lane bool
	// Numeric is false when no measurement had a number: the points are
	// then all in the lane, coloured by phase.
	Numeric bool
	Notes   []string
	Legend  []legendItem
	// Outcomes are the outcomes the shaded regions show, for the legend.
	Outcomes []legendItem
	// Thresholds are the conditions' thresholds drawn as lines (see
	// thresholdsOf).
	Thresholds []thresholdLine
	// Decisive names the decisive measurement in the legend; empty when
	// none is drawn.
	Decisive string
}

// thresholdLine is a threshold drawn across a chart.
type thresholdLine struct {
	Y, LabelY, Label, Value string
	Success                 bool
}

type region struct {
	Y, H    string // SVG coordinates
	Outcome string // Successful, Failed, Inconclusive, Error
	Lo, Hi  string // the values the region spans, as labels
	// From and To are the same values in full, for a program to read.
	From, To string
}

type point struct {
	X, Y     string
	Phase    string
	Title    string
	Decisive bool
	// Whisker spans the series' values of a vector of several.
	Whisker    bool
	WLo, WHi   string
	Index      int
	DryRunFail bool
}

type gridLine struct {
	Y, Label string
}

type xLabel struct {
	X, Label, Anchor string
}

type legendItem struct {
	Class, Label string
}

// thin returns the indices of the measurements to draw: all of them up to
// limit, else that many evenly spaced, with keep among them.
func thin(n, keep, limit int) []int {
	if n <= limit {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, limit)
	for k := range limit {
		i := int(math.Round(float64(k) * float64(n-1) / float64(limit-1)))
		out = append(out, i)
	}
	if keep >= 0 {
		// Replace the nearest drawn index by the decisive one.
		best := 0
		for k, i := range out {
			if abs(i-keep) < abs(out[best]-keep) {
				best = k
			}
		}
		out[best] = keep
	}
	return out
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// judgeOf is the metric's compiled conditions, evaluated for the shaded
// bands of a report being drawn (sh) until its RegionBudget is spent.
type judgeOf struct {
	j  analysis.Judge
	sh *shading
}

// phase evaluates the conditions at v on a goroutine of the report's
// place in the Renderer's shading pool, never through
// analysis.ContextJudge, whose pool of evaluators is the measurements',
// and waits for it no longer than the report's budget: an evaluation left
// behind keeps the place until it ends (shading.done).
func (j judgeOf) phase(v any) api.Phase {
	if j.sh.ctx.Err() != nil {
		return api.PhaseError
	}
	done := make(chan api.Phase, 1)
	// Ends when the conditions have been evaluated, within their cost
	// bound (condition.MaxStepsPerValue).
	go func() {
		defer func() {
			if recover() != nil {
				done <- api.PhaseError
			}
		}()
		p, _ := j.j.Judge(v)
		done <- p
	}()
	select {
	case p := <-done:
		return p
	case <-j.sh.ctx.Done():
		j.sh.behind = done
		return api.PhaseError
	}
}

// newChart draws a metric's measurements. m is the plan's metric (its
// conditions shade the regions, found by sh, and draw its thresholds); nil
// draws neither.
func newChart(row *Metric, ms []api.Measurement, m *analysis.Metric, sh *shading) *chart {
	c := &chart{Metric: row.Name}
	if len(ms) == 0 {
		return nil
	}
	decisive := decisiveIndex(row, ms)
	idx := thin(len(ms), decisive, MaxChartPoints)
	if len(idx) < len(ms) {
		c.Notes = append(c.Notes, fmt.Sprintf("Thinned: %d of %d measurements drawn, evenly spaced (the decisive one kept).", len(idx), len(ms)))
	}

	vals, lo, hi, shp := chartValues(ms, idx, decisive)
	numeric := shp != nil
	// The thresholds are drawn wherever the values are.
	ts := thresholdsOf(m)
	if numeric {
		for _, t := range ts {
			lo, hi = min(lo, t.Value), max(hi, t.Value)
		}
	}
	// The time axis.
	t0, t1 := timeRange(ms, idx)
	xOf := func(k int) float64 {
		at := measuredAt(&ms[idx[k]])
		if at.IsZero() || !t1.After(t0) {
			if len(idx) == 1 {
				return padLeft + plotW/2
			}
			return padLeft + inset + (plotW-2*inset)*float64(k)/float64(len(idx)-1)
		}
		return padLeft + inset + (plotW-2*inset)*float64(at.Sub(t0))/float64(t1.Sub(t0))
	}
	c.XLabels = timeLabels(t0, t1)

	c.Numeric = numeric
	var yOf func(float64) float64
	if numeric {
		yOf = c.drawValueAxis(row, m, sh, lo, hi, *shp, ts)
	} else {
		c.Notes = append(c.Notes, "The values are not numbers: each measurement is drawn by its phase only.")
	}

	var near []float64
	for _, t := range ts {
		near = append(near, t.Value)
	}
	for k, i := range idx {
		ms := &ms[i]
		p := point{X: f1(xOf(k)), Phase: string(ms.Phase), Decisive: i == decisive, Index: i + 1,
			Title: pointTitle(i+1, ms, near...)}
		if p.Decisive {
			c.Decisive = fmt.Sprintf("decisive: #%d, the measurement that settled the metric (%s)", i+1, ms.Phase)
		}
		v := vals[k]
		if v.ok {
			p.Y = f1(yOf(v.y))
			if v.hi > v.lo {
				p.Whisker, p.WLo, p.WHi = true, f1(yOf(v.lo)), f1(yOf(v.hi))
			}
		} else {
			p.Y = f1(laneY)
			c.Lane = true
		}
		c.Points = append(c.Points, p)
	}
	if shp != nil && shp.vector && shp.n > 1 {
		c.Notes = append(c.Notes, "Each point is the first series' value (result[0]); the line through it spans the least to the greatest series.")
	}
	c.legends()
	return c
}

// decisiveIndex is the index in ms of the row's decisive measurement, or
// -1: the measurement itself, or failing that one equal to it.
func decisiveIndex(row *Metric, ms []api.Measurement) int {
	if row.Decisive == nil {
		return -1
	}
	for i := range ms {
		if &ms[i] == row.Decisive {
			return i
		}
	}
	decisive := -1
	for i := range ms {
		if sameMeasurement(&ms[i], row.Decisive) {
			decisive = i
		}
	}
	return decisive
}

// chartValues parses the values of the measurements drawn (idx), and
// returns them with their range and the shape of the decisive one's (or
// else the first number's); a nil shape when none is a number.
func chartValues(ms []api.Measurement, idx []int, decisive int) (vals []value, lo, hi float64, shp *shape) {
	vals = make([]value, len(idx))
	for k, i := range idx {
		v := parseValue(ms[i].Value)
		vals[k] = v
		if !v.ok {
			continue
		}
		if shp == nil {
			lo, hi = v.lo, v.hi
		}
		lo, hi = min(lo, v.lo), max(hi, v.hi)
		if i == decisive || shp == nil {
			s := v.shape
			shp = &s
		}
	}
	return vals, lo, hi, shp
}

// timeLabels label the time axis from t0 to t1: its start, and its end and
// middle when the range has them, in a layout that suits its length.
func timeLabels(t0, t1 time.Time) []xLabel {
	if t0.IsZero() {
		return nil
	}
	layout := timeLayout(t0, t1)
	labels := []xLabel{{f1(padLeft + inset), t0.UTC().Format(layout), "start"}}
	if t1.After(t0) {
		labels = append(labels, xLabel{f1(padLeft + plotW - inset), t1.UTC().Format(layout) + " UTC", "end"})
		if t1.Sub(t0) >= 2*time.Minute {
			mid := t0.Add(t1.Sub(t0) / 2)
			labels = append(labels, xLabel{f1(padLeft + plotW/2), mid.UTC().Format(layout), "middle"})
		}
	}
	return labels
}

// drawValueAxis draws the value axis of numbers from lo to hi: its grid,
// the regions where the metric's conditions pass, fail or are
// inconclusive (when sh finds them), and the thresholds ts where the
// conditions change; it returns the y of a value.
func (c *chart) drawValueAxis(row *Metric, m *analysis.Metric, sh *shading, lo, hi float64, shp shape, ts []threshold) func(float64) float64 {
	lo, hi = yRange(lo, hi)
	var bands []band
	shadeNote := ""
	if m != nil && m.Judge != nil {
		found, note := sh.shade(row.Name, lo, hi, shp, m.Judge)
		if found != nil {
			lo, hi, bands = found.lo, found.hi, found.bands
			shadeNote = shapeNote(shp)
		} else {
			shadeNote = note
		}
	}
	yOf := func(v float64) float64 { return padTop + plotH*(hi-v)/(hi-lo) }
	for _, g := range ticks(lo, hi) {
		c.Lines = append(c.Lines, gridLine{Y: f1(yOf(g)), Label: num(g)})
	}
	c.Regions = drawBands(bands, yOf)
	for _, t := range ts {
		if t.Value < lo || t.Value > hi || (bands != nil && !changesAt(bands, t.Value, (hi-lo)/RegionSamples)) {
			// Not where the compiled conditions change: the text
			// shown is not what they evaluate (redacted).
			continue
		}
		y := yOf(t.Value)
		labelY := y - 5
		if labelY < padTop+12 {
			labelY = y + 15
		}
		c.Thresholds = append(c.Thresholds, thresholdLine{Y: f1(y), LabelY: f1(labelY), Label: t.Label(),
			Value: strconv.FormatFloat(t.Value, 'g', -1, 64), Success: t.Success})
	}
	if shadeNote != "" {
		c.Notes = append(c.Notes, shadeNote)
	}
	return yOf
}

// legends lists the outcomes of the regions drawn and the phases of the
// points drawn, each once, in the order they first appear.
func (c *chart) legends() {
	words := map[string]string{"Successful": "passes", "Failed": "fails", "Inconclusive": "inconclusive", "Error": "condition errs"}
	seenOutcome := map[string]bool{}
	for _, r := range c.Regions {
		if !seenOutcome[r.Outcome] {
			seenOutcome[r.Outcome] = true
			c.Outcomes = append(c.Outcomes, legendItem{Class: "r-" + r.Outcome, Label: words[r.Outcome]})
		}
	}
	seen := map[string]bool{}
	for _, p := range c.Points {
		if !seen[p.Phase] {
			seen[p.Phase] = true
			c.Legend = append(c.Legend, legendItem{Class: "pt-" + p.Phase, Label: p.Phase})
		}
	}
}

// shapeNote says what the shading shows.
func shapeNote(s shape) string {
	if s.vector && s.n > 1 {
		return fmt.Sprintf("Shaded: the values at which the conditions pass, fail or are inconclusive, when all %d series have that value.", s.n)
	}
	return "Shaded: the values at which the conditions pass, fail or are inconclusive."
}

// changesAt reports whether the bands change outcome within tol of v.
func changesAt(bands []band, v, tol float64) bool {
	for k := 1; k < len(bands); k++ {
		if math.Abs(bands[k].from-v) <= tol*1.5 {
			return true
		}
	}
	return false
}

func sameMeasurement(a, b *api.Measurement) bool {
	return a.Phase == b.Phase && a.Value == b.Value && timeEq(a.StartedAt, b.StartedAt) && timeEq(a.FinishedAt, b.FinishedAt)
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func measuredAt(m *api.Measurement) time.Time {
	if m.FinishedAt != nil {
		return *m.FinishedAt
	}
	if m.StartedAt != nil {
		return *m.StartedAt
	}
	return time.Time{}
}

func timeRange(ms []api.Measurement, idx []int) (t0, t1 time.Time) {
	for _, i := range idx {
		at := measuredAt(&ms[i])
		if at.IsZero() {
			continue
		}
		if t0.IsZero() || at.Before(t0) {
			t0 = at
		}
		if at.After(t1) {
			t1 = at
		}
	}
	return t0, t1
}

// pointTitle is a measurement in a line: its number, phase, time and
// value (displayValue; near are the thresholds).
func pointTitle(n int, m *api.Measurement, near ...float64) string {
	s := fmt.Sprintf("#%d %s", n, m.Phase)
	if at := measuredAt(m); !at.IsZero() {
		s += " at " + at.UTC().Format(time.RFC3339)
	}
	s += ": " + displayValue(m.Value, near...)
	if m.Message != "" {
		s += " — " + m.Message
	}
	return s
}

// yRange pads the values' range: a chart of values that are never
// negative and reach down towards 0 (error rates, latencies) starts at 0;
// values far from 0 for their spread (success rates) are drawn close up.
func yRange(lo, hi float64) (float64, float64) {
	span := hi - lo
	if span == 0 {
		span = math.Abs(hi) * 0.2
		if span == 0 {
			span = 1
		}
		if lo >= 0 && lo-span/2 < 0 {
			return 0, hi + span/2
		}
		return lo - span/2, hi + span/2
	}
	if lo >= 0 && lo <= span {
		return 0, hi + span*0.15
	}
	return max(lo-span*0.15, min(lo, 0)), hi + span*0.15
}

// widen extends the range so that the nearest change of outcome beyond
// it, above or below, shows, when there is one within one more span: values all well below
// a threshold would otherwise be drawn on one colour with no threshold in
// sight. The change is found by evaluating the conditions, never by
// reading them.
func widen(lo, hi float64, s shape, j *judgeOf) (float64, float64) {
	const probes = 20
	span := hi - lo
	top := j.phase(s.sample(hi))
	for k := 1; k <= probes && j.sh.ctx.Err() == nil; k++ {
		v := hi + span*float64(k)/probes
		if j.phase(s.sample(v)) != top {
			hi = v + span*0.1
			break
		}
	}
	// Below, as far down as one more span, never below 0 for values that
	// are never negative.
	floor := math.Inf(-1)
	if lo >= 0 {
		floor = 0
	}
	bottom := j.phase(s.sample(lo))
	for k := 1; k <= probes && lo > floor && j.sh.ctx.Err() == nil; k++ {
		v := max(lo-span*float64(k)/probes, floor)
		if j.phase(s.sample(v)) != bottom {
			lo = max(v-span*0.1, floor)
			break
		}
	}
	return lo, hi
}

// regions evaluates the conditions at RegionSamples values from lo to hi
// and merges neighbours of the same outcome into one band each; none when
// j's ctx ends first.
func regions(lo, hi float64, s shape, j *judgeOf) []band {
	step := (hi - lo) / float64(RegionSamples)
	var out []band
	var curPhase api.Phase
	var start float64
	flush := func(end float64) {
		if curPhase == "" {
			return
		}
		out = append(out, band{from: start, to: end, outcome: string(curPhase)})
	}
	for k := range RegionSamples {
		if j.sh.ctx.Err() != nil {
			return nil
		}
		// Each sample stands for the band around it.
		a, b := lo+step*float64(k), lo+step*float64(k+1)
		p := j.phase(s.sample((a + b) / 2))
		if p != curPhase {
			flush(a)
			curPhase, start = p, a
		}
	}
	flush(hi)
	return out
}

// drawBands places the bands on a chart whose y axis is yOf.
func drawBands(bands []band, yOf func(float64) float64) []region {
	var out []region
	for _, b := range bands {
		top, bottom := yOf(b.to), yOf(b.from)
		out = append(out, region{Y: f1(top), H: f1(bottom - top), Outcome: b.outcome, Lo: num(b.from), Hi: num(b.to),
			From: strconv.FormatFloat(b.from, 'g', -1, 64), To: strconv.FormatFloat(b.to, 'g', -1, 64)})
	}
	return out
}

// ticks are about five round values from lo to hi.
func ticks(lo, hi float64) []float64 {
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return []float64{lo}
	}
	raw := span / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(out) < 12; v += step {
		out = append(out, v)
	}
	return out
}

// f1 is a coordinate, to a tenth of a unit.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// num is a value as a label.
func num(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
