package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// graphiteBackend is a Graphite stand-in: its render API answers every
// query with one series of a 99.5% success rate, and counts the requests.
func graphiteBackend(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/render" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("until") == "" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"target":"success","datapoints":[[null,1621348400],[99.5,1621348460]]}]`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// graphiteSpec is a bare spec with a Graphite metric at address.
func graphiteSpec(address string) string {
	return `metrics:
- name: success-rate
  successCondition: result[0] >= 99
  provider:
    graphite:
      address: ` + address + `
      query: target=asPercent(app.{{args.service}}.ok.count, app.{{args.service}}.count)&from=-5min
args:
- name: service
  value: checkout
`
}

// On the command line the person running canaryd is its operator: a
// Graphite metric may query any http(s) address unless --graphite-allow
// narrows it; validate checks an address only against the prefixes it is
// given; a prefix that cannot be one is a usage error.
func TestGraphiteOnTheCommandLine(t *testing.T) {
	backend, requests := graphiteBackend(t)
	spec := graphiteSpec(backend)

	got := runCLI(t, spec, "run", "-f", "-")
	if got.code != 0 || got.analysis.Phase != api.PhaseSuccessful || got.analysis.MetricResults[0].Measurements[0].Value != "[99.500000]" {
		t.Errorf("run, no prefix: exit %d %s\n%s", got.code, got.analysis.Phase, got.stderr)
	}
	if got := runCLI(t, spec, "run", "-f", "-", "--graphite-allow", backend); got.code != 0 || got.analysis.Phase != api.PhaseSuccessful {
		t.Errorf("run, within the prefix: exit %d %s\n%s", got.code, got.analysis.Phase, got.stderr)
	}
	before := requests.Load()
	got = runCLI(t, spec, "run", "-f", "-", "--graphite-allow", "http://graphite.example.com:8080")
	if got.code != exitUsage || !strings.Contains(got.stderr, "metrics[0].provider.graphite.address") || !strings.Contains(got.stderr, "--graphite-allow") {
		t.Errorf("run, outside the prefix: exit %d\n%s", got.code, got.stderr)
	}
	if requests.Load() != before {
		t.Error("a refused metric sent a request")
	}
	if got := runCLI(t, spec, "validate", "-f", "-"); got.code != 0 {
		t.Errorf("validate, no prefix: exit %d\n%s", got.code, got.stderr)
	}
	if got := runCLI(t, spec, "validate", "-f", "-", "--graphite-allow", "http://graphite.example.com:8080"); got.code != exitUsage || !strings.Contains(got.stderr, "provider.graphite.address") {
		t.Errorf("validate, outside the prefix: exit %d\n%s", got.code, got.stderr)
	}
	if got := runCLIRaw(t, spec, "run", "-f", "-", "--graphite-allow", "ftp://graphite.example.com"); got.code != exitUsage || !strings.Contains(got.stderr, "--graphite-allow") {
		t.Errorf("a bad prefix: exit %d\n%s", got.code, got.stderr)
	}
	got = runCLIRaw(t, spec, "backtest", "-f", "-", "--start", "-1h", "--end", "-50m")
	if got.code != 0 || !strings.Contains(got.stdout, `"phase": "Successful"`) {
		t.Errorf("backtest: exit %d\n%s\n%s", got.code, got.stdout, got.stderr)
	}
}

// A backtest refuses, before it starts and naming the metric, a metric its
// provider cannot measure in the past: a web metric, a Graphite query
// whose window is not relative to now.
func TestBacktestRefusesThePresent(t *testing.T) {
	backend, requests := graphiteBackend(t)
	fixed := strings.Replace(graphiteSpec(backend), "from=-5min", "from=yesterday", 1)
	got := runCLIRaw(t, fixed, "backtest", "-f", "-", "--start", "-1h")
	if got.code != exitUsage || !strings.Contains(got.stderr, `metrics[0].provider.graphite: metric "success-rate" cannot be backtested`) {
		t.Errorf("a fixed Graphite window: exit %d\n%s", got.code, got.stderr)
	}
	got = runCLIRaw(t, webSpec, "backtest", "-f", "-", "--start", "-1h")
	if got.code != exitUsage || !strings.Contains(got.stderr, `metrics[0].provider.web: metric "budget" cannot be backtested`) {
		t.Errorf("a web metric: exit %d\n%s", got.code, got.stderr)
	}
	if requests.Load() != 0 {
		t.Error("a refused backtest sent a request")
	}
}

// serve refuses every Graphite metric when no --graphite-allow is given,
// and one outside the prefixes given, with a 400 naming the field; one
// within them runs.
func TestGraphiteOnServe(t *testing.T) {
	backend, requests := graphiteBackend(t)
	for _, tt := range []struct {
		name   string
		args   []string
		status int
	}{
		{"no prefix: refused", nil, http.StatusBadRequest},
		{"outside the prefix: refused", []string{"--graphite-allow", "http://graphite.example.com:8080"}, http.StatusBadRequest},
		{"within the prefix: runs", []string{"--graphite-allow", backend}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, base, _, _ := startServe(t, tt.args...)
			resp, err := http.Post(base+"/v1/analyses?wait=true", "application/yaml", strings.NewReader(graphiteSpec(backend)))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tt.status == http.StatusBadRequest && (!strings.Contains(string(body), "metrics[0].provider.graphite.address") || !strings.Contains(string(body), "--graphite-allow")) {
				t.Errorf("the 400 does not name the field and the flag: %s", body)
			}
			if tt.status == http.StatusOK && !strings.Contains(string(body), `"phase":"Successful"`) {
				t.Errorf("not Successful: %s", body)
			}
		})
	}
	if requests.Load() != 1 {
		t.Errorf("%d requests, want 1: a refused metric sends none", requests.Load())
	}
}

// serve's backtests refuse, before anything runs, a metric whose provider
// cannot query the past, as canaryd backtest does: a 400 on the metric's
// provider naming it.
func TestServeBacktestRefusesThePresent(t *testing.T) {
	dir := t.TempDir()
	template := `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: health}
spec:
  metrics:
  - name: health
    successCondition: result == true
    provider:
      web: {url: "http://127.0.0.1:9/health", jsonPath: "{$.ok}"}
`
	if err := os.WriteFile(filepath.Join(dir, "health.yaml"), []byte(template), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base, _, _ := startServe(t, "--templates", dir, "--web-allow", "http://127.0.0.1:9/")
	resp, err := http.Post(base+"/v1/templates/health/backtests?start=-1h&end=-30m", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "metrics[0].provider.web") || !strings.Contains(string(body), `metric \"health\" cannot be backtested`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}
