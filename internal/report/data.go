package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/series"
)

// MaxSeriesDrawn is the most series of a metric's query the chart beneath
// its measurements draws (for a judge metric, of each side's query); the
// others are counted and named as not drawn.
const MaxSeriesDrawn = 8

// MaxFetching is how many reports may run their range queries at once
// in one process (FetchSeries, a Renderer's), so that however many reports
// are asked for at once, at most this many range queries are in flight for
// them; a report that finds no room within its SeriesBudget is drawn
// without its series, and says so. How often they may be sent is the
// Renderer's rate (RendererOptions.QueryRate).
const MaxFetching = 4

// MinSeriesWindow is the shortest span a metric's series are drawn over:
// an analysis shorter than it (one measurement, a quick `canaryd run`) has
// its query drawn over the MinSeriesWindow up to its end, so that what its
// measurements sampled shows in its context.
const MinSeriesWindow = 15 * time.Minute

// SeriesBudget bounds the time FetchSeries spends on the range queries of
// one report, all its metrics together; a metric whose query has not
// answered by then is drawn without its series, and says so.
const SeriesBudget = 10 * time.Second

// The drawing area of a series chart, in SVG user units: as wide as a
// measurement chart, less high.
const (
	seriesH      = 180.0
	seriesBottom = 30.0
	seriesPlotH  = seriesH - padTop - seriesBottom
)

// data is what FetchSeries found for one metric.
type data struct {
	set      series.Set
	err      error
	from, to time.Time
}

// FetchSeries runs the query of each metric whose source can run it over
// a range (a Prometheus metric's query; a judge metric's canary and
// baseline queries: series.Source) over the analysis' window: from its
// start to its end, or to now while it runs (for a judge metric, from the
// start of the first window it compared; MinSeriesWindow at least). The
// step gives each series at most MaxChartPoints points, at most
// MaxSeriesDrawn series are kept, and the answer's bytes are bounded by
// the source's datasource, so that the HTML report draws them beneath the
// metric's measurements: what each measurement sampled. The queries go one
// after another, through the metric's own source (its datasource, headers
// and credentials), within SeriesBudget in all, the queries of at most
// MaxFetching reports at once, and no more often than the Renderer's rate.
// With a Key, a metric's series are kept in the Renderer's cache: a
// finished analysis' for as long as the cache keeps them, its window being
// closed, a running one's for SeriesFreshness. A query that fails is a
// note under the metric's chart, never a failed report. It needs the plan
// (New): a report without one (NewFromAnalysis) draws no series.
func (r *Report) FetchSeries(ctx context.Context) {
	from, to, ok := r.window()
	if !ok {
		return
	}
	rd := r.renderer()
	final := orPending(r.Analysis.Phase).Completed()
	ctx, cancel := context.WithTimeout(ctx, SeriesBudget)
	defer cancel()
	var notRun error
	holding := false
	for i := range r.plan {
		m := &r.plan[i]
		src, ok := m.Source.(series.Source)
		if !ok {
			continue
		}
		key := ""
		if r.Key != "" {
			key = "series\x00" + r.Key + "\x00" + m.Name
			if v, ok := rd.cache.get(key); ok {
				if e := v.(*cachedSeries); e.final || rd.now().Before(e.expires) {
					rd.counted(QueryCached)
					if e.d != nil {
						r.setData(m.Name, e.d)
					}
					continue
				}
			}
		}
		if !holding && notRun == nil && ctx.Err() == nil {
			// A place among the MaxFetching, taken for the first query
			// to send and held for the others.
			select {
			case rd.fetching <- struct{}{}:
				holding = true
				defer func() { <-rd.fetching }()
			case <-ctx.Done():
				notRun = fmt.Errorf("not run: %d other reports were running their range queries", MaxFetching)
			}
		}
		from, to := judgeWindows(r.measurements(m.Name), from, to)
		if to.Sub(from) < MinSeriesWindow {
			from = to.Add(-MinSeriesWindow)
		}
		q := series.Query{Start: from, End: to, Step: series.StepFor(from, to, MaxChartPoints), MaxSeries: MaxSeriesDrawn, MaxPoints: MaxChartPoints}
		d := &data{from: from, to: to}
		outcome := QueryNotRun
		switch {
		case notRun != nil:
			d.err = notRun
		case ctx.Err() != nil:
			d.err = fmt.Errorf("not run: the report's %s for its range queries was spent", SeriesBudget)
		case rd.queries.Wait(ctx) != nil:
			// Wait refuses at once a wait beyond ctx's deadline.
			outcome = QueryLimited
			d.err = fmt.Errorf("not run: the reports' range queries are at their rate of %g a second", float64(rd.queries.Limit()))
		default:
			d.set, d.err = src.QuerySeries(ctx, q)
			outcome = QueryAnswered
			if d.err != nil {
				outcome = QueryFailed
			}
		}
		if errors.Is(d.err, series.ErrNoQuery) {
			// Nothing to query: remembered as nothing, and not counted.
			if key != "" {
				rd.cache.add(key, &cachedSeries{final: true}, 64)
			}
			continue
		}
		rd.counted(outcome)
		if key != "" && (outcome == QueryAnswered || outcome == QueryFailed) && ctx.Err() == nil {
			// A query's answer is kept; a query not sent is not. A
			// finished analysis' answer is kept until evicted, a
			// running one's, or a failure, for SeriesFreshness.
			rd.cache.add(key, &cachedSeries{d: d, final: final && d.err == nil, expires: rd.now().Add(SeriesFreshness)}, d.size())
		}
		r.setData(m.Name, d)
	}
}

