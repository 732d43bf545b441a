package report_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

var start = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// metric builds a metric whose source answers values[i] in minute i of
// the analysis (an error for NaN) and whose conditions are compiled as a spec's are.
func metric(t *testing.T, name, success, failure string, count int32, values ...float64) analysis.Metric {
	t.Helper()
	conds, problems := condition.Compile(success, failure)
	if len(problems) > 0 {
		t.Fatalf("conditions of %s: %v", name, problems)
	}
	c := count
	return analysis.Metric{
		Name: name, Interval: time.Minute, Count: &c, FailureLimit: 0, ConsecutiveErrorLimit: 4,
		SuccessCondition: success, FailureCondition: failure, Judge: conds,
		// The value depends on the minute measured, not on the order of
		// calls: a backtest fetches ahead.
		Source: analysis.SourceFunc(func(_ context.Context, at time.Time) analysis.Observation {
			v := values[min(int(at.Sub(start)/time.Minute), len(values)-1)]
			if v != v {
				return analysis.Observation{Err: errors.New("Post \"http://prometheus:9090/api/v1/query\": connection refused")}
			}
			return analysis.Observation{Value: []float64{v}, Display: fmt.Sprintf("[%g]", v)}
		}),
	}
}

// cases are analyses run by the engine in virtual time, one per way an
// analysis ends.
func cases(t *testing.T) map[string]struct {
	a       api.Analysis
	metrics []analysis.Metric
} {
	out := map[string]struct {
		a       api.Analysis
		metrics []analysis.Metric
	}{}
	run := func(name string, metrics ...analysis.Metric) {
		plan := &analysis.Plan{Metrics: metrics}
		a := analysis.Backtest(context.Background(), plan, start, start.Add(time.Hour),
			analysis.Options{ID: "a-" + name, Template: "http-errors", Args: map[string]string{"service": "checkout"}})
		out[name] = struct {
			a       api.Analysis
			metrics []analysis.Metric
		}{a, metrics}
	}
	failed := metric(t, "error-rate", "result[0] < 0.05", "", 5, 0.01, 0.02, 0.09, 0.01)
	failed.FailureLimit = 0
	run("failed", failed, metric(t, "latency-p99", "result[0] <= 0.5", "", 5, 0.3))

	dry := metric(t, "saturation", "result[0] < 0.8", "", 3, 0.95)
	dry.DryRun = true
	run("successful", metric(t, "error-rate", "result[0] < 0.05", "", 3, 0.01), dry)

	inconclusive := metric(t, "error-rate", "result[0] < 0.01", "result[0] > 0.05", 3, 0.02)
	run("inconclusive", inconclusive)

	nan := 0.0
	nan = nan / nan
	errs := metric(t, "error-rate", "result[0] < 0.05", "", 10, nan)
	errs.ConsecutiveErrorLimit = 2
	run("error", errs)
	return out
}

func TestGolden(t *testing.T) {
	for name, c := range cases(t) {
		r := report.New(c.a, c.metrics)
		for _, format := range report.Formats {
			if format == "json" {
				continue
			}
			var buf bytes.Buffer
			if err := r.Write(&buf, format); err != nil {
				t.Fatalf("%s %s: %v", name, format, err)
			}
			ext := map[string]string{"text": "txt", "markdown": "md", "junit": "xml"}[format]
			golden := filepath.Join("testdata", name+"."+ext)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./internal/report -update writes it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s as %s differs from %s:\n--- got\n%s\n--- want\n%s", name, format, golden, buf.String(), want)
			}
		}
	}
}

// TestReason checks what the sentence must name, whatever its wording: the
// metric, the decisive measurement's value and time, the condition and the
// limit.
func TestReason(t *testing.T) {
	all := cases(t)
	for name, want := range map[string][]string{
		"failed":       {"Failed:", `"error-rate"`, "[0.09]", "12:02:00Z", `successCondition "result[0] < 0.05" was false`, "failed (1) > failureLimit (0)"},
		"successful":   {"Successful:", "its one metric passed", `dry-run metric "saturation" would have been Failed`},
		"inconclusive": {"Inconclusive:", "[0.02]", `neither successCondition "result[0] < 0.01" nor failureCondition "result[0] > 0.05"`, "inconclusive (1) > inconclusiveLimit (0)"},
		"error":        {"Error:", "connection refused", "consecutiveErrors (3) > consecutiveErrorLimit (2)"},
	} {
		c := all[name]
		got := report.New(c.a, c.metrics).Reason
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: reason %q does not say %q", name, got, w)
			}
		}
		if c.a.Phase != api.Phase(strings.TrimSuffix(strings.SplitN(got, ":", 2)[0], ".")) {
			t.Errorf("%s: reason %q does not start with the phase %s", name, got, c.a.Phase)
		}
	}
}

