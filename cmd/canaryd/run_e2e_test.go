package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/proctest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// binary builds canaryd once for the package's end-to-end tests and
// benchmarks.
func binary(tb testing.TB) string {
	tb.Helper()
	return proctest.Build(tb, ".")
}

// writeSpec writes a spec into the test's temporary directory.
func writeSpec(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fastSeed is the seed's success-rate template (its query unchanged but for
// the namespace argument) measured every 100 ms instead of every 30 s.
func fastSeed(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/specs/success-rate-args.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return writeSpec(t, "success-rate.yaml", strings.Replace(string(data), "interval: 30s", "interval: 100ms", 1))
}

type cliResult struct {
	code     int
	stdout   string
	stderr   string
	analysis api.Analysis
}

// runCLI runs the binary; the standard output of run must be the analysis
// as JSON.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	r := runCLIRaw(t, stdin, args...)
	if r.stdout != "" && args[0] == "run" {
		if err := json.Unmarshal([]byte(r.stdout), &r.analysis); err != nil {
			t.Fatalf("stdout is not the analysis as JSON: %v\n%s", err, r.stdout)
		}
	}
	return r
}

// runCLIRaw runs the binary and returns what it printed.
func runCLIRaw(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("canaryd %v: %v", args, err)
	}
	return cliResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func TestRunEndToEnd(t *testing.T) {
	prom := promtest.Start(t)
	seed := fastSeed(t)
	tests := []struct {
		name        string
		args        []string
		spec        string
		wantCode    int
		wantPhase   api.Phase
		wantMessage string   // the analysis' message, exactly
		wantStderr  []string // lines or fragments the progress log must hold
		wantValues  []string // measurement values, in order
	}{
		{
			name:       "seed template, healthy canary",
			args:       []string{"--arg", "namespace=echo-good"},
			spec:       seed,
			wantCode:   0,
			wantPhase:  api.PhaseSuccessful,
			wantStderr: []string{"analysis started: 1 metric(s): non-5xx-rate (3 times, 100ms apart)", " non-5xx-rate value=[0.995] measurement=Successful metric=Running (1 of 3 measured)", " non-5xx-rate value=[0.995] measurement=Successful metric=Successful (3 of 3 measured)", "analysis Successful"},
			wantValues: []string{"[0.995]", "[0.995]", "[0.995]"},
		},
		{
			name:        "seed template, failing canary",
			args:        []string{"--arg", "namespace=echo-bad"},
			spec:        seed,
			wantCode:    1,
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`,
			wantStderr:  []string{" non-5xx-rate value=[0.95] measurement=Failed metric=Running (1 of 3 measured; failed 1 <= failureLimit 1)", " non-5xx-rate value=[0.95] measurement=Failed metric=Failed (2 of 3 measured; failed 2 > failureLimit 1)", "analysis Failed: Metric"},
			wantValues:  []string{"[0.95]", "[0.95]"},
		},
		{
			name: "inconclusive between the two conditions",
			spec: writeSpec(t, "inconclusive.yaml", `metrics:
- name: between
  successCondition: result[0] >= 0.99
  failureCondition: result[0] < 0.9
  provider:
    prometheus:
      query: `+oneLine(promtest.SeedQuery("echo-bad"))+`
`),
			wantCode:    2,
			wantPhase:   api.PhaseInconclusive,
			wantMessage: `Metric "between" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)`,
			wantValues:  []string{"[0.95]"},
		},
		{
			name: "no data: an Error with Argo's message",
			args: []string{"--error-retry", "50ms"},
			spec: writeSpec(t, "empty.yaml", `metrics:
- name: no-data
  successCondition: result[0] >= 0.99
  consecutiveErrorLimit: 1
  provider:
    prometheus:
      query: sum(rate(istio_requests_total{destination_workload_namespace="nowhere"}[1m]))
`),
			wantCode:    3,
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "no-data" assessed Error due to consecutiveErrors (2) > consecutiveErrorLimit (1): "Error Message: could not evaluate successCondition "result[0] >= 0.99": metric result is nil or empty: no data returned from the metric provider"`,
			wantValues:  []string{"[]", "[]"},
		},
		{
			name: "--max-result-values: a larger result is an Error naming the cap",
			args: []string{"--max-result-values", "1"},
			spec: writeSpec(t, "many.yaml", `metrics:
- name: per-namespace
  successCondition: all(result, {# >= 0})
  consecutiveErrorLimit: 0
  provider:
    prometheus:
      query: sum by (destination_workload_namespace) (rate(istio_requests_total[1m]))
`),
			wantCode:   3,
			wantPhase:  api.PhaseError,
			wantStderr: []string{"more than the 1 a measurement may have (--max-result-values)"},
		},
		{
			name: "no data with a noData policy: the vacuous all() does not pass",
			spec: writeSpec(t, "nodata.yaml", `metrics:
- name: no-data
  successCondition: 'all(result, # >= 0.99)'
  noData: Inconclusive
  provider:
    prometheus:
      query: sum(rate(istio_requests_total{destination_workload_namespace="nowhere"}[1m]))
`),
			wantCode:    2,
			wantPhase:   api.PhaseInconclusive,
			wantMessage: `Metric "no-data" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0): "Error Message: no data: the query returned an empty result (noData: Inconclusive)"`,
			wantValues:  []string{"[]"},
		},
		{
			// A query that does not parse is refused before anything runs
			// (TestRunRefusesAQueryThatDoesNotParse); one that parses but
			// that this Prometheus refuses (an experimental function it has
			// not enabled) is an Error measurement with its message.
			name: "a query Prometheus refuses carries Prometheus' message",
			spec: writeSpec(t, "syntax.yaml", `metrics:
- name: broken
  consecutiveErrorLimit: 0
  provider:
    prometheus:
      query: limitk(1, istio_requests_total)
`),
			wantCode:   3,
			wantPhase:  api.PhaseError,
			wantStderr: []string{"measurement=Error", `message="bad_data: `, "parse error"},
		},
		{
			name: "range query flattens the matrix",
			spec: writeSpec(t, "range.yaml", `metrics:
- name: success-rate-over-time
  successCondition: 'len(result) == 6 && all(result, # >= 0.99)'
  provider:
    prometheus:
      query: `+oneLine(promtest.SeedQuery("echo-good"))+`
      rangeQuery:
        start: now() - duration("5m")
        end: now()
        step: 1m
`),
			wantCode:   0,
			wantPhase:  api.PhaseSuccessful,
			wantValues: []string{"[0.995,0.995,0.995,0.995,0.995,0.995]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-f", tt.spec, "--prometheus-url", prom.URL}, tt.args...)
			got := runCLI(t, "", args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstderr:\n%s", got.code, tt.wantCode, got.stderr)
			}
			if got.analysis.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", got.analysis.Phase, tt.wantPhase)
			}
			if tt.wantMessage != "" && got.analysis.Message != tt.wantMessage {
				t.Errorf("message\n got %s\nwant %s", got.analysis.Message, tt.wantMessage)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
				}
			}
			if tt.wantValues != nil {
				var values []string
				for _, m := range got.analysis.MetricResults[0].Measurements {
					values = append(values, m.Value)
				}
				if strings.Join(values, " ") != strings.Join(tt.wantValues, " ") {
					t.Errorf("values %v, want %v", values, tt.wantValues)
				}
			}
		})
	}
}

