package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
)

func writeHTML(t *testing.T, r *report.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.HTML(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// section is the HTML of one metric's section of a report.
func section(t *testing.T, doc, metric string) string {
	t.Helper()
	start := strings.Index(doc, `<section class="metric" id="metric-`+html.EscapeString(metric)+`"`)
	if start < 0 {
		t.Fatalf("no section for metric %q", metric)
	}
	end := strings.Index(doc[start:], "</section>")
	return doc[start : start+end]
}

var (
	circleRE = regexp.MustCompile(`<circle class="pt pt-(\w+)"`)
	regionRE = regexp.MustCompile(`<rect class="region r-(\w+)" x="[^"]*" y="([^"]*)" width="[^"]*" height="([^"]*)" data-outcome="(\w+)" data-from="([^"]*)" data-to="([^"]*)"`)
)

type band struct {
	outcome  api.Phase
	from, to float64
	y, h     float64
}

func bands(t *testing.T, sec string) []band {
	t.Helper()
	var out []band
	for _, m := range regionRE.FindAllStringSubmatch(sec, -1) {
		if m[1] != m[4] {
			t.Errorf("region class %s and outcome %s differ", m[1], m[4])
		}
		b := band{outcome: api.Phase(m[4])}
		var err error
		for _, f := range []struct {
			s string
			v *float64
		}{{m[2], &b.y}, {m[3], &b.h}, {m[5], &b.from}, {m[6], &b.to}} {
			if *f.v, err = strconv.ParseFloat(f.s, 64); err != nil {
				t.Fatalf("region %q: %v", m[0], err)
			}
		}
		out = append(out, b)
	}
	return out
}

// TestHTMLChart checks each chart of the report against the analysis it
// draws: one point per measurement, coloured by its phase, and shaded
// bands that the compiled conditions agree with at the middle of each,
// for conditions of any form, not only a threshold.
func TestHTMLChart(t *testing.T) {
	type shaded struct {
		name, success, failure string
		values                 []float64
		scalar                 bool
		outcomes               []api.Phase // the bands, bottom up
	}
	for _, c := range []shaded{
		{name: "threshold", success: "result[0] < 0.05", values: []float64{0.01, 0.02, 0.09, 0.01},
			outcomes: []api.Phase{api.PhaseSuccessful, api.PhaseFailed}},
		{name: "both", success: "result[0] < 0.01", failure: "result[0] > 0.05", values: []float64{0.005, 0.02, 0.03},
			outcomes: []api.Phase{api.PhaseSuccessful, api.PhaseInconclusive, api.PhaseFailed}},
		{name: "band", success: "result[0] < 0.2 || result[0] > 0.8", values: []float64{0.1, 0.5, 0.9},
			outcomes: []api.Phase{api.PhaseSuccessful, api.PhaseFailed, api.PhaseSuccessful}},
		{name: "scalar", success: "result >= 10", values: []float64{12, 11, 15}, scalar: true,
			outcomes: []api.Phase{api.PhaseFailed, api.PhaseSuccessful}},
		{name: "close-up", success: "result[0] >= 0.99", values: []float64{0.995, 0.995, 0.98},
			outcomes: []api.Phase{api.PhaseFailed, api.PhaseSuccessful}},
		{name: "errs", success: "result[1] > 0", values: []float64{1, 2},
			outcomes: []api.Phase{api.PhaseError}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := metric(t, c.name, c.success, c.failure, int32(len(c.values)), c.values...)
			m.FailureLimit = 10
			m.InconclusiveLimit = 10
			m.ConsecutiveErrorLimit = 10
			if c.scalar {
				values := c.values
				m.Source = analysis.SourceFunc(func(_ context.Context, at time.Time) analysis.Observation {
					v := values[min(int(at.Sub(start)/time.Minute), len(values)-1)]
					return analysis.Observation{Value: v, Display: strconv.FormatFloat(v, 'g', -1, 64)}
				})
			}
			a := analysis.Backtest(context.Background(), &analysis.Plan{Metrics: []analysis.Metric{m}}, start, start.Add(time.Hour), analysis.Options{ID: "a"})
			doc := writeHTML(t, report.New(a, []analysis.Metric{m}))
			sec := section(t, doc, c.name)

			// One point per measurement, of its phase.
			ms := a.MetricResults[0].Measurements
			points := circleRE.FindAllStringSubmatch(sec, -1)
			if len(points) != len(ms) || len(ms) == 0 {
				t.Fatalf("%d points for %d measurements", len(points), len(ms))
			}
			for i, p := range points {
				if api.Phase(p[1]) != ms[i].Phase {
					t.Errorf("point %d is %s, its measurement %s", i+1, p[1], ms[i].Phase)
				}
			}

			// The bands, bottom up, each agreeing with the conditions.
			conds, problems := condition.Compile(c.success, c.failure)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			bs := bands(t, sec)
			var got []api.Phase
			for i, b := range bs {
				got = append(got, b.outcome)
				mid := (b.from + b.to) / 2
				var sample any = []float64{mid}
				if c.scalar {
					sample = mid
				}
				if p, _ := conds.Judge(sample); p != b.outcome {
					t.Errorf("band %d (%g to %g) is shaded %s; the conditions give %s at %g", i, b.from, b.to, b.outcome, p, mid)
				}
				if b.to <= b.from || b.h <= 0 {
					t.Errorf("band %d is empty: %+v", i, b)
				}
				if i > 0 && bs[i-1].to != b.from {
					t.Errorf("band %d starts at %g, the one below ends at %g", i, b.from, bs[i-1].to)
				}
				if i > 0 && bs[i-1].y <= b.y {
					t.Errorf("band %d is drawn below the one under it: y %g, then %g", i, bs[i-1].y, b.y)
				}
			}
			if c.name == "close-up" && len(bs) > 0 && bs[0].from < 0.9 {
				t.Errorf("values from 0.98 to 0.995 are charted from %g", bs[0].from)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.outcomes) {
				t.Errorf("bands bottom up: %v, want %v", got, c.outcomes)
			}
			if n := strings.Count(sec, `class="decisive"`); n != 1 {
				t.Errorf("%d decisive marks, want 1", n)
			}
		})
	}
}

// TestHTMLNoValue checks that measurements with nothing to draw (errors,
// empty results) still get their point, in the lane below the chart.
func TestHTMLNoValue(t *testing.T) {
	c := cases(t)["error"]
	doc := writeHTML(t, report.New(c.a, c.metrics))
	sec := section(t, doc, "error-rate")
	n := len(c.a.MetricResults[0].Measurements)
	if got := strings.Count(sec, `<circle class="pt pt-Error"`); got != n || n == 0 {
		t.Errorf("%d Error points for %d measurements", got, n)
	}
	if !strings.Contains(sec, "no value") || !strings.Contains(sec, "not numbers") {
		t.Error("the lane of measurements without a value is not labelled")
	}
}

// TestHTMLEscaping feeds hostile text into every field a report shows:
// none of it may become markup.
func TestHTMLEscaping(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	name := "m" + evil
	m := metric(t, name, "result[0] < 0.05", "", 2, 0.01, 0.09)
	m.Metadata = map[string]string{prometheus.ResolvedPrometheusQuery: `up{job="` + evil + `"}`}
	inner := m.Source
	m.Source = analysis.SourceFunc(func(ctx context.Context, at time.Time) analysis.Observation {
		o := inner.Measure(ctx, at)
		o.Metadata = map[string]string{analysis.MetadataClassification: evil}
		return o
	})
	a := analysis.Backtest(context.Background(), &analysis.Plan{Metrics: []analysis.Metric{m}}, start, start.Add(time.Hour),
		analysis.Options{ID: "id" + evil, Template: "t" + evil, Args: map[string]string{"a" + evil: "v" + evil}})
	a.Message = evil
	a.MetricResults[0].Message = evil
	a.MetricResults[0].Measurements[0].Value = evil
	a.MetricResults[0].Measurements[1].Message = evil
	r := report.New(a, []analysis.Metric{m})
	config, _ := json.Marshal(&prometheus.Metric{Address: "http://prom.example:9090", Query: "up", Headers: []prometheus.Header{{Key: "X" + evil, Value: evil}}})
	s := &spec.Spec{Metrics: []spec.Metric{{Name: name, Provider: spec.MetricProvider{Prometheus: config}}}}
	r.Sources = report.SourcesOf(s, nil, promAndJudge(buildsNothing), func(address string) string { return address })
	doc := writeHTML(t, r)
	for _, bad := range []string{"<script", "<img", "<SCRIPT", `"'&`} {
		if strings.Contains(doc, bad) {
			i := strings.Index(doc, bad)
			t.Errorf("the report holds %q: …%s…", bad, doc[max(0, i-80):min(len(doc), i+80)])
		}
	}
	if !strings.Contains(doc, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile text is not shown, escaped")
	}
	// The link to the graph is still a link to the datasource.
	link := regexp.MustCompile(`href="([^"]*)"`).FindStringSubmatch(doc)
	if link == nil || !strings.HasPrefix(html.UnescapeString(link[1]), "http://prom.example:9090/graph?") ||
		!strings.Contains(link[1], "g0.expr=up%7Bjob%3D%22%3Cscript%3E") {
		t.Errorf("no graph link, or an unencoded one: %q", link)
	}
}

// TestHTMLThinned checks that a long analysis is drawn with at most
// MaxChartPoints points, the decisive measurement among them, and that the
// chart says so.
func TestHTMLThinned(t *testing.T) {
	const n = 1000
	values := make([]float64, n)
	for i := range values {
		values[i] = 0.01 + float64(i%7)/1000
	}
	values[n-1] = 0.5 // the decisive one, last
	m := metric(t, "long", "result[0] < 0.05", "", n, values...)
	m.Retention = n
	a := analysis.Backtest(context.Background(), &analysis.Plan{Metrics: []analysis.Metric{m}}, start, start.Add(n*time.Hour), analysis.Options{ID: "a"})
	if got := len(a.MetricResults[0].Measurements); got != n {
		t.Fatalf("the analysis kept %d measurements, want %d", got, n)
	}
	doc := writeHTML(t, report.New(a, []analysis.Metric{m}))
	sec := section(t, doc, "long")
	if got := len(circleRE.FindAllString(sec, -1)); got != report.MaxChartPoints {
		t.Errorf("%d points drawn, want %d", got, report.MaxChartPoints)
	}
	if !strings.Contains(sec, fmt.Sprintf("Thinned: %d of %d measurements drawn", report.MaxChartPoints, n)) {
		t.Error("the chart does not say it was thinned")
	}
	if !strings.Contains(sec, `<circle class="pt pt-Failed"`) || strings.Count(sec, `class="decisive"`) != 1 {
		t.Error("the decisive (Failed) measurement is not drawn and marked")
	}
	if !strings.Contains(sec, fmt.Sprintf("%d of %d measurements listed", report.MaxTableRows, n)) {
		t.Error("the table does not say it was thinned")
	}
	if got := strings.Count(sec, "<tr"); got != report.MaxTableRows+1 {
		t.Errorf("%d table rows (with the heading), want %d", got, report.MaxTableRows+1)
	}
	if len(doc) > 150<<10 {
		t.Errorf("the report of %d measurements is %d KiB", n, len(doc)>>10)
	}
}

// TestHTMLSelfContained checks that the report asks for nothing from
// anywhere: no script, no external reference, and a policy that forbids
// both.
func TestHTMLSelfContained(t *testing.T) {
	for name, c := range cases(t) {
		doc := writeHTML(t, report.New(c.a, c.metrics))
		if !strings.Contains(doc, `content="`+report.ContentSecurityPolicy+`"`) {
			t.Errorf("%s: no Content-Security-Policy %q", name, report.ContentSecurityPolicy)
		}
		for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(", "src=", `href="http`} {
			if strings.Contains(doc, bad) {
				t.Errorf("%s: the report holds %q", name, bad)
			}
		}
		if !strings.Contains(doc, html.EscapeString(report.New(c.a, c.metrics).Reason)) {
			t.Errorf("%s: the reason is not at the top", name)
		}
	}
}

// TestHTMLDryRun checks that a dry-run metric that failed is marked as
// one that would have failed.
func TestHTMLDryRun(t *testing.T) {
	c := cases(t)["successful"]
	sec := section(t, writeHTML(t, report.New(c.a, c.metrics)), "saturation")
	if !strings.Contains(sec, "would have failed") || !strings.Contains(sec, "dry-run") {
		t.Errorf("the dry-run metric is not marked:\n%s", sec)
	}
}

// TestHTMLSeries checks the strip of a backtest series: a cell per
// analysis, coloured by its verdict, grouped beyond MaxStripCells.
func TestHTMLSeries(t *testing.T) {
	values := make([]float64, 120)
	for i := range values {
		values[i] = 0.01
		if i >= 60 && i < 70 {
			values[i] = 0.2
		}
	}
	m := metric(t, "error-rate", "result[0] < 0.05", "", 3, values...)
	plan := &analysis.Plan{Metrics: []analysis.Metric{m}}
	results := analysis.BacktestSeries(context.Background(), plan, start, start.Add(2*time.Hour), 10*time.Minute, analysis.Options{ID: "b"})
	r := report.NewSeries(results, plan.Metrics)
	doc := writeHTML(t, r)
	cellRE := regexp.MustCompile(`<rect class="cell c-(\w+)[ "]`)
	cells := cellRE.FindAllStringSubmatch(doc, -1)
	if len(cells) != len(results) {
		t.Fatalf("%d cells for %d analyses", len(cells), len(results))
	}
	fired := 0
	for i, c := range cells {
		if api.Phase(c[1]) != results[i].Analysis.Phase {
			t.Errorf("cell %d is %s, its analysis %s", i, c[1], results[i].Analysis.Phase)
		}
		if c[1] == string(api.PhaseFailed) {
			fired++
		}
	}
	if fired == 0 || !strings.Contains(r.Reason, fmt.Sprintf("%d would have failed", fired)) {
		t.Errorf("%d fired; reason %q", fired, r.Reason)
	}
	if r.Analysis.Phase != api.PhaseFailed {
		t.Errorf("the series' report is of a %s analysis, want the first that failed", r.Analysis.Phase)
	}

	// A long series is grouped, each cell its group's worst verdict.
	long := make([]analysis.BacktestResult, 1000)
	for i := range long {
		long[i] = analysis.BacktestResult{Start: start.Add(time.Duration(i) * time.Minute), Analysis: api.Analysis{Phase: api.PhaseSuccessful}}
	}
	long[500].Analysis.Phase = api.PhaseFailed
	doc = writeHTML(t, report.NewSeries(long, plan.Metrics))
	cells = cellRE.FindAllStringSubmatch(doc, -1)
	if len(cells) != report.MaxStripCells {
		t.Errorf("%d cells for 1000 analyses, want %d", len(cells), report.MaxStripCells)
	}
	if n := strings.Count(doc, `<rect class="cell c-Failed`); n != 1 {
		t.Errorf("%d Failed cells, want the one holding the failed analysis", n)
	}
	if !strings.Contains(doc, "Grouped: 1000 analyses in") {
		t.Error("the strip does not say it was grouped")
	}
}

// TestHTMLJudge checks what a judge metric's measurements show: the
// classification, the critical flag and the judge's reason.
func TestHTMLJudge(t *testing.T) {
	at := start.Add(time.Minute)
	a := api.Analysis{ID: "j", Phase: api.PhaseFailed, MetricResults: []api.MetricResult{{
		Name: "latency", Phase: api.PhaseFailed, Count: 1, Failed: 1,
		Measurements: []api.Measurement{{Phase: api.PhaseFailed, StartedAt: &at, FinishedAt: &at,
			Value: "High (p=3.1e-21, shift=+29.7, ratio=1.30)",
			Metadata: map[string]string{analysis.MetadataClassification: "High", analysis.MetadataCritical: "true",
				"reason": "the canary is higher than the baseline"}}},
	}}, Score: &api.Score{Score: 0, Verdict: "Fail", Pass: 95, Marginal: 75, Groups: map[string]float64{"latency": 0}, Reason: "0 of 1 metrics passed"}}
	doc := writeHTML(t, report.New(a, []analysis.Metric{{Name: "latency", FailureLimit: 0, Compared: true}}))
	sec := html.UnescapeString(section(t, doc, "latency"))
	for _, want := range []string{`class="cls cls-High">High</td>`, "<td>true</td>", "the canary is higher than the baseline", "shift=+29.7"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the judge's section does not show %q", want)
		}
	}
	if !strings.Contains(doc, "Score 0 — Fail") {
		t.Error("the score is not shown")
	}
	if n := len(circleRE.FindAllString(sec, -1)); n != 1 {
		t.Errorf("%d points for 1 measurement", n)
	}
}

