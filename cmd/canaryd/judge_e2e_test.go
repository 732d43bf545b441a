package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// judgeSpecs is where docs/judge.md's examples live.
const judgeSpecs = "../../testdata/judge-specs/"

// TestRunJudge runs the judge examples with `canaryd run` against
// promtest's default fixture, the demo's data: echo-canary is 30% slower
// than echo-stable, far under 500 ms, and as slow as it was an hour ago.
func TestRunJudge(t *testing.T) {
	prom := promtest.Start(t)
	tests := []struct {
		name        string
		file        string
		args        []string
		wantCode    int
		wantPhase   api.Phase
		wantMessage string
		// wantValues are each metric's measurement values, by prefix.
		wantValues map[string]string
		// wantClass is each judge metric's classification.
		wantClass  map[string]string
		wantScore  *api.Score
		wantStderr []string
	}{
		{
			name: "the slower canary fails the judge and passes the static threshold", file: "latency-vs-stable.yaml",
			wantCode: 1, wantPhase: api.PhaseFailed,
			wantMessage: `Metric "latency-vs-stable" assessed Failed due to failed (1) > failureLimit (0)`,
			wantValues:  map[string]string{"latency-vs-stable": "High (p=", "p99-under-500ms": "["},
			wantClass:   map[string]string{"latency-vs-stable": "High"},
			wantStderr: []string{
				"analysis started: 2 metric(s): latency-vs-stable (once), p99-under-500ms (once)",
				" latency-vs-stable value=High (p=", "measurement=Failed metric=Failed",
				" p99-under-500ms value=[",
			},
		},
		{
			name: "the stable version against itself passes", file: "latency-vs-stable.yaml", args: []string{"--arg", "canary=echo-stable"},
			wantCode: 0, wantPhase: api.PhaseSuccessful,
			wantValues: map[string]string{"latency-vs-stable": "Pass (p=1, shift=+0, ratio=1.00)"},
			wantClass:  map[string]string{"latency-vs-stable": "Pass"},
		},
		{
			name: "the canary against itself an hour ago passes", file: "latency-control.yaml",
			wantCode: 0, wantPhase: api.PhaseSuccessful,
			wantValues: map[string]string{"latency-vs-an-hour-ago": "Pass (p="},
			wantClass:  map[string]string{"latency-vs-an-hour-ago": "Pass"},
		},
		{
			name: "a canary that serves nothing has no data: Inconclusive", file: "latency-control.yaml", args: []string{"--arg", "canary=echo-nothing"},
			wantCode: 2, wantPhase: api.PhaseInconclusive,
			wantMessage: `Metric "latency-vs-an-hour-ago" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)`,
			wantValues:  map[string]string{"latency-vs-an-hour-ago": "Nodata (canary n=0, baseline n=0)"},
			wantClass:   map[string]string{"latency-vs-an-hour-ago": "Nodata"},
		},
		{
			name: "the scored canaryd template: 0.7 × 50 + 0.3 × 100", file: "scored.yaml",
			wantCode: 1, wantPhase: api.PhaseFailed,
			wantMessage: "Canary score 65 of 100, Fail: below the marginal threshold 75",
			wantClass:   map[string]string{"latency-vs-stable": "High", "latency-vs-an-hour-ago": "Pass"},
			wantScore: &api.Score{Score: 65, Verdict: "Fail", Pass: 95, Marginal: 75,
				Groups: map[string]float64{"latency": 50, "default": 100},
				Reason: "score 65: below the marginal threshold 75",
				Metrics: []api.ScoredMetric{
					{Name: "latency-vs-stable", Group: "latency", Classification: "High"},
					{Name: "latency-vs-an-hour-ago", Group: "latency", Classification: "Pass"},
					{Name: "success-rate", Group: "default", Classification: "Pass"},
				}},
			wantStderr: []string{"analysis Failed: Canary score 65 of 100, Fail: below the marginal threshold 75"},
		},
		{
			name: "the scored template with the stable version as the canary passes", file: "scored.yaml", args: []string{"--arg", "canary=echo-stable"},
			wantCode: 0, wantPhase: api.PhaseSuccessful,
			wantMessage: "Canary score 100 of 100, Pass: at or above the pass threshold 95",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "-f", judgeSpecs + tt.file, "--prometheus-url", prom.URL}, tt.args...)
			got := runCLI(t, "", args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstderr:\n%s", got.code, tt.wantCode, got.stderr)
			}
			a := got.analysis
			if a.Phase != tt.wantPhase || (tt.wantMessage != "" && a.Message != tt.wantMessage) {
				t.Errorf("got (%s, %q), want (%s, %q)", a.Phase, a.Message, tt.wantPhase, tt.wantMessage)
			}
			for _, r := range a.MetricResults {
				if len(r.Measurements) == 0 {
					t.Errorf("%s: not measured", r.Name)
					continue
				}
				ms := r.Measurements[len(r.Measurements)-1]
				if want, ok := tt.wantValues[r.Name]; ok && !strings.HasPrefix(ms.Value, want) {
					t.Errorf("%s: value %q, want %q…", r.Name, ms.Value, want)
				}
				if want, ok := tt.wantClass[r.Name]; ok && ms.Metadata["classification"] != want {
					t.Errorf("%s: classification %q, want %q (%s)", r.Name, ms.Metadata["classification"], want, ms.Metadata["reason"])
				}
			}
			if tt.wantScore != nil {
				gotScore, _ := json.Marshal(a.Score)
				wantScore, _ := json.Marshal(tt.wantScore)
				if string(gotScore) != string(wantScore) {
					t.Errorf("score\n got %s\nwant %s", gotScore, wantScore)
				}
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
				}
			}
		})
	}
}