// oneLine folds a query onto one line so that it fits a YAML plain scalar.
func oneLine(q string) string {
	return "'" + strings.Join(strings.Fields(q), " ") + "'"
}

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantStderr []string
	}{
		{"no file flag", []string{"run"}, "", []string{"-f FILE is required"}},
		{"missing file", []string{"run", "-f", "/nonexistent/template.yaml"}, "", []string{"no such file"}},
		{"malformed YAML on stdin", []string{"run", "-f", "-"}, "metrics: [\n", []string{"<stdin>: 1 problem(s)"}},
		{"unknown fields, all of them", []string{"run", "-f", "-"}, `metrics:
- name: m
  failureLimt: 1
  provider:
    prometheus:
      query: up
      adress: http://x
`, []string{"metrics[0].failureLimt", "metrics[0].provider.prometheus.adress"}},
		{"missing argument", []string{"run", "-f", "../../testdata/specs/success-rate-args.yaml"}, "",
			[]string{`args[0].value: argument "namespace" was not supplied: give it with --arg namespace=…`}},
		{"a condition that cannot compile", []string{"run", "-f", "-"}, `metrics:
- name: m
  successCondition: result[0] >=
  failureCondition: reslt > 1
  provider: {prometheus: {query: up}}
`, []string{"metrics[0].successCondition", "metrics[0].failureCondition", "unknown name reslt"}},
		{"an address that is not a URL", []string{"run", "-f", "-"}, "metrics:\n- name: m\n  provider: {prometheus: {query: up, address: 'ftp://prometheus'}}\n",
			[]string{`metrics[0].provider.prometheus.address: "ftp://prometheus": prometheus address must be an http or https URL`}},
		{"an unknown flag", []string{"run", "--nope"}, "", []string{"flag provided but not defined: -nope"}},
		{"validate lists every problem", []string{"validate", "-f", "-"}, `metrics:
- name: m
  count: 3
  provider: {prometheus: {query: up}}
- name: m
  provider: {wavefront: {query: avg:x}}
`, []string{"3 problem(s)", "metrics[0].interval: interval must be specified when count > 1", "metrics[1].name: duplicate name 'm'", "provider wavefront is not supported by this canaryd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, tt.stdin, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit code %d, want %d", got.code, exitUsage)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q, want nothing: no analysis ran", got.stdout)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
				}
			}
		})
	}
}