// TestSources checks what a report shows of how a metric was queried: the
// datasource without its credentials, and a curl with every credential
// as a placeholder.
func TestSources(t *testing.T) {
	timeout := int64(20)
	config, _ := json.Marshal(&prometheus.Metric{
		Address: "https://user:hunter2@prom.example:9090/prometheus/?token=abc",
		Query:   "sum(rate(x[5m]))", Timeout: &timeout,
		Headers:        []prometheus.Header{{Key: "Authorization", Value: "Bearer s3cret-token"}, {Key: "X-Scope-OrgID", Value: "tenant-" + "opensesame"}},
		Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "u", Password: "hunter2"}},
	})
	s := &spec.Spec{Metrics: []spec.Metric{{Name: "q", Provider: spec.MetricProvider{Prometheus: config}}}}
	srcs := report.SourcesOf(s, map[string]string{"api-token": "opensesame", "service": "checkout"}, promAndJudge(buildsNothing), func(address string) string { return address })
	at := start.Add(time.Minute)
	a := api.Analysis{Phase: api.PhaseSuccessful, MetricResults: []api.MetricResult{{Name: "q", Phase: api.PhaseSuccessful, Count: 1, Successful: 1,
		Metadata:     map[string]string{prometheus.ResolvedPrometheusQuery: "sum(rate(x[5m]))"},
		Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, StartedAt: &at, FinishedAt: &at, Value: "[1]"}}}}}
	r := report.New(a, []analysis.Metric{{Name: "q"}})
	r.Sources = srcs
	doc := html.UnescapeString(writeHTML(t, r))
	for _, secret := range []string{"hunter2", "s3cret-token", "opensesame", "token=abc", "user:"} {
		if strings.Contains(doc, secret) {
			t.Errorf("the report shows %q", secret)
		}
	}
	for _, want := range []string{
		"curl -sG 'https://prom.example:9090/prometheus/api/v1/query'",
		"--data-urlencode 'query=sum(rate(x[5m]))'",
		"--data-urlencode 'time=2026-11-23T12:01:00Z'",
		"--data-urlencode 'timeout=20s'",
		"-H 'Authorization: REDACTED'",
		"-H 'X-Scope-OrgID: tenant-REDACTED'",
		"-u 'REDACTED:REDACTED'",
		`href="https://prom.example:9090/prometheus/graph?g0.end_input=2026-11-23+12%3A01%3A00&`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report does not show %q", want)
		}
	}

	// An unknown datasource: no link, and the curl names the variable.
	r.Sources = report.SourcesOf(s, nil, promAndJudge(buildsNothing), func(string) string { return "" })
	doc = html.UnescapeString(writeHTML(t, r))
	if strings.Contains(doc, "/graph?") || !strings.Contains(doc, `curl -sG "$PROMETHEUS_URL/api/v1/query"`) {
		t.Error("a report of an unknown datasource links to a graph or names no $PROMETHEUS_URL")
	}
}

