package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/promtest"
)

func init() { reportCommands = append(reportCommands, "run") }

// TestReportInBrowser runs an analysis against a real Prometheus with
// `canaryd run --report`, opens the file in Chromium from a file:// URL
// with the network cut, and checks that it renders completely: the reason
// names the decisive measurement, each chart has one point per
// measurement and bands the conditions agree with, and its query's series
// beneath it; nothing is requested, nothing errs. The screenshot is left in the artifacts directory.
func TestReportInBrowser(t *testing.T) {
	prom := promtest.Start(t)
	spec := reportSpec(t)
	file := filepath.Join(t.TempDir(), "report.html")
	r := runCLI(t, "", "run", "-q", "-f", spec, "--prometheus-url", prom.URL, "-o", "json", "--report", file)
	if r.code != exitFailed {
		t.Fatalf("exit code %d, want %d:\n%s", r.code, exitFailed, r.stderr)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatalf("--report wrote no file: %v", err)
	}
	if info.Size() > 200<<10 {
		t.Errorf("the report is %d KiB", info.Size()>>10)
	}

	b := browsertest.Start(t, browsertest.Options{Width: 1000, Height: 900})
	b.Offline()
	b.Navigate("file://" + file)

	reason := b.Text("#reason")
	for _, want := range []string{`Failed: metric "success-rate" measured [0.95] at `, `successCondition "result[0] >= 0.99" was false`, "failed (2) > failureLimit (1)"} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason %q does not say %q", reason, want)
		}
	}
	if got := b.Text("#verdict"); got != "Failed" {
		t.Errorf("verdict %q", got)
	}
	conditions := map[string][2]string{
		"success-rate":    {"result[0] >= 0.99", ""},
		"p99-latency":     {"result[0] <= 100", "result[0] > 250"},
		"p99-latency-bad": {"result[0] <= 100", ""},
	}
	for _, res := range r.analysis.MetricResults {
		sel := `section[data-metric="` + res.Name + `"]`
		if got := b.Count(sel + " circle.pt"); got != len(res.Measurements) || got == 0 {
			t.Errorf("%s: %d points drawn for %d measurements", res.Name, got, len(res.Measurements))
		}
		var height float64
		b.Eval(`document.querySelector('`+sel+` figure.chart svg').getBoundingClientRect().height`, &height)
		if height < 100 {
			t.Errorf("%s: the chart is %g px high", res.Name, height)
		}
		// Beneath it, the query's own series over the analysis.
		if got := b.Count(sel + " figure.series-chart path.sl"); got != 1 {
			t.Errorf("%s: %d series of its query drawn, want 1", res.Name, got)
		}
		// The bands as the browser has them, checked against the
		// conditions at their middle.
		var regions []struct {
			Outcome  string
			From, To float64
		}
		b.Eval(`Array.from(document.querySelectorAll('`+sel+` rect.region')).map(r => ({outcome: r.dataset.outcome, from: +r.dataset.from, to: +r.dataset.to}))`, &regions)
		if len(regions) == 0 {
			t.Errorf("%s: no shaded regions", res.Name)
		}
		c := conditions[res.Name]
		conds, problems := condition.Compile(c[0], c[1])
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		for _, reg := range regions {
			mid := (reg.From + reg.To) / 2
			if p, _ := conds.Judge([]float64{mid}); string(p) != reg.Outcome {
				t.Errorf("%s: the band %g to %g is shaded %s; the conditions give %s at %g", res.Name, reg.From, reg.To, reg.Outcome, p, mid)
			}
		}
	}
	if got := b.Text(`section[data-metric="p99-latency-bad"] .would`); !strings.Contains(got, "would have failed") {
		t.Errorf("the dry-run metric is not marked as one that would have failed: %q", got)
	}
	if got := b.Text(`section[data-metric="success-rate"] pre.curl`); !strings.Contains(got, prom.URL+"/api/v1/query") {
		t.Errorf("the curl does not query the Prometheus: %q", got)
	}
	b.CheckSelfContained()
	b.Screenshot("report-run.png")
}
