package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/proctest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestProgressLine holds the progress line's wording: the measurement's
// phase and the metric's after it, and why the metric has that phase in
// the words of Argo's message and of the template's fields.
func TestProgressLine(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 14, 40, 0, time.UTC)
	three := int32(3)
	seed := &analysis.Metric{Name: "non-5xx-rate", Count: &three, FailureLimit: 1, ConsecutiveErrorLimit: 4}
	unbounded := &analysis.Metric{Name: "background", FailureLimit: -1}
	dry := &analysis.Metric{Name: "saturation", Count: &three, DryRun: true}
	for _, tc := range []struct {
		name   string
		phase  api.Phase
		value  string
		msg    string
		metric api.Phase
		res    api.MetricResult
		m      *analysis.Metric
		want   string
	}{
		{"a Failed measurement within the limit", api.PhaseFailed, "[0.95]", "", api.PhaseRunning,
			api.MetricResult{Count: 1, Failed: 1}, seed,
			"2026-11-22T12:14:40Z non-5xx-rate value=[0.95] measurement=Failed metric=Running (1 of 3 measured; failed 1 <= failureLimit 1)"},
		{"the Failed measurement that exceeds it", api.PhaseFailed, "[0.95]", "", api.PhaseFailed,
			api.MetricResult{Count: 2, Failed: 2}, seed,
			"2026-11-22T12:14:40Z non-5xx-rate value=[0.95] measurement=Failed metric=Failed (2 of 3 measured; failed 2 > failureLimit 1)"},
		{"a Successful measurement", api.PhaseSuccessful, "[0.999]", "", api.PhaseSuccessful,
			api.MetricResult{Count: 3, Successful: 3}, seed,
			"2026-11-22T12:14:40Z non-5xx-rate value=[0.999] measurement=Successful metric=Successful (3 of 3 measured)"},
		{"an Error is not counted as measured", api.PhaseError, "", "connection refused", api.PhaseRunning,
			api.MetricResult{Count: 0, Error: 1, ConsecutiveError: 1}, seed,
			`2026-11-22T12:14:40Z non-5xx-rate value=- measurement=Error metric=Running (0 of 3 measured; consecutive errors 1 <= consecutiveErrorLimit 4) message="connection refused"`},
		{"no failure limit, no count", api.PhaseFailed, "[0]", "", api.PhaseRunning,
			api.MetricResult{Count: 7, Failed: 7}, unbounded,
			"2026-11-22T12:14:40Z background value=[0] measurement=Failed metric=Running (7 measured; failed 7, no failureLimit)"},
		{"a dry-run metric", api.PhaseInconclusive, "[0.9]", "", api.PhaseInconclusive,
			api.MetricResult{Count: 1, Inconclusive: 1}, dry,
			"2026-11-22T12:14:40Z saturation value=[0.9] measurement=Inconclusive metric=Inconclusive (1 of 3 measured; inconclusive 1 > inconclusiveLimit 0; dry-run: not counted in the verdict)"},
	} {
		ev := api.Event{Type: api.EventMeasurement, Metric: tc.m.Name, MetricPhase: tc.metric,
			Measurement: &api.Measurement{Phase: tc.phase, Value: tc.value, Message: tc.msg, FinishedAt: &at}}
		if got := progressLine(ev, &tc.res, tc.m); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestRefusedLine holds what a refused connection says, by where the
// address came from.
func TestRefusedLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources *cliSources
		address string
		want    []string
		wantNot []string
		whence  string
	}{
		{"the default address", &cliSources{}, defaultPrometheusURL,
			[]string{"the Prometheus at http://localhost:9090 refused the connection", "nothing listens at the default address", "give --prometheus-url URL (or CANARYD_PROMETHEUS_URL)", "again after 10s (--error-retry)", "consecutiveErrorLimit"},
			nil, "the default; set --prometheus-url"},
		{"--prometheus-url", &cliSources{override: "http://127.0.0.1:1"}, "http://127.0.0.1:1",
			[]string{"the Prometheus at http://127.0.0.1:1 refused the connection: check --prometheus-url"},
			[]string{"default"}, "--prometheus-url"},
		{"the template's address", &cliSources{}, "http://prometheus.monitoring.svc:9090",
			[]string{"it is the template's address; give --prometheus-url URL to query another"},
			[]string{"default"}, "the template's address; --prometheus-url overrides it"},
	} {
		got := tc.sources.refusedLine(tc.address, 10*time.Second)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", tc.name, got, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tc.name, got, w)
			}
		}
		if got := tc.sources.whence(tc.address); got != tc.whence {
			t.Errorf("%s: whence %q, want %q", tc.name, got, tc.whence)
		}
	}
	two := &cliSources{addresses: []string{"http://a:9090", "http://b:9090"}}
	if got, ok := two.refused(`Post "http://b:9090/api/v1/query": dial tcp 10.0.0.2:9090: connect: connection refused`); !ok || got != "http://b:9090" {
		t.Errorf("of two addresses, the one quoted: got %q %v", got, ok)
	}
	if _, ok := two.refused("bad_data: parse error"); ok {
		t.Error("an error that is not a refused connection was taken for one")
	}
}

