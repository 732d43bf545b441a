package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/series"
	"github.com/canaryd/canaryd/internal/spec"
)

// byCode has a series per namespace and response code of the fixture:
// more than MaxSeriesDrawn.
const byCode = `sum by (destination_workload_namespace, response_code) (rate(istio_requests_total{reporter="destination"}[1m]))`

// dataReport backtests, against a real Prometheus, a plan of the
// incident's success rate, a query of many series and a judge metric, over
// the fixture's incident, and reports it with the series fetched.
func dataReport(t *testing.T, prom *promtest.Server) (*report.Report, api.Analysis) {
	t.Helper()
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: prom.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	indent := func(q string) string { return strings.ReplaceAll(strings.TrimSpace(q), "\n", "\n          ") }
	doc, problems := spec.Parse([]byte(`dryRun:
- metricName: latency
metrics:
- name: success-rate
  interval: 5m
  count: 8
  successCondition: result[0] >= 0.99
  failureLimit: 3
  provider:
    prometheus:
      query: |
          ` + indent(promtest.SeedQuery(promtest.IncidentNamespace)) + `
- name: by-code
  count: 1
  successCondition: len(result) > 0
  provider:
    prometheus:
      query: '` + byCode + `'
- name: latency
  interval: 10m
  count: 2
  provider:
    judge:
      canary: |
          ` + indent(promtest.MeanLatencyQuery(promtest.CanaryWorkload)) + `
      baseline: |
          ` + indent(promtest.MeanLatencyQuery(promtest.StableWorkload)) + `
      lookback: 30m
      step: 1m
      direction: increase
`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	compiled, problems := compile.Compile(doc, nil, promAndJudge(p.Source))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	// Ten minutes before the incident to ten minutes after its start.
	from := prom.Now.Add(-promtest.DefaultSpan + promtest.IncidentOffset - 10*time.Minute).Truncate(time.Second)
	a := analysis.Backtest(context.Background(), compiled.Plan, from, from.Add(time.Hour), analysis.Options{ID: "data"})
	r := report.New(a, compiled.Plan.Metrics)
	r.FetchSeries(context.Background())
	return r, a
}

// queryRange asks Prometheus itself for a query's series.
func queryRange(t *testing.T, prom *promtest.Server, query string, from, to time.Time, step time.Duration) [][]float64 {
	t.Helper()
	ts := func(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', -1, 64) }
	resp, err := http.PostForm(prom.URL+"/api/v1/query_range", url.Values{"query": {query}, "start": {ts(from)}, "end": {ts(to)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	var out [][]float64
	for _, s := range answer.Data.Result {
		var vs []float64
		for _, v := range s.Values {
			f, _ := strconv.ParseFloat(v[1].(string), 64)
			vs = append(vs, f)
		}
		out = append(out, vs)
	}
	return out
}

// TestSeriesFromPrometheus checks the series beneath each metric against a
// real Prometheus: the success rate's are the backfilled data over the
// analysis' window, point for point, at a step that keeps them within
// MaxChartPoints; a query of more series than MaxSeriesDrawn draws that
// many and names the rest; a judge metric's are its canary's and its
// baseline's, over the windows it compared.
func TestSeriesFromPrometheus(t *testing.T) {
	prom := promtest.Start(t)
	r, a := dataReport(t, prom)
	if a.Phase != api.PhaseFailed {
		t.Errorf("the backtest over the incident is %s: %s", a.Phase, a.Message)
	}

	d, ok := r.SeriesOf("success-rate")
	if !ok || d.Err != nil || len(d.Set.Series) != 1 {
		t.Fatalf("success-rate: %+v", d)
	}
	if !d.From.Equal(*a.StartedAt) || !d.To.Equal(*a.CompletedAt) {
		t.Errorf("the series are from %s to %s, the analysis from %s to %s", d.From, d.To, a.StartedAt, a.CompletedAt)
	}
	pts := d.Set.Series[0].Points
	if n := int(d.To.Sub(d.From)/d.Set.Step) + 1; len(pts) != n || n > report.MaxChartPoints || n < report.MaxChartPoints/2 {
		t.Errorf("%d points at a step of %s, want %d, at most %d", len(pts), d.Set.Step, n, report.MaxChartPoints)
	}
	want := queryRange(t, prom, promtest.SeedQuery(promtest.IncidentNamespace), d.From, d.To, d.Set.Step)
	if len(want) != 1 || len(want[0]) != len(pts) {
		t.Fatalf("Prometheus has %d series, the report %d points", len(want), len(pts))
	}
	least, greatest := 1.0, 0.0
	for i, p := range pts {
		if p.V != want[0][i] || p.T.Before(d.From) || p.T.After(d.To) {
			t.Errorf("point %d: %v at %s, Prometheus has %v", i, p.V, p.T, want[0][i])
		}
		least, greatest = min(least, p.V), max(greatest, p.V)
	}
	if least > 0.951 || greatest < 0.99 {
		t.Errorf("the series go from %g to %g: the incident is not in the window", least, greatest)
	}

	d, _ = r.SeriesOf("by-code")
	total := len(queryRange(t, prom, byCode, d.From, d.To, d.Set.Step))
	if total <= report.MaxSeriesDrawn || len(d.Set.Series) != report.MaxSeriesDrawn || d.Set.More != total-report.MaxSeriesDrawn {
		t.Errorf("by-code: %d series kept and %d more, of %d", len(d.Set.Series), d.Set.More, total)
	}

	d, _ = r.SeriesOf("latency")
	sides := map[string]int{}
	for _, s := range d.Set.Series {
		sides[s.Side]++
	}
	if d.Err != nil || sides["canary"] != 1 || sides["baseline"] != 1 || d.From.After(a.StartedAt.Add(-30*time.Minute)) {
		t.Errorf("latency: %v, sides %v, from %s to %s", d.Err, sides, d.From, d.To)
	}

	doc := writeHTML(t, r)
	sec := section(t, doc, "by-code")
	if got := strings.Count(sec, `<path class="sl `); got != report.MaxSeriesDrawn {
		t.Errorf("by-code: %d series drawn", got)
	}
	if !strings.Contains(sec, fmt.Sprintf("%d more series not drawn", total-report.MaxSeriesDrawn)) {
		t.Error("by-code: the series not drawn are not named")
	}
	if !strings.Contains(section(t, doc, "success-rate"), fmt.Sprintf(`data-points="%d"`, len(pts))) {
		t.Error("success-rate: the series drawn has not all its points")
	}
}

// TestReportDataInBrowser opens the report with the series and a judge's
// distributions from a file:// URL with the network cut: it renders with
// no console error and no request, each metric's series beneath its
// measurements, and the judge's estimate of the shift inside its interval.
func TestReportDataInBrowser(t *testing.T) {
	prom := promtest.Start(t)
	r, _ := dataReport(t, prom)
	var buf bytes.Buffer
	if err := r.HTML(&buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t, browsertest.Options{Width: 1000, Height: 900})
	b.Offline()
	b.Navigate("file://" + file)
	for metric, lines := range map[string]int{"success-rate": 1, "by-code": report.MaxSeriesDrawn, "latency": 2} {
		sel := `section[data-metric="` + metric + `"] figure.series-chart`
		if got := b.Count(sel + " path.sl"); got != lines {
			t.Errorf("%s: %d series drawn, want %d", metric, got, lines)
		}
		var height float64
		b.Eval(`document.querySelector('`+sel+` svg').getBoundingClientRect().height`, &height)
		if height < 80 {
			t.Errorf("%s: the series chart is %g px high", metric, height)
		}
	}
	if b.Count(`section[data-metric="latency"] path.sl.side-canary`) != 1 || b.Count(`section[data-metric="latency"] path.sl.side-baseline`) != 1 {
		t.Error("the judge's canary and baseline are not both drawn")
	}
	sel := `section[data-metric="latency"] figure.judge-chart`
	if got := b.Count(sel + " path.ecdf"); got != 2 {
		t.Errorf("%d distributions drawn, want the canary's and the baseline's", got)
	}
	var box struct{ CILeft, CIRight, HL float64 }
	b.Eval(`(() => { const ci = document.querySelector('`+sel+` rect.ci').getBoundingClientRect();
		const hl = document.querySelector('`+sel+` circle.hl').getBoundingClientRect();
		return {ciLeft: ci.left, ciRight: ci.right, hl: hl.left + hl.width / 2}; })()`, &box)
	if box.CIRight <= box.CILeft || box.HL < box.CILeft || box.HL > box.CIRight {
		t.Errorf("the estimate is drawn at %g, its interval from %g to %g", box.HL, box.CILeft, box.CIRight)
	}
	if caption := b.Text(sel + " .judge-caption"); !regexp.MustCompile(`classified High; p = \S+; shift canary − baseline \+\S+ \(Hodges-Lehmann\), 98% interval \+\S+ to \+\S+`).MatchString(caption) {
		t.Errorf("the judge's caption %q", caption)
	}
	b.CheckSelfContained()
	b.Screenshot("report-data.png")
}

// staticSeries is a source whose range queries answer set.
type staticSeries struct {
	analysis.Source
	set series.Set
	err error
}

func (s staticSeries) QuerySeries(context.Context, series.Query) (series.Set, error) {
	return s.set, s.err
}

// TestSeriesFailed checks that a range query that fails is a note under
// the metric's chart, and the report is still whole.
func TestSeriesFailed(t *testing.T) {
	c := cases(t)["failed"]
	metrics := append([]analysis.Metric(nil), c.metrics...)
	metrics[0].Source = staticSeries{Source: metrics[0].Source, err: fmt.Errorf("Post \"http://prom:9090/api/v1/query_range\": connection refused")}
	r := report.New(c.a, metrics)
	r.FetchSeries(context.Background())
	doc := writeHTML(t, r)
	sec := section(t, doc, "error-rate")
	if !strings.Contains(sec, "could not be drawn: Post") || !strings.Contains(sec, `<circle class="pt `) {
		t.Errorf("the failed query is not a note beside the chart:\n%s", sec)
	}
	if strings.Contains(section(t, doc, "latency-p99"), "series-chart") {
		t.Error("a source without range queries has a series chart")
	}
}
