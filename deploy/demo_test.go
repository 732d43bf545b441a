package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// demoSeries is the demo's backtest over HTTP, as canaryd answered it
// (POST /v1/templates/success-rate/backtests?…&every=10m on the demo's
// data): nine analyses, three of them Failed, each Failed one with a
// Failed metric and two Failed measurements.
const demoSeries = "testdata/demo-backtest-series.json"

// TestDemoCountsAnalyses runs the demo's count of the analyses that would
// have failed (deploy/demo/count.sh, which demo.sh sources) on a real
// answer and checks it against the answer's analyses read as JSON: the
// analyses count, not their metrics and measurements, which carry a
// "phase" of their own.
func TestDemoCountsAnalyses(t *testing.T) {
	data, err := os.ReadFile(demoSeries)
	if err != nil {
		t.Fatal(err)
	}
	var series struct {
		Results []struct {
			Analysis struct {
				Phase string `json:"phase"`
			} `json:"analysis"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &series); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range series.Results {
		if r.Analysis.Phase == "Failed" {
			want++
		}
	}
	if want == 0 || strings.Count(string(data), `"phase":"Failed"`) == want {
		t.Fatalf("%s must hold Failed analyses whose metrics and measurements are Failed too", demoSeries)
	}
	out, err := exec.Command("bash", "-c", `. demo/count.sh && failed_analyses "$1"`, "bash", demoSeries).CombinedOutput()
	if err != nil {
		t.Fatalf("failed_analyses: %v\n%s", err, out)
	}
	if got, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || got != want {
		t.Errorf("failed_analyses counts %q, want %d (of %d analyses)", out, want, len(series.Results))
	}
	out, err = exec.Command("bash", "-c", `. demo/count.sh && failed_analyses /dev/null`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("failed_analyses of nothing: %q, %v; want 0", out, err)
	}

	script, err := os.ReadFile("demo/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `caught_http="$(failed_analyses "$work/backtest-http.json")"`) {
		t.Error("demo.sh does not count the HTTP backtest's analyses with failed_analyses")
	}
}