// TestChartSVG checks the chart a page can take alone.
func TestChartSVG(t *testing.T) {
	c := cases(t)["failed"]
	r := report.New(c.a, c.metrics)
	svg, err := r.ChartSVG("error-rate")
	if err != nil || !strings.HasPrefix(string(svg), `<figure class="chart">`) || strings.Count(string(svg), "<circle") != 3 {
		t.Errorf("ChartSVG: %v\n%s", err, svg)
	}
	if _, err := r.ChartSVG("nope"); err == nil {
		t.Error("ChartSVG of a metric the report does not have")
	}
	if css := report.Stylesheet(); !strings.Contains(string(css), ".pt-Failed") {
		t.Error("the stylesheet lacks the points' classes")
	}
}

// TestHTMLRunning checks the report of an analysis still running: its
// phase, and what would settle each metric.
func TestHTMLRunning(t *testing.T) {
	m := metric(t, "error-rate", "result[0] < 0.05", "", 10, 0.01)
	m.FailureLimit = 2
	at := start.Add(time.Minute)
	res := api.MetricResult{Name: "error-rate", Phase: api.PhaseRunning, Count: 1, Successful: 1,
		Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, StartedAt: &at, FinishedAt: &at, Value: "[0.01]"}}}
	doc := html.UnescapeString(writeHTML(t, report.New(api.Analysis{Phase: api.PhaseRunning, MetricResults: []api.MetricResult{res}}, []analysis.Metric{m})))
	for _, want := range []string{`id="verdict">Running<`, "Next: 3 more failed measurements → Failed", "Running: 0 of 1 metrics complete after 1 measurement."} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report of a running analysis does not say %q", want)
		}
	}
}

