package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/judge"
)

//go:embed report.html.tmpl
var htmlSource string

// ContentSecurityPolicy is the policy the HTML report carries in a meta
// element, and the server sends with it: nothing may be loaded from
// anywhere, no script may run; only the report's own inline styles and
// data: images apply.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"lower": func(s string) string { return strings.ToLower(s) },
}).Parse(htmlSource))

// NewSeries explains a backtest series. It leads with the first analysis
// that would have failed (Failed), else the first Inconclusive, else the
// first that could not be measured (Error: a query that failed or found no
// data), else the last: its report, and a reason that counts the Failed
// apart from the analyses that could not be measured, which say nothing
// of whether the template would have fired. The series' verdicts are kept
// for the HTML report's strip.
func NewSeries(results []analysis.BacktestResult, metrics []analysis.Metric) *Report {
	if len(results) == 0 {
		return New(api.Analysis{}, metrics)
	}
	pick := leadOf(results)
	r := New(results[pick].Analysis, metrics)
	r.Series = results
	r.Lead = pick
	r.Reason = seriesReason(results, pick, r.Reason)
	return r
}

// leadOf is the index of the analysis a series' report shows.
func leadOf(results []analysis.BacktestResult) int {
	for _, p := range []api.Phase{api.PhaseFailed, api.PhaseInconclusive, api.PhaseError} {
		for i := range results {
			if results[i].Analysis.Phase == p {
				return i
			}
		}
	}
	return len(results) - 1
}

// phaseCounts counts a series' analyses by phase.
func phaseCounts(results []analysis.BacktestResult) map[api.Phase]int {
	counts := map[api.Phase]int{}
	for i := range results {
		counts[orPending(results[i].Analysis.Phase)]++
	}
	return counts
}

// seriesWords say what a phase means of an analysis in a backtest.
func seriesWords(p api.Phase, n int) string {
	switch p {
	case api.PhaseFailed:
		return fmt.Sprintf("%d would have failed", n)
	case api.PhaseInconclusive:
		return fmt.Sprintf("%d inconclusive", n)
	case api.PhaseError:
		return fmt.Sprintf("%d could not be measured (Error)", n)
	case api.PhaseSuccessful:
		return fmt.Sprintf("%d passed", n)
	}
	return fmt.Sprintf("%d %s", n, strings.ToLower(string(p)))
}

// seriesReason leads with the analysis shown (pick) and its own reason
// (lead), then counts the others.
func seriesReason(results []analysis.BacktestResult, pick int, lead string) string {
	n := len(results)
	counts := phaseCounts(results)
	at := results[pick].Start.UTC().Format(time.RFC3339)
	s := fmt.Sprintf("Backtest of %d %s started from %s to %s: ", n, analyses(n),
		results[0].Start.UTC().Format(time.RFC3339), results[n-1].Start.UTC().Format(time.RFC3339))
	shown := orPending(results[pick].Analysis.Phase)
	switch shown {
	case api.PhaseFailed:
		s += fmt.Sprintf("%s, first the one started %s: %s", seriesWords(shown, counts[shown]), at, lead)
	case api.PhaseInconclusive, api.PhaseError:
		s += fmt.Sprintf("none would have failed; %s, first the one started %s: %s", seriesWords(shown, counts[shown]), at, lead)
	default:
		s += fmt.Sprintf("none would have failed. The last one, started %s: %s", at, lead)
	}
	var rest []string
	for _, p := range []api.Phase{api.PhaseFailed, api.PhaseInconclusive, api.PhaseError, api.PhaseSuccessful, api.PhaseRunning, api.PhasePending} {
		if counts[p] > 0 && p != shown {
			rest = append(rest, seriesWords(p, counts[p]))
		}
	}
	if len(rest) > 0 {
		s += " Besides, " + strings.Join(rest, ", ") + "."
	}
	return s
}