// TestNext checks what a running metric says would settle it.
func TestNext(t *testing.T) {
	m := metric(t, "error-rate", "result[0] < 0.05", "", 10, 0.01)
	m.FailureLimit = 2
	res := api.MetricResult{Name: "error-rate", Phase: api.PhaseRunning, Count: 4, Successful: 3, Failed: 1}
	r := report.New(api.Analysis{Phase: api.PhaseRunning, MetricResults: []api.MetricResult{res}}, []analysis.Metric{m})
	want := "2 more failed measurements → Failed; 1 more inconclusive measurement → Inconclusive; 5 more consecutive errors → Error; 6 more measurements → complete"
	if got := r.Metrics[0].Next; got != want {
		t.Errorf("next:\n got %q\nwant %q", got, want)
	}
	if !strings.HasPrefix(r.Reason, "Running: 0 of 1 metrics complete after 4 measurements") {
		t.Errorf("reason of a running analysis: %q", r.Reason)
	}
}

func TestUnknownFormat(t *testing.T) {
	err := report.New(api.Analysis{}, nil).Write(&bytes.Buffer{}, "yaml")
	if err == nil || !strings.Contains(err.Error(), "text, json, markdown, junit") {
		t.Errorf("unknown format: %v", err)
	}
}

// junitSchemas are the JUnit schemas every document must pass: junit.xsd,
// as Jenkins' JUnit plugin, GitLab and Ant read JUnit, and junit-10.xsd,
// the stricter one Jenkins' xUnit plugin validates a report against.
var junitSchemas = []string{"junit.xsd", "junit-10.xsd"}

// TestJUnitSchema validates every JUnit document against each JUnit schema
// with libxml2's xmllint (Debian's libxml2-utils, which make test
// installs), and checks that documents each schema refuses are refused, so
// that the check itself can fail.
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint is needed: make test installs it, or run 'apt-get install -y libxml2-utils'")
	}
	dir := t.TempDir()
	validate := func(schema, name string, doc []byte) error {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", schema), path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	for name, c := range cases(t) {
		var buf bytes.Buffer
		if err := report.New(c.a, c.metrics).JUnit(&buf); err != nil {
			t.Fatal(err)
		}
		for _, schema := range junitSchemas {
			if err := validate(schema, name, buf.Bytes()); err != nil {
				t.Errorf("%s against %s: %v", name, schema, err)
			}
		}
	}
	for _, bad := range []struct{ schema, why, doc string }{
		{"junit.xsd", "a test case without classname and with both failure and error",
			`<testsuites><testsuite name="x" tests="1"><testcase name="m"><failure/><error/></testcase></testsuite></testsuites>`},
		{"junit-10.xsd", "skipped on testsuites",
			`<testsuites tests="1" failures="0" errors="0" skipped="1"><testsuite name="x" tests="1" failures="0" errors="0" skipped="1"><testcase name="m"><skipped/></testcase></testsuite></testsuites>`},
		{"junit-10.xsd", "a test suite without failures and errors",
			`<testsuites><testsuite name="x" tests="1"><testcase name="m"/></testsuite></testsuites>`},
	} {
		if err := validate(bad.schema, "bad", []byte(bad.doc)); err == nil {
			t.Errorf("%s: %s passed the schema", bad.schema, bad.why)
		}
	}
}

// TestJUnitCounts checks the counters against the cases: the suite counts
// skipped test cases; testsuites has no skipped attribute (junit-10.xsd
// refuses one), so it carries the other three.
func TestJUnitCounts(t *testing.T) {
	for name, want := range map[string]string{
		"failed":       `tests="2" failures="1" errors="0"`,
		"successful":   `tests="2" failures="0" errors="0"`,
		"inconclusive": `tests="1" failures="1" errors="0"`,
		"error":        `tests="1" failures="0" errors="1"`,
	} {
		skipped := ` skipped="0"`
		if name == "successful" {
			skipped = ` skipped="1"`
		}
		c := cases(t)[name]
		var buf bytes.Buffer
		if err := report.New(c.a, c.metrics).JUnit(&buf); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(buf.String(), want); got != 2 {
			t.Errorf("%s: %q appears %d times (suites and suite), want 2:\n%s", name, want, got, buf.String())
		}
		if got := strings.Count(buf.String(), want+skipped); got != 1 {
			t.Errorf("%s: %q appears %d times, want once (the suite):\n%s", name, want+skipped, got, buf.String())
		}
	}
}

// TestMarkdownNames checks what the markdown calls an analysis and that it
// links the HTML report written beside it: the template and its arguments
// in the heading, which still ends "canaryd analysis: PHASE" for a
// pipeline's grep; without a template, the arguments on a line of their
// own and no link unless a report was written.
func TestMarkdownNames(t *testing.T) {
	c := cases(t)["failed"]
	r := report.New(c.a, c.metrics)
	r.HTMLReport = "out/canaryd report.html"
	var buf bytes.Buffer
	if err := r.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### ❌ `http-errors` (`service=checkout`) — canaryd analysis: Failed\n",
		"[out/canaryd report.html](out/canaryd%20report.html)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("markdown does not say %q:\n%s", want, buf.String())
		}
	}

	bare := c.a
	bare.Template, bare.ID = "", ""
	buf.Reset()
	if err := report.New(bare, c.metrics).Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### ❌ canaryd analysis: Failed\n", "Arguments: `service=checkout`", "\nStarted 2026-11-23T12:00:00Z, took 2m0s.\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("markdown without a template or id does not say %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "HTML report") {
		t.Errorf("markdown links a report that was not written:\n%s", buf.String())
	}
}