// stuckJudge is a condition that does not finish until the test does.
type stuckJudge struct{ done <-chan struct{} }

func (j stuckJudge) Judge(any) (api.Phase, error) {
	<-j.done
	return api.PhaseError, errors.New("stuck")
}

func (j stuckJudge) JudgeContext(ctx context.Context, _ any) (api.Phase, error) {
	<-ctx.Done()
	return api.PhaseError, ctx.Err()
}

func newStuckJudge(t *testing.T) stuckJudge {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return stuckJudge{done: done}
}

// TestHTMLRegionBudget checks that conditions that take too long cost a
// report RegionBudget at most: the chart is drawn without its bands, and
// says so.
func TestHTMLRegionBudget(t *testing.T) {
	c := cases(t)["failed"]
	metrics := append([]analysis.Metric(nil), c.metrics...)
	for i := range metrics {
		metrics[i].Judge = newStuckJudge(t)
	}
	doc := writeHTML(t, report.New(c.a, metrics))
	if strings.Contains(doc, `class="region `) {
		t.Error("bands drawn from conditions that never answered")
	}
	if n := strings.Count(doc, "took too long to evaluate"); n != len(metrics) {
		t.Errorf("%d charts say their conditions took too long, want %d", n, len(metrics))
	}
	if n := strings.Count(doc, `<circle class="pt `); n == 0 {
		t.Error("no points drawn")
	}
}