// HTML writes the report as one self-contained HTML document: the
// verdict and the reason, then per metric a chart of its measurements over
// the regions where its conditions pass, fail or are inconclusive, its
// counters beside their limits, its query with a link to the Prometheus
// graph and the request as curl, and its measurements. It loads nothing
// and runs no script (see ContentSecurityPolicy); every text in it is
// escaped by html/template.
func (r *Report) HTML(w io.Writer) error {
	sh := r.newShading()
	defer sh.done()
	var buf bytes.Buffer
	if err := htmlTemplate.ExecuteTemplate(&buf, "page", r.page(sh)); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ChartSVG renders the chart of one metric alone, as the HTML report draws
// it (an <svg> element with its own classes; the report's stylesheet
// colours it): for a page that shows the same charts. Empty when the
// metric has no measurement.
func (r *Report) ChartSVG(metric string) (template.HTML, error) {
	sh := r.newShading()
	defer sh.done()
	for i := range r.Metrics {
		if r.Metrics[i].Name != metric {
			continue
		}
		c := newChart(&r.Metrics[i], r.measurements(metric), r.planMetric(metric), sh)
		if c == nil {
			return "", nil
		}
		var buf bytes.Buffer
		if err := htmlTemplate.ExecuteTemplate(&buf, "chart", c); err != nil {
			return "", err
		}
		return template.HTML(buf.String()), nil // #nosec: built by html/template
	}
	return "", fmt.Errorf("no metric %q", metric)
}

// Stylesheet is the report's CSS, for a page that shows its charts.
func Stylesheet() template.CSS {
	var buf bytes.Buffer
	_ = htmlTemplate.ExecuteTemplate(&buf, "css", nil)
	return template.CSS(buf.String()) // #nosec: a constant of the template
}

type page struct {
	Title   string
	Phase   string
	Reason  string
	Facts   []fact
	Score   *api.Score
	Groups  []fact
	Strip   *strip
	Tiles   []tile
	Metrics []pageMetric
	CSP     string
	Made    string
}

type fact struct{ Name, Value string }

type pageMetric struct {
	Name, Phase      string
	DryRun           bool
	WouldHave        string
	Counters         []counter
	Next, Limit, Msg string
	Success, Failure string
	Chart            *chart
	Series           *seriesChart
	JudgeChart       *judgeChart
	Counts           *countCharts
	Queries          []fact
	Graph            string
	Curl             string
	CurlNote         string
	Judge            []judgeRow
	Rows             []measRow
	Thinned          string
	Unplanned        bool
}

type counter struct {
	Label, Value, Limit string
	Over                bool
}

type judgeRow struct {
	N                              int
	Time, Classification, Critical string
	Value, Reason                  string
}

type measRow struct {
	N                           int
	Time, Phase, Value, Message string
	// Raw is the value as the provider wrote it.
	Raw      string
	Decisive bool
}

type strip struct {
	Cells   []stripCell
	Keys    []legendItem
	Runs    []run
	From    string
	To      string
	Summary string
	Note    string
}

type stripCell struct {
	X, W, Phase, Title, Href string
	// Lead marks the cell of the analysis whose report follows.
	Lead bool
}

func (r *Report) page(sh *shading) page {
	a := r.Analysis
	p := page{Phase: string(orPending(a.Phase)), Reason: r.Reason, CSP: ContentSecurityPolicy, Score: a.Score,
		Made: time.Now().UTC().Format(time.RFC3339)}
	p.Title = "canaryd: " + p.Phase
	if a.Template != "" {
		p.Title += " — " + a.Template
	}
	if a.Template != "" {
		p.Facts = append(p.Facts, fact{"Template", a.Template})
	}
	if a.ID != "" {
		p.Facts = append(p.Facts, fact{"Analysis", a.ID})
	}
	if len(a.Args) > 0 {
		var args []string
		for k, v := range a.Args {
			args = append(args, k+"="+v)
		}
		slices.Sort(args)
		p.Facts = append(p.Facts, fact{"Arguments", strings.Join(args, " ")})
	}
	if a.StartedAt != nil {
		p.Facts = append(p.Facts, fact{"Started", a.StartedAt.UTC().Format(time.RFC3339)})
		if a.CompletedAt != nil {
			took := a.CompletedAt.Sub(*a.StartedAt)
			if took < time.Minute {
				took = took.Round(time.Millisecond)
			} else {
				took = took.Round(time.Second)
			}
			p.Facts = append(p.Facts, fact{"Took", took.String()})
		}
	}
	if a.Score != nil {
		var names []string
		for g := range a.Score.Groups {
			names = append(names, g)
		}
		sort.Strings(names)
		for _, g := range names {
			p.Groups = append(p.Groups, fact{g, num(a.Score.Groups[g])})
		}
	}
	if len(r.Series) > 0 {
		p.Strip = newStrip(r.Series, r.Lead, r.plan)
	}
	for i := range r.Metrics {
		p.Metrics = append(p.Metrics, r.pageMetric(sh, &r.Metrics[i]))
	}
	if len(r.Metrics) > 1 {
		for i := range r.Metrics {
			p.Tiles = append(p.Tiles, r.tile(&r.Metrics[i]))
		}
	}
	return p
}

// MaxTileDots is the most measurements a metric's tile shows, the newest.
const MaxTileDots = 30

// tile is a metric at a glance, in the grid that opens the report of an
// analysis of several metrics: its phase, a dot per measurement (the
// newest MaxTileDots) and the value that decided it, against its
// threshold.
type tile struct {
	Name, Phase, Value, Threshold string
	DryRun                        bool
	Dots                          []runValue
	More                          int
}

func (r *Report) tile(m *Metric) tile {
	t := tile{Name: m.Name, Phase: string(orPending(m.Phase)), DryRun: m.DryRun}
	ts := thresholdsOf(r.planMetric(m.Name))
	var labels []string
	var nearV []float64
	for _, th := range ts {
		nearV = append(nearV, th.Value)
		labels = append(labels, th.Label())
	}
	t.Threshold = strings.Join(labels, ", ")
	ms := r.measurements(m.Name)
	from := max(0, len(ms)-MaxTileDots)
	t.More = from
	for k := from; k < len(ms); k++ {
		t.Dots = append(t.Dots, runValue{Phase: string(ms[k].Phase), Title: pointTitle(k+1, &ms[k], nearV...)})
	}
	shown := m.Decisive
	if shown == nil {
		shown = m.Last
	}
	if shown != nil {
		t.Value = displayValue(shown.Value, nearV...)
	}
	return t
}

func (r *Report) measurements(name string) []api.Measurement {
	for i := range r.Analysis.MetricResults {
		if r.Analysis.MetricResults[i].Name == name {
			return r.Analysis.MetricResults[i].Measurements
		}
	}
	return nil
}

func (r *Report) result(name string) *api.MetricResult {
	for i := range r.Analysis.MetricResults {
		if r.Analysis.MetricResults[i].Name == name {
			return &r.Analysis.MetricResults[i]
		}
	}
	return nil
}

func (r *Report) planMetric(name string) *analysis.Metric {
	for i := range r.plan {
		if r.plan[i].Name == name {
			return &r.plan[i]
		}
	}
	return nil
}

func (r *Report) pageMetric(sh *shading, m *Metric) pageMetric {
	pm := pageMetric{Name: m.Name, Phase: string(orPending(m.Phase)), DryRun: m.DryRun, WouldHave: string(m.WouldHave),
		Next: m.Next, Limit: m.Limit, Msg: m.Message, Success: m.SuccessCondition, Failure: m.FailureCondition}
	target := "until stopped"
	if m.Target > 0 {
		target = fmt.Sprintf("of %d", m.Target)
	}
	pm.Counters = []counter{
		{Label: "Measured", Value: fmt.Sprint(m.Measured), Limit: target},
		{Label: "Successful", Value: fmt.Sprint(m.Successful)},
	}
	if m.Unplanned {
		pm.Unplanned = true
		pm.Counters[0].Limit = ""
		pm.Counters = append(pm.Counters,
			counter{Label: "Failed", Value: fmt.Sprint(m.Failed)},
			counter{Label: "Inconclusive", Value: fmt.Sprint(m.Inconclusive)},
			counter{Label: "Consecutive errors", Value: fmt.Sprint(m.ConsecutiveError)})
		return r.pageMetricRest(sh, m, pm)
	}
	if m.FailureLimit < 0 {
		pm.Counters = append(pm.Counters, counter{Label: "Failed", Value: fmt.Sprint(m.Failed), Limit: "no limit"})
	} else {
		pm.Counters = append(pm.Counters, counter{Label: "Failed", Value: fmt.Sprint(m.Failed), Limit: fmt.Sprintf("limit %d", m.FailureLimit), Over: m.Failed > m.FailureLimit})
	}
	pm.Counters = append(pm.Counters,
		counter{Label: "Inconclusive", Value: fmt.Sprint(m.Inconclusive), Limit: fmt.Sprintf("limit %d", m.InconclusiveLimit), Over: m.Inconclusive > m.InconclusiveLimit},
		counter{Label: "Consecutive errors", Value: fmt.Sprint(m.ConsecutiveError), Limit: fmt.Sprintf("limit %d", m.ConsecutiveErrorLimit), Over: m.ConsecutiveError > m.ConsecutiveErrorLimit})
	if m.Errors > m.ConsecutiveError {
		pm.Counters = append(pm.Counters, counter{Label: "Errors in all", Value: fmt.Sprint(m.Errors)})
	}
	if m.ConsecutiveSuccessLimit > 0 {
		pm.Counters = append(pm.Counters, counter{Label: "Consecutive successes", Value: fmt.Sprint(m.ConsecutiveSuccess), Limit: fmt.Sprintf("of %d", m.ConsecutiveSuccessLimit)})
	}

	return r.pageMetricRest(sh, m, pm)
}

// pageMetricRest draws a metric's chart and lists its query and
// measurements.
func (r *Report) pageMetricRest(sh *shading, m *Metric, pm pageMetric) pageMetric {
	ms := r.measurements(m.Name)
	pm.Chart = newChart(m, ms, r.planMetric(m.Name), sh)
	if d := r.data[m.Name]; d != nil {
		pm.Series = newSeriesChart(m.Name, d, ms)
	}
	pm.JudgeChart = newJudgeChart(m, ms)
	pm.Counts = newCountCharts(m, ms)

	// The query, its graph and its request, at the decisive measurement
	// (or the newest).
	res := r.result(m.Name)
	var at time.Time
	switch {
	case m.Decisive != nil:
		at = measuredAt(m.Decisive)
	case m.Last != nil:
		at = measuredAt(m.Last)
	}
	if res != nil {
		// What the metric's provider declares (Sources): its queries, a
		// link and the request.
		src := r.Sources[m.Name]
		for _, k := range src.Metadata {
			if v, ok := res.Metadata[k]; ok {
				pm.Queries = append(pm.Queries, fact{k, v})
			}
		}
		span := time.Hour
		if !m.Started.IsZero() && !at.IsZero() {
			span = at.Sub(m.Started)
		}
		if src.Link != nil {
			pm.Graph = src.Link(res.Metadata, at, span)
		}
		if src.Request != nil {
			pm.Curl, pm.CurlNote = src.Request(res.Metadata, at)
		}
	}

	// The measurements, thinned as the chart is, to MaxTableRows.
	decisive := -1
	for i := range ms {
		if m.Decisive != nil && sameMeasurement(&ms[i], m.Decisive) {
			decisive = i
		}
	}
	var near []float64
	for _, t := range thresholdsOf(r.planMetric(m.Name)) {
		near = append(near, t.Value)
	}
	idx := thin(len(ms), decisive, MaxTableRows)
	if len(idx) < len(ms) {
		pm.Thinned = fmt.Sprintf("%d of %d measurements listed, evenly spaced (the decisive one kept).", len(idx), len(ms))
	}
	for _, i := range idx {
		x := &ms[i]
		row := measRow{N: i + 1, Phase: string(x.Phase), Value: displayValue(x.Value, near...), Raw: x.Value, Message: x.Message, Decisive: i == decisive}
		if t := measuredAt(x); !t.IsZero() {
			row.Time = t.UTC().Format(time.RFC3339)
		}
		pm.Rows = append(pm.Rows, row)
		if c, ok := x.Metadata[analysis.MetadataClassification]; ok {
			pm.Judge = append(pm.Judge, judgeRow{N: i + 1, Time: row.Time, Classification: c,
				Critical: x.Metadata[analysis.MetadataCritical], Value: row.Value, Reason: x.Metadata[judge.MetadataReason]})
		}
	}
	return pm
}

func analyses(n int) string {
	if n == 1 {
		return "analysis"
	}
	return "analyses"
}

// worse orders phases by what they say of a template in a backtest:
// Failed (it would have fired) before Inconclusive, before Error (it could
// not be measured, which says nothing of the canary), before Successful.
func worse(a, b api.Phase) bool {
	rank := func(p api.Phase) int {
		switch p {
		case api.PhaseFailed:
			return 4
		case api.PhaseInconclusive:
			return 3
		case api.PhaseError:
			return 2
		case api.PhaseSuccessful:
			return 1
		}
		return 0
	}
	return rank(a) > rank(b)
}

// newStrip draws a series' verdicts, a cell per analysis (or per group of
// them, showing its worst), each a link to the analysis it stands for:
// its start, verdict, reason and measurements (runs), shown when the cell
// is clicked. lead is the analysis whose report follows the strip.
func newStrip(results []analysis.BacktestResult, lead int, metrics []analysis.Metric) *strip {
	n := len(results)
	cells := min(n, MaxStripCells)
	s := &strip{From: results[0].Start.UTC().Format(time.RFC3339), To: results[n-1].Start.UTC().Format(time.RFC3339)}
	counts := phaseCounts(results)
	var parts []string
	for _, p := range []api.Phase{api.PhaseFailed, api.PhaseInconclusive, api.PhaseError, api.PhaseSuccessful, api.PhaseRunning, api.PhasePending} {
		if counts[p] > 0 {
			parts = append(parts, seriesWords(p, counts[p]))
			s.Keys = append(s.Keys, legendItem{Class: "c-" + string(p), Label: seriesWords(p, counts[p])})
		}
	}
	s.Summary = fmt.Sprintf("%d %s: %s.", n, analyses(n), strings.Join(parts, ", "))
	if cells < n {
		s.Note = fmt.Sprintf("Grouped: %d analyses in %d cells, each showing the worst verdict of its group and opening the first analysis of that verdict.", n, cells)
	}
	w := (chartW - padLeft - padRight) / float64(cells)
	for c := range cells {
		from, to := c*n/cells, (c+1)*n/cells
		pick := from
		for i := from; i < to; i++ {
			if worse(results[i].Analysis.Phase, results[pick].Analysis.Phase) {
				pick = i
			}
		}
		if lead >= from && lead < to && results[lead].Analysis.Phase == results[pick].Analysis.Phase {
			pick = lead
		}
		worst := orPending(results[pick].Analysis.Phase)
		title := results[from].Start.UTC().Format(time.RFC3339) + ": " + string(worst)
		if to-from > 1 {
			title = fmt.Sprintf("%d analyses from %s: worst %s", to-from, results[from].Start.UTC().Format(time.RFC3339), worst)
		} else if msg := results[from].Analysis.Message; msg != "" {
			title += " — " + msg
		}
		id := fmt.Sprintf("run-%d", pick+1)
		s.Cells = append(s.Cells, stripCell{X: f1(padLeft + w*float64(c)), W: f1(max(w-1, 0.5)), Phase: string(worst),
			Title: title + ". Click to open it.", Href: "#" + id, Lead: pick == lead})
		s.Runs = append(s.Runs, newRun(id, pick, results[pick], pick == lead, metrics))
	}
	return s
}

// MaxRunMeasurements is the most measurements of a metric a backtest
// analysis opened from the strip lists; its report's own metric shows all.
const MaxRunMeasurements = 30

// run is one analysis of a backtest series, as a cell of the strip opens
// it.
type run struct {
	ID, Start, Phase, Reason string
	N                        int
	Lead                     bool
	Metrics                  []runMetric
}

type runMetric struct {
	Name, Phase string
	Values      []runValue
	More        int
}

type runValue struct {
	Phase, Value, Title string
}

func newRun(id string, i int, res analysis.BacktestResult, lead bool, metrics []analysis.Metric) run {
	rep := New(res.Analysis, metrics)
	if len(metrics) == 0 {
		rep = NewFromAnalysis(res.Analysis)
	}
	out := run{ID: id, N: i + 1, Start: res.Start.UTC().Format(time.RFC3339), Phase: string(orPending(res.Analysis.Phase)),
		Reason: rep.Reason, Lead: lead}
	for _, mr := range res.Analysis.MetricResults {
		rm := runMetric{Name: mr.Name, Phase: string(orPending(mr.Phase))}
		var near []float64
		if pm := rep.planMetric(mr.Name); pm != nil {
			for _, t := range thresholdsOf(pm) {
				near = append(near, t.Value)
			}
		}
		for k, ms := range mr.Measurements {
			if k == MaxRunMeasurements {
				rm.More = len(mr.Measurements) - k
				break
			}
			rm.Values = append(rm.Values, runValue{Phase: string(ms.Phase), Value: displayValue(ms.Value, near...), Title: pointTitle(k+1, &ms)})
		}
		out.Metrics = append(out.Metrics, rm)
	}
	return out
}