// cachedSeries is a metric's series in a Renderer's cache; d is nil for a
// source with no query to run over a range.
type cachedSeries struct {
	d       *data
	final   bool
	expires time.Time
}

func (r *Report) setData(metric string, d *data) {
	if r.data == nil {
		r.data = map[string]*data{}
	}
	r.data[metric] = d
}

// size estimates the bytes d takes.
func (d *data) size() int64 {
	n := int64(128)
	for _, s := range d.set.Series {
		n += 64 + int64(len(s.Labels)+len(s.Side)) + int64(len(s.Points))*32
	}
	return n
}

// window is the analysis' span: from its start (or its first measurement)
// to its end, or now while it runs, or its newest measurement.
func (r *Report) window() (from, to time.Time, ok bool) {
	a := r.Analysis
	if a.StartedAt != nil {
		from = *a.StartedAt
	}
	var newest time.Time
	for i := range a.MetricResults {
		for j := range a.MetricResults[i].Measurements {
			ms := &a.MetricResults[i].Measurements[j]
			if ms.StartedAt != nil && (from.IsZero() || ms.StartedAt.Before(from)) {
				from = *ms.StartedAt
			}
			if at := measuredAt(ms); at.After(newest) {
				newest = at
			}
		}
	}
	switch {
	case a.CompletedAt != nil:
		to = *a.CompletedAt
	case !orPending(a.Phase).Completed():
		to = time.Now()
	default:
		to = newest
	}
	to = later(to, newest)
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return time.Time{}, time.Time{}, false
	}
	return from, to, true
}

// judgeWindows widens a judge metric's window to the windows its
// measurements compared (judge.MetadataCanaryWindow), which reach back a
// lookback before each: those are the data it judged.
func judgeWindows(ms []api.Measurement, from, to time.Time) (time.Time, time.Time) {
	for i := range ms {
		w := ms[i].Metadata[judge.MetadataCanaryWindow]
		a, b, ok := strings.Cut(w, "/")
		if !ok {
			continue
		}
		start, err1 := time.Parse(time.RFC3339, a)
		end, err2 := time.Parse(time.RFC3339, b)
		if err1 != nil || err2 != nil || end.Before(start) {
			continue
		}
		if start.Before(from) {
			from = start
		}
		to = later(to, end)
	}
	return from, to
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// seriesChart is a metric's query over the analysis' window.
type seriesChart struct {
	Metric  string
	Lines   []seriesLine
	Grid    []gridLine
	XLabels []xLabel
	// Marks are the measurements' times, coloured by phase.
	Marks  []mark
	Legend []legendItem
	Notes  []string
	// Failed is set when the query failed: the chart is a note.
	Failed string
}

type seriesLine struct {
	D, Class, Side, Title string
	N                     int // the points drawn
}

type mark struct {
	X, Phase string
}

// seriesPalette are the classes of a metric's own series, by index.
const seriesColours = MaxSeriesDrawn

func newSeriesChart(name string, d *data, ms []api.Measurement) *seriesChart {
	c := &seriesChart{Metric: name}
	if d.err != nil {
		c.Failed = "The query's series over the analysis could not be drawn: " + d.err.Error()
		if len(d.set.Series) == 0 {
			return c
		}
	}
	span := d.to.Sub(d.from)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return padLeft + plotW/2
		}
		return padLeft + inset + (plotW-2*inset)*float64(t.Sub(d.from))/float64(span)
	}
	lo, hi, found := seriesRange(d.set.Series)
	if !found {
		c.Notes = append(c.Notes, fmt.Sprintf("The query had no value from %s to %s.", d.from.UTC().Format(time.RFC3339), d.to.UTC().Format(time.RFC3339)))
	}
	lo, hi = yRange(lo, hi)
	yOf := func(v float64) float64 { return padTop + seriesPlotH*(hi-v)/(hi-lo) }
	if found {
		for _, g := range ticks(lo, hi) {
			c.Grid = append(c.Grid, gridLine{Y: f1(yOf(g)), Label: num(g)})
		}
	}
	layout := timeLayout(d.from, d.to)
	c.XLabels = []xLabel{{f1(padLeft + inset), d.from.UTC().Format(layout), "start"},
		{f1(padLeft + plotW - inset), d.to.UTC().Format(layout) + " UTC", "end"}}
	perSide := map[string]int{}
	for _, s := range d.set.Series {
		path, n := seriesPath(s.Points, d.from, d.to, xOf, yOf)
		class, label := seriesClass(s.Side, s.Labels, perSide[s.Side])
		perSide[s.Side]++
		c.Lines = append(c.Lines, seriesLine{D: path, Class: class, Side: s.Side, Title: label, N: n})
		c.Legend = append(c.Legend, legendItem{Class: class, Label: label})
	}
	if d.set.More > 0 {
		each := ""
		if perSide["canary"]+perSide["baseline"] > 0 {
			each = " of each query"
		}
		c.Notes = append(c.Notes, fmt.Sprintf("%d more series not drawn: at most %d are drawn%s.", d.set.More, MaxSeriesDrawn, each))
	}
	for i := range ms {
		at := measuredAt(&ms[i])
		if at.IsZero() || at.Before(d.from) || at.After(d.to) {
			continue
		}
		c.Marks = append(c.Marks, mark{X: f1(xOf(at)), Phase: string(ms[i].Phase)})
		if len(c.Marks) == MaxChartPoints {
			break
		}
	}
	c.Notes = append(c.Notes, fmt.Sprintf("The query over the analysis, one point every %s; the ticks below are the measurements' times.", d.set.Step))
	return c
}