// TestNewFromAnalysis checks the report of an analysis without its plan:
// its metrics from its results, counters without limits, no bands, and
// the reason from the resource.
func TestNewFromAnalysis(t *testing.T) {
	c := cases(t)["failed"]
	r := report.NewFromAnalysis(c.a)
	if len(r.Metrics) != len(c.a.MetricResults) {
		t.Fatalf("%d metrics for %d results", len(r.Metrics), len(c.a.MetricResults))
	}
	if !strings.HasPrefix(r.Reason, `Failed: metric "error-rate" measured [0.09]`) || strings.Contains(r.Reason, "Condition") {
		t.Errorf("reason %q: want the decisive measurement, and no condition (none is at hand)", r.Reason)
	}
	doc := writeHTML(t, r)
	sec := section(t, doc, "error-rate")
	if strings.Contains(sec, `class="limit"`) || strings.Contains(sec, `class="region `) || strings.Contains(sec, "Next:") {
		t.Errorf("a metric without its plan shows limits, bands or what would settle it:\n%s", sec)
	}
	if got, want := len(circleRE.FindAllString(sec, -1)), len(c.a.MetricResults[0].Measurements); got != want {
		t.Errorf("%d points for %d measurements", got, want)
	}
}

// TestHTMLSeriesLeadsWithFailed checks a series that could not be measured
// at first (no data: Error) and then fired: the report leads with the
// first Failed analysis, its sentence and its report; the reason counts
// the analyses that would have failed apart from those that could not be
// measured; and every cell links to the analysis it stands for, which the
// report holds (its start, verdict and sentence).
func TestHTMLSeriesLeadsWithFailed(t *testing.T) {
	nan := math.NaN()
	values := make([]float64, 360)
	for i := range values {
		switch {
		case i < 60:
			values[i] = nan
		case i >= 200 && i < 230:
			values[i] = 0.2
		default:
			values[i] = 0.01
		}
	}
	m := metric(t, "error-rate", "result[0] < 0.05", "", 3, values...)
	plan := &analysis.Plan{Metrics: []analysis.Metric{m}}
	results := analysis.BacktestSeries(context.Background(), plan, start, start.Add(6*time.Hour), 10*time.Minute, analysis.Options{ID: "b"})
	counts := map[api.Phase]int{}
	firstFailed := -1
	for i, res := range results {
		counts[res.Analysis.Phase]++
		if res.Analysis.Phase == api.PhaseFailed && firstFailed < 0 {
			firstFailed = i
		}
	}
	if counts[api.PhaseError] == 0 || counts[api.PhaseFailed] == 0 || results[0].Analysis.Phase != api.PhaseError {
		t.Fatalf("the series is not what the test needs: %v", counts)
	}
	r := report.NewSeries(results, plan.Metrics)
	if r.Analysis.Phase != api.PhaseFailed || r.Lead != firstFailed {
		t.Errorf("the report is of analysis %d (%s), want the first Failed, %d", r.Lead, r.Analysis.Phase, firstFailed)
	}
	at := results[firstFailed].Start.UTC().Format(time.RFC3339)
	for _, want := range []string{
		fmt.Sprintf(": %d would have failed, first the one started %s: Failed: metric \"error-rate\"", counts[api.PhaseFailed], at),
		fmt.Sprintf("Besides, %d could not be measured (Error), %d passed.", counts[api.PhaseError], counts[api.PhaseSuccessful]),
	} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("the reason does not say %q:\n%s", want, r.Reason)
		}
	}
	doc := writeHTML(t, r)
	wantSummary := fmt.Sprintf("%d analyses: %d would have failed, %d could not be measured (Error), %d passed.",
		len(results), counts[api.PhaseFailed], counts[api.PhaseError], counts[api.PhaseSuccessful])
	if !strings.Contains(doc, wantSummary) {
		t.Errorf("the strip does not say %q", wantSummary)
	}
	cellRE := regexp.MustCompile(`<a href="#run-(\d+)" class="cell-link"><rect class="cell c-(\w+)( lead)?"`)
	cells := cellRE.FindAllStringSubmatch(doc, -1)
	if len(cells) != len(results) {
		t.Fatalf("%d linked cells for %d analyses", len(cells), len(results))
	}
	leads := 0
	for i, c := range cells {
		if c[1] != strconv.Itoa(i+1) || api.Phase(c[2]) != results[i].Analysis.Phase {
			t.Errorf("cell %d links to run-%s and is %s; its analysis is %s", i, c[1], c[2], results[i].Analysis.Phase)
		}
		if c[3] != "" {
			leads++
			if i != firstFailed {
				t.Errorf("cell %d is marked as the one reported", i)
			}
		}
		rs := regexp.MustCompile(`(?s)<div class="run" id="run-` + c[1] + `" data-phase="(\w+)">\s*<h3>Analysis \d+, started ([^ ]+) .*?<p class="run-reason">([^<]*)</p>`).FindStringSubmatch(doc)
		if rs == nil {
			t.Errorf("cell %d opens nothing", i)
			continue
		}
		if rs[1] != string(results[i].Analysis.Phase) || rs[2] != results[i].Start.UTC().Format(time.RFC3339) ||
			!strings.HasPrefix(html.UnescapeString(rs[3]), string(results[i].Analysis.Phase)+":") {
			t.Errorf("cell %d opens %q", i, rs[1:])
		}
	}
	if leads != 1 {
		t.Errorf("%d cells marked as the one reported, want 1", leads)
	}

	// Grouped, a cell holding a Failed and an Error analysis shows the
	// Failed one and opens it.
	long := make([]analysis.BacktestResult, 1000)
	for i := range long {
		long[i] = analysis.BacktestResult{Start: start.Add(time.Duration(i) * time.Minute), Analysis: api.Analysis{Phase: api.PhaseSuccessful}}
	}
	long[500].Analysis.Phase = api.PhaseError
	long[501].Analysis.Phase = api.PhaseFailed
	doc = writeHTML(t, report.NewSeries(long, plan.Metrics))
	if !strings.Contains(doc, `<a href="#run-502" class="cell-link"><rect class="cell c-Failed lead"`) || strings.Contains(doc, `class="cell c-Error`) {
		t.Error("the group of an Error and a Failed analysis is not shown as the Failed one")
	}
}

