package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
)

// TestRunOutputFormats runs the seed template on a failing canary against
// a real Prometheus and reads each -o format as its consumer would: the
// reason must name the decisive measurement and the limit in every human
// format, the markdown must hold a table row per metric, and the JUnit XML
// must pass both JUnit schemas with a failed test case for the metric.
func TestRunOutputFormats(t *testing.T) {
	prom := promtest.Start(t)
	seed := fastSeed(t)
	args := func(format string) []string {
		return []string{"run", "-q", "-f", seed, "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL, "-o", format}
	}
	reason := []string{`Failed: metric "non-5xx-rate" measured [0.95] at `, "failed (2) > failureLimit (1)"}

	text := runCLIRaw(t, "", args("text")...)
	for _, want := range append(reason, "METRIC", "non-5xx-rate  Failed", "2 (limit 1)") {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("-o text does not say %q:\n%s", want, text.stdout)
		}
	}
	if text.code != exitFailed {
		t.Errorf("-o text: exit code %d, want %d", text.code, exitFailed)
	}

	md := runCLIRaw(t, "", args("markdown")...)
	// Markdown escapes what would be read as markup: [ ] < >.
	mdReason := []string{`Failed: metric "non-5xx-rate" measured \[0.95\] at `, "failed (2) &gt; failureLimit (1)"}
	for _, want := range append(mdReason, "### ❌ `success-rate-args` (`namespace=echo-bad`) — canaryd analysis: Failed\n", "| Metric | Phase |", "| non-5xx-rate | ❌ Failed | 2/3 | 2 (limit 1) |") {
		if !strings.Contains(md.stdout, want) {
			t.Errorf("-o markdown does not say %q:\n%s", want, md.stdout)
		}
	}

	junit := runCLIRaw(t, "", args("junit")...)
	if !strings.Contains(junit.stdout, `<testcase name="non-5xx-rate"`) || !strings.Contains(junit.stdout, `<failure message="metric`) {
		t.Errorf("-o junit has no failed test case for the metric:\n%s", junit.stdout)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte(junit.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	// junit.xsd as Jenkins' JUnit plugin and GitLab read it, junit-10.xsd
	// as Jenkins' xUnit plugin validates it.
	for _, schema := range []string{"junit.xsd", "junit-10.xsd"} {
		if out, err := exec.Command("xmllint", "--noout", "--nonet", "--schema", "../../internal/report/testdata/"+schema, path).CombinedOutput(); err != nil {
			t.Errorf("-o junit fails %s: %v\n%s", schema, err, out)
		}
	}

	// Piped, the default stays the analysis as JSON.
	if r := runCLI(t, "", "run", "-q", "-f", seed, "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL); r.analysis.Phase != "Failed" {
		t.Errorf("default output when piped: phase %q, want the JSON analysis", r.analysis.Phase)
	}

	bad := runCLIRaw(t, "", "run", "-f", seed, "-o", "yaml")
	if bad.code != exitUsage || !strings.Contains(bad.stderr, `-o "yaml": give one of text, json, markdown, junit`) {
		t.Errorf("-o yaml: code %d, stderr %q", bad.code, bad.stderr)
	}
}