// seriesRange is the range of the series' finite values; found is false
// when they have none.
func seriesRange(series []series.Series) (lo, hi float64, found bool) {
	for _, s := range series {
		for _, p := range s.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if !found {
				lo, hi, found = p.V, p.V, true
			}
			lo, hi = min(lo, p.V), max(hi, p.V)
		}
	}
	return lo, hi, found
}

// seriesPath is the SVG path of a series' finite points from from to to,
// broken where a point is missing, and how many points it draws; a lone
// point draws no line, so it gets a dot in its place.
func seriesPath(points []series.Point, from, to time.Time, xOf func(time.Time) float64, yOf func(float64) float64) (string, int) {
	var b strings.Builder
	pen := false
	n := 0
	for _, p := range points {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) || p.T.Before(from) || p.T.After(to) {
			pen = false
			continue
		}
		if pen {
			b.WriteString(" L")
		} else {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte('M')
		}
		b.WriteString(f1(xOf(p.T)) + "," + f1(yOf(p.V)))
		pen = true
		n++
	}
	if n == 1 {
		b.WriteString(" h0.01")
	}
	return b.String(), n
}

// seriesClass is the class and the label of a series: a compared side's
// own (canary, baseline), or else the k-th of the metric's colours and its
// labels.
func seriesClass(side, labels string, k int) (class, label string) {
	if side != "" {
		label = side
		if labels != "{}" {
			label += " " + labels
		}
		return "side-" + side, label
	}
	label = labels
	if label == "{}" {
		label = "(no labels)"
	}
	return fmt.Sprintf("s%d", k%seriesColours), label
}

// timeLayout is how times from t0 to t1 are labelled.
func timeLayout(t0, t1 time.Time) string {
	layout := "15:04:05"
	if t1.Sub(t0) < 10*time.Second {
		layout = "15:04:05.000"
	}
	if t0.UTC().YearDay() != t1.UTC().YearDay() || t1.Sub(t0) > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	return layout
}

// SeriesSVG renders the chart of one metric's query over the analysis
// (FetchSeries) alone, as the HTML report draws it beneath the metric's
// measurements: for a page that shows the same charts. Empty when the
// report has none for the metric.
func (r *Report) SeriesSVG(metric string) (template.HTML, error) {
	d := r.data[metric]
	if d == nil {
		return "", nil
	}
	var buf bytes.Buffer
	if err := htmlTemplate.ExecuteTemplate(&buf, "series", newSeriesChart(metric, d, r.measurements(metric))); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // #nosec: built by html/template
}

// SeriesData is what FetchSeries found for one metric: its query's series
// from From to To, or why there are none.
type SeriesData struct {
	From, To time.Time
	Set      series.Set
	Err      error
}

// SeriesOf is what FetchSeries found for metric; false when it found
// nothing (no plan, or a source without a query to run over a range).
func (r *Report) SeriesOf(metric string) (SeriesData, bool) {
	d := r.data[metric]
	if d == nil {
		return SeriesData{}, false
	}
	return SeriesData{From: d.from, To: d.to, Set: d.set, Err: d.err}, true
}