// TestHTMLChartThreshold checks what a chart says of a metric whose
// condition is a simple comparison: the threshold drawn where the
// compiled condition changes and labelled as a person reads it, values
// formatted ("0.950", not "[0.95]") in the points' titles and the table,
// the decisive marker explained in the legend, and a caption that says
// what the shading shows. A condition of another form has no line.
func TestHTMLChartThreshold(t *testing.T) {
	for _, c := range []struct {
		success, failure string
		values           []float64
		label, value     string // the line's; "" for none
	}{
		{"result[0] >= 0.99", "", []float64{0.995, 0.95, 0.97}, "success ≥ 0.99", "0.99"},
		{"", "result[0] > 0.05", []float64{0.01, 0.08}, "failure > 0.05", "0.05"},
		{"result[0] < 0.2 || result[0] > 0.8", "", []float64{0.1, 0.5}, "", ""},
	} {
		m := metric(t, "m", c.success, c.failure, int32(len(c.values)), c.values...)
		m.FailureLimit = 0
		plan := &analysis.Plan{Metrics: []analysis.Metric{m}}
		a := analysis.Backtest(context.Background(), plan, start, start.Add(time.Hour), analysis.Options{ID: "t"})
		sec := html.UnescapeString(section(t, writeHTML(t, report.New(a, plan.Metrics)), "m"))
		lines := regexp.MustCompile(`<g class="cond-threshold t-\w+" data-value="([^"]*)"><line x1="64" x2="704" y1="([^"]*)"[^>]*/><text class="ref-label"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(sec, -1)
		if c.label == "" {
			if len(lines) != 0 {
				t.Errorf("%s%s: a threshold drawn for a condition of another form: %q", c.success, c.failure, lines)
			}
			continue
		}
		if len(lines) != 1 || lines[0][1] != c.value || lines[0][3] != c.label {
			t.Errorf("%s%s: thresholds %q, want one at %s labelled %q", c.success, c.failure, lines, c.value, c.label)
			continue
		}
		// The line is where the shaded bands change.
		y, _ := strconv.ParseFloat(lines[0][2], 64)
		bs := bands(t, sec)
		if len(bs) != 2 || math.Abs(bs[1].y+bs[1].h-y) > 2 {
			t.Errorf("%s%s: the line at y=%g is not where the bands change: %+v", c.success, c.failure, y, bs)
		}
		if !strings.Contains(sec, `<code title="[0.95]">0.950</code>`) && !strings.Contains(sec, `<code title="[0.08]">0.0800</code>`) {
			t.Errorf("%s%s: the table's values are not formatted:\n%s", c.success, c.failure, sec)
		}
		if strings.Contains(sec, ": [0.") {
			t.Errorf("%s%s: a point's title shows the raw value", c.success, c.failure)
		}
		if !regexp.MustCompile(`class="key decisive-key"><span class="sq"></span>decisive: #\d+, the measurement that settled the metric \(Failed\)`).MatchString(sec) {
			t.Errorf("%s%s: the legend does not explain the decisive marker", c.success, c.failure)
		}
		if !strings.Contains(sec, "Shaded: the values at which the conditions pass, fail or are inconclusive.") || strings.Contains(sec, "evaluating") {
			t.Errorf("%s%s: the caption does not say what the shading shows", c.success, c.failure)
		}
	}
}

