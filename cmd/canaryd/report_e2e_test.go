package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// reportCommands are the commands that take --report.
var reportCommands = []string{"backtest"}

// reportSpec is the seed's success rate of a failing canary, a latency
// that passes and a dry-run metric that would have failed, measured every
// 100 ms, for the reports' tests.
func reportSpec(t *testing.T) string {
	t.Helper()
	p99 := `histogram_quantile(0.99, sum by (le) (rate(istio_request_duration_milliseconds_bucket{reporter="destination", destination_workload_namespace="echo-good"}[1m])))`
	return writeSpec(t, "report.yaml", `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: checkout-canary }
spec:
  dryRun:
  - metricName: p99-latency-bad
  metrics:
  - name: success-rate
    interval: 100ms
    count: 4
    successCondition: result[0] >= 0.99
    failureLimit: 1
    provider:
      prometheus:
        query: `+oneLine(promtest.SeedQuery("echo-bad"))+`
  - name: p99-latency
    interval: 100ms
    count: 3
    successCondition: result[0] <= 100
    failureCondition: result[0] > 250
    provider:
      prometheus:
        query: `+p99+`
  - name: p99-latency-bad
    interval: 100ms
    count: 3
    successCondition: result[0] <= 100
    provider:
      prometheus:
        query: `+strings.Replace(p99, "echo-good", "echo-bad", 1)+`
`)
}

// TestBacktestReport runs `canaryd backtest --every --report` over the
// fixture's incident and checks the strip of verdicts in the browser: a
// cell per analysis, of its verdict.
func TestBacktestReport(t *testing.T) {
	prom := promtest.Start(t)
	spec := writeSpec(t, "incident.yaml", `metrics:
- name: success-rate
  interval: 5m
  count: 3
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: `+oneLine(promtest.SeedQuery(promtest.IncidentNamespace))+`
`)
	// The incident is 20 minutes into the window.
	start := prom.Now.Add(-promtest.DefaultSpan + promtest.IncidentOffset - 20*time.Minute).UTC()
	file := filepath.Join(t.TempDir(), "backtest.html")
	r := runCLI(t, "", "backtest", "-f", spec, "--prometheus-url", prom.URL, "--start", start.Format(time.RFC3339),
		"--end", start.Add(80*time.Minute).Format(time.RFC3339), "--every", "10m", "--report", file)
	var out struct {
		Results []analysis.BacktestResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("backtest: exit %d: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	fired := 0
	for _, res := range out.Results {
		if res.Analysis.Phase == api.PhaseFailed {
			fired++
		}
	}
	if fired == 0 || fired == len(out.Results) {
		t.Fatalf("%d of %d analyses failed: the incident is not in the window", fired, len(out.Results))
	}

	b := browsertest.Start(t, browsertest.Options{Width: 1000, Height: 900})
	b.Offline()
	b.Navigate("file://" + file)
	if got := b.Count("rect.cell"); got != len(out.Results) {
		t.Errorf("%d cells for %d analyses", got, len(out.Results))
	}
	if got := b.Count("rect.cell.c-Failed"); got != fired {
		t.Errorf("%d Failed cells for %d failed analyses", got, fired)
	}
	// The analysis reported draws its query's series over its window.
	if got := b.Count(`section[data-metric="success-rate"] figure.series-chart path.sl`); got != 1 {
		t.Errorf("%d series of the query drawn, want 1", got)
	}
	if reason := b.Text("#reason"); !strings.Contains(reason, "would have failed, first the one started") {
		t.Errorf("the reason does not say when it first fired: %q", reason)
	}
	b.CheckSelfContained()
	b.Screenshot("report-backtest.png")
}

// TestReportBadPath checks that a --report path that cannot be written is
// refused before anything runs.
func TestReportBadPath(t *testing.T) {
	for _, command := range reportCommands {
		args := []string{command, "-f", reportSpec(t), "--prometheus-url", "http://127.0.0.1:9", "--report", filepath.Join(t.TempDir(), "missing", "report.html")}
		if command == "backtest" {
			args = append(args, "--start", "-1h")
		}
		r := runCLI(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--report:") || strings.Contains(r.stderr, "analysis started") {
			t.Errorf("%s: exit %d, stderr:\n%s", command, r.code, r.stderr)
		}
	}
}