func TestValidateValid(t *testing.T) {
	got := runCLI(t, "", "validate", "-f", "../../testdata/specs/success-rate-args.yaml", "--arg", "namespace=echo")
	if got.code != 0 || !strings.Contains(got.stdout, "valid: AnalysisTemplate success-rate-args: 1 metric(s): non-5xx-rate (3 times, 30s apart)") {
		t.Errorf("exit %d stdout %q stderr %q", got.code, got.stdout, got.stderr)
	}
}

func TestVersion(t *testing.T) {
	got := runCLI(t, "", "version")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "canaryd ") || !strings.Contains(got.stdout, "go: go1.") {
		t.Errorf("exit %d stdout %q", got.code, got.stdout)
	}
}

// TestRunInterrupt stops a run of an indefinite metric with each signal:
// the analysis is terminated with Argo's semantics and still printed, but
// the exit code is the signal's (128 + its number, as a shell reports
// it), never 0: a stopped check is not a pass.
func TestRunInterrupt(t *testing.T) {
	prom := promtest.Start(t)
	spec := writeSpec(t, "forever.yaml", `metrics:
- name: background
  interval: 50ms
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: `+oneLine(promtest.SeedQuery("echo-good"))+`
`)
	for _, tc := range []struct {
		signal   syscall.Signal
		wantCode int
		wantLine string
	}{
		{syscall.SIGINT, 130, "canaryd run: interrupted by SIGINT before the analysis completed; exit code 130"},
		{syscall.SIGTERM, 143, "canaryd run: interrupted by SIGTERM before the analysis completed; exit code 143"},
	} {
		t.Run(signalName(tc.signal), func(t *testing.T) {
			cmd := exec.Command(binary(t), "run", "-f", spec, "--prometheus-url", prom.URL)
			var stdout bytes.Buffer
			stderr := &proctest.Buffer{}
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for two measurements before interrupting.
			deadline := time.Now().Add(30 * time.Second)
			for strings.Count(stderr.String(), "measurement=Successful") < 2 {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("no measurements:\n%s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("exit code %d, want %d\n%s", code, tc.wantCode, stderr.String())
			}
			var a api.Analysis
			if err := json.Unmarshal(stdout.Bytes(), &a); err != nil {
				t.Fatalf("stdout: %v\n%s", err, stdout.String())
			}
			if a.Phase != api.PhaseSuccessful || a.Message != "Run Terminated" || a.MetricResults[0].Count < 2 {
				t.Errorf("got %s %q count %d, want Successful, Run Terminated, 2 or more", a.Phase, a.Message, a.MetricResults[0].Count)
			}
			for _, want := range []string{"analysis Successful: Run Terminated\n", tc.wantLine + "\n"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

func readAll(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