// TestHTMLTiles checks the grid that opens an analysis of several
// metrics: a tile per metric, linking to its section, with its phase, a
// dot per measurement and its decisive value against its threshold; none
// for one metric.
func TestHTMLTiles(t *testing.T) {
	c := cases(t)["failed"]
	doc := html.UnescapeString(writeHTML(t, report.New(c.a, c.metrics)))
	tiles := regexp.MustCompile(`<a class="tile tile-(\w+)" href="#metric-([\w-]+)" data-metric="[\w-]+">(?s:(.*?))</a>`).FindAllStringSubmatch(doc, -1)
	if len(tiles) != 2 {
		t.Fatalf("%d tiles, want 2", len(tiles))
	}
	want := []struct{ phase, name, value, threshold string }{
		{"Failed", "error-rate", "0.0900", "success < 0.05"},
		{"Successful", "latency-p99", "0.300", "success ≤ 0.5"},
	}
	for i, w := range want {
		got := tiles[i]
		if got[1] != w.phase || got[2] != w.name || !strings.Contains(got[3], `<span class="tile-value">`+w.value+`</span>`) ||
			!strings.Contains(got[3], `<span class="tile-threshold">`+w.threshold+`</span>`) {
			t.Errorf("tile %d: %q, want %+v", i, got[1:], w)
		}
		if n := strings.Count(got[3], `<span class="dot pt-`); n != int(c.a.MetricResults[i].Count) {
			t.Errorf("tile %d: %d dots for %d measurements", i, n, c.a.MetricResults[i].Count)
		}
	}
	if strings.Index(doc, `class="tiles"`) > strings.Index(doc, `<section class="metric"`) {
		t.Error("the tiles do not open the report")
	}
	one := cases(t)["inconclusive"]
	if doc := writeHTML(t, report.New(one.a, one.metrics)); strings.Contains(doc, `class="tiles"`) {
		t.Error("an analysis of one metric has tiles")
	}
}