// closedAddress is the URL of a loopback port nothing listens on: a
// connection to it is refused.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// TestRunRefusedAtOnce runs a template against a Prometheus that refuses
// connections, with an --error-retry of an hour: the first progress line
// names the address and where it came from, and the refused connection is
// said after the first measurement, not when Argo's consecutiveErrorLimit
// ends the analysis an hour or so later. The run is then interrupted.
func TestRunRefusedAtOnce(t *testing.T) {
	closed := closedAddress(t)
	spec := writeSpec(t, "own-address.yaml", "metrics: [{name: m, successCondition: 'result[0] > 0', provider: {prometheus: {query: up, address: '"+closed+"'}}}]\n")
	bare := writeSpec(t, "no-address.yaml", "metrics: [{name: m, successCondition: 'result[0] > 0', provider: {prometheus: {query: up}}}]\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string // in order
	}{
		{"--prometheus-url", []string{"-f", bare, "--prometheus-url", closed}, []string{
			"querying Prometheus at " + closed + " (--prometheus-url)\nanalysis started: ",
			"measurement=Error metric=Running (0 of 1 measured; consecutive errors 1 <= consecutiveErrorLimit 4)",
			"canaryd run: the Prometheus at " + closed + " refused the connection: check --prometheus-url. Measuring goes on as Argo does: again after 1h0m0s (--error-retry)",
		}},
		{"the template's address", []string{"-f", spec}, []string{
			"querying Prometheus at " + closed + " (the template's address; --prometheus-url overrides it)\n",
			"canaryd run: the Prometheus at " + closed + " refused the connection: it is the template's address; give --prometheus-url URL",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), append([]string{"run", "--error-retry", "1h"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "CANARYD_PROMETHEUS_URL=")
			stderr := &proctest.Buffer{}
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			last := tc.want[len(tc.want)-1]
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(stderr.String(), last) {
				if time.Now().After(deadline) {
					t.Fatalf("no %q within 20 s of an hour-long analysis:\n%s", last, stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
			got := stderr.String()
			if !strings.HasPrefix(got, "querying Prometheus at ") {
				t.Errorf("the first line does not name the Prometheus:\n%s", got)
			}
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr lacks %q after what came before:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			if n := strings.Count(got, "refused the connection:"); n != 1 {
				t.Errorf("the refused connection is said %d times, want once:\n%s", n, got)
			}
		})
	}
}

// TestRunNamesTheDefault runs a template that names no address without
// --prometheus-url: the first line says the default is queried and how to
// set another. (Whether anything answers at localhost:9090 does not
// matter: the line comes before the first query.)
func TestRunNamesTheDefault(t *testing.T) {
	bare := writeSpec(t, "no-address.yaml", "metrics: [{name: m, interval: 1h, successCondition: 'result[0] > 0', provider: {prometheus: {query: up}}}]\n")
	cmd := exec.Command(binary(t), "run", "-f", bare, "--error-retry", "1h")
	cmd.Env = append(os.Environ(), "CANARYD_PROMETHEUS_URL=")
	stderr := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	want := "querying Prometheus at http://localhost:9090 (the default; set --prometheus-url)\nanalysis started: "
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "analysis started: ") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing said within 20 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := stderr.String(); !strings.HasPrefix(got, want) {
		t.Errorf("stderr does not start %q:\n%s", want, got)
	}
}

// TestRunReportsNamed runs the seed template and a bare spec to each
// format that names the analysis: the template's name (the file's for a
// bare spec) and its arguments, never the id "cli"; and the markdown links
// the HTML report --report wrote.
func TestRunReportsNamed(t *testing.T) {
	prom := promtest.Start(t)
	seed := fastSeed(t)
	dir := t.TempDir()
	html := filepath.Join(dir, "canaryd report.html")
	md := runCLIRaw(t, "", "run", "-q", "-f", seed, "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL, "-o", "markdown", "--report", html)
	for _, want := range []string{
		"### ❌ `success-rate-args` (`namespace=echo-bad`) — canaryd analysis: Failed\n",
		"[" + html + "](" + strings.ReplaceAll(html, " ", "%20") + ")",
	} {
		if !strings.Contains(md.stdout, want) {
			t.Errorf("-o markdown does not say %q:\n%s", want, md.stdout)
		}
	}
	if strings.Contains(md.stdout, "cli") {
		t.Errorf("-o markdown calls the analysis cli:\n%s", md.stdout)
	}
	page, err := readAll(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"success-rate-args", "namespace=echo-bad"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report does not say %q", want)
		}
	}
	if strings.Contains(page, ">cli<") {
		t.Error("the HTML report calls the analysis cli")
	}

	junit := runCLIRaw(t, "", "run", "-q", "-f", seed, "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL, "-o", "junit")
	if want := `<testsuite name="canaryd success-rate-args (namespace=echo-bad)"`; !strings.Contains(junit.stdout, want) {
		t.Errorf("-o junit does not say %q:\n%s", want, junit.stdout)
	}
	if strings.Contains(junit.stdout, `"cli"`) {
		t.Errorf("-o junit calls the analysis cli:\n%s", junit.stdout)
	}

	bare := writeSpec(t, "error-budget.yaml", "metrics: [{name: m, successCondition: 'result[0] > 0', provider: {prometheus: {query: up}}}]\n")
	bmd := runCLIRaw(t, "", "run", "-q", "-f", bare, "--prometheus-url", prom.URL, "-o", "markdown")
	if want := "`error-budget.yaml` — canaryd analysis: "; !strings.Contains(bmd.stdout, want) {
		t.Errorf("a bare spec's markdown does not say %q:\n%s", want, bmd.stdout)
	}
	if strings.Contains(bmd.stdout, "HTML report") {
		t.Errorf("the markdown links a report that no --report wrote:\n%s", bmd.stdout)
	}
}