// TestJudgeInArgoDocument: an argoproj.io document must not use the judge,
// which Argo Rollouts could not run; every problem is listed together, on
// its own line.
func TestJudgeInArgoDocument(t *testing.T) {
	got := runCLI(t, `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: latency}
spec:
  scoring: {pass: 90}
  metrics:
  - name: latency
    successCondition: result.classification ==
    provider:
      judge: {canary: a, baseline: b, lookback: 30m, step: 15s}
`, "validate", "-f", "-")
	if got.code != exitUsage {
		t.Errorf("exit code %d, want %d", got.code, exitUsage)
	}
	for _, want := range []string{
		"canaryd validate: 3 problem(s) in 1 of 1 document(s)",
		"<stdin>:5: scoring: scoring is a canaryd extension that Argo Rollouts does not have",
		"<stdin>:10: metrics[0].provider.judge: provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document",
		"<stdin>:8: metrics[0].successCondition: ",
	} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
		}
	}
}

// TestBacktestJudge backtests the judge against the demo's data: wherever
// it starts, the canary is High against stable.
func TestBacktestJudge(t *testing.T) {
	prom := promtest.Start(t)
	got := runCLI(t, "", "backtest", "-f", judgeSpecs+"latency-vs-stable.yaml", "--prometheus-url", prom.URL,
		"--start", "-50m", "--end", "+90m", "--every", "20m")
	if got.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", got.code, got.stderr)
	}
	var series struct {
		Results []struct {
			Analysis api.Analysis `json:"analysis"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &series); err != nil {
		t.Fatalf("stdout: %v\n%s", err, got.stdout)
	}
	if len(series.Results) != 7 {
		t.Fatalf("%d analyses, want 7:\n%s", len(series.Results), got.stderr)
	}
	for _, r := range series.Results {
		judged := r.Analysis.MetricResults[0].Measurements[0]
		if r.Analysis.Phase != api.PhaseFailed || judged.Metadata["classification"] != "High" {
			t.Errorf("started %s: %s, %s, want Failed, High", r.Analysis.StartedAt, r.Analysis.Phase, judged.Value)
		}
	}
}
