package compile

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
	judgesource "github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

// judgeSpec is a bare spec of one judge metric whose provider.judge body is
// judgeYAML (indented for its place), and extra top-level YAML.
func judgeSpec(judgeYAML, extra string) string {
	return "metrics:\n- name: latency\n  provider:\n    judge:\n" + judgeYAML + extra
}

func TestCompileJudge(t *testing.T) {
	const body = `      address: http://prometheus:9090
      timeout: 5
      headers: [{key: X-Scope-OrgID, value: team-a}]
      canary: canary_latency
      lookback: 30m
      step: 15s
`
	tests := []struct {
		name         string
		input        string
		wantQueries  []prometheus.Metric
		wantMetadata map[string]string
		wantSuccess  string
		wantFailure  string
		wantPhase    api.Phase
	}{
		{
			name:  "baseline query, default conditions",
			input: judgeSpec(body+"      baseline: baseline_latency\n", ""),
			wantQueries: []prometheus.Metric{
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "canary_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m0s")`, End: "now()", Step: "15s"}},
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "baseline_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m0s")`, End: "now()", Step: "15s"}},
			},
			wantMetadata: map[string]string{"ResolvedCanaryQuery": "canary_latency", "ResolvedBaselineQuery": "baseline_latency"},
			wantSuccess:  judgesource.DefaultSuccessCondition, wantFailure: judgesource.DefaultFailureCondition,
			wantPhase: api.PhaseFailed,
		},
		{
			name:  "control window",
			input: judgeSpec(body+"      control: {offset: 1h}\n", ""),
			wantQueries: []prometheus.Metric{
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "canary_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m0s")`, End: "now()", Step: "15s"}},
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "canary_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("1h30m0s")`, End: `now() - duration("1h0m0s")`, Step: "15s"}},
			},
			wantMetadata: map[string]string{"ResolvedCanaryQuery": "canary_latency", "ResolvedBaselineQuery": "canary_latency", "BaselineOffset": "1h"},
			wantSuccess:  judgesource.DefaultSuccessCondition, wantFailure: judgesource.DefaultFailureCondition,
			// Both sides are the canary query, which the fake answers alike.
			wantPhase: api.PhaseSuccessful,
		},
		{
			name:  "the spec's own condition replaces both defaults",
			input: "metrics:\n- name: latency\n  successCondition: result.classification != 'Low'\n  provider:\n    judge:\n" + body + "      baseline: baseline_latency\n",
			wantQueries: []prometheus.Metric{
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "canary_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m0s")`, End: "now()", Step: "15s"}},
				{Address: "http://prometheus:9090", Timeout: ptr(int64(5)), Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}}, Query: "baseline_latency",
					RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("30m0s")`, End: "now()", Step: "15s"}},
			},
			wantMetadata: map[string]string{"ResolvedCanaryQuery": "canary_latency", "ResolvedBaselineQuery": "baseline_latency"},
			wantSuccess:  "result.classification != 'Low'",
			wantPhase:    api.PhaseSuccessful,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources := &recordingSources{}
			_, compiled, errs := ParseAndCompile([]byte(tt.input), nil, Builtin(sources.source))
			if len(errs) > 0 {
				t.Fatalf("unexpected problems:\n%s", formatErrors(errs))
			}
			if !reflect.DeepEqual(sources.asked, tt.wantQueries) {
				t.Errorf("Prometheus metrics:\ngot  %+v\nwant %+v", sources.asked, tt.wantQueries)
			}
			m := compiled.Plan.Metrics[0]
			if !reflect.DeepEqual(m.Metadata, tt.wantMetadata) {
				t.Errorf("metadata: got %v, want %v", m.Metadata, tt.wantMetadata)
			}
			if m.SuccessCondition != tt.wantSuccess || m.FailureCondition != tt.wantFailure {
				t.Errorf("conditions: got %q / %q, want %q / %q", m.SuccessCondition, m.FailureCondition, tt.wantSuccess, tt.wantFailure)
			}
			if !m.Compared || m.Group != judge.DefaultGroup || compiled.Plan.Scoring != nil {
				t.Errorf("compared %v, group %q, scoring %v", m.Compared, m.Group, compiled.Plan.Scoring)
			}
			obs := m.Source.Measure(context.Background(), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			phase, err := m.Judge.Judge(obs.Value)
			if err != nil || phase != tt.wantPhase {
				t.Errorf("measured %s: phase %s (%v), want %s", obs.Display, phase, err, tt.wantPhase)
			}
			if obs.Metadata[judgesource.MetadataCanaryWindow] != "2026-01-02T02:34:05Z/2026-01-02T03:04:05Z" {
				t.Errorf("canary window: %q", obs.Metadata[judgesource.MetadataCanaryWindow])
			}
		})
	}
}

func TestCompileJudgeProblems(t *testing.T) {
	const input = `metrics:
- name: latency
  provider:
    judge:
      address: http://elsewhere:9090
      canary: " "
      baseline: bad(
      lookback: 30m
      step: 15s
`
	sources := &recordingSources{problemsFor: func(m *prometheus.Metric) []api.FieldError {
		errs := []api.FieldError{fe("provider.prometheus.address", "not allowed")}
		if strings.TrimSpace(m.Query) == "" {
			errs = append(errs, fe("provider.prometheus.query", "query is required"))
		}
		if m.Query == "bad(" {
			errs = append(errs, fe("provider.prometheus.query", "bad query"))
		}
		return errs
	}}
	_, _, errs := ParseAndCompile([]byte(input), nil, Builtin(sources.source))
	checkErrors(t, "problems on the judge's fields, each once", errs, []api.FieldError{
		fe("metrics[0].provider.judge.baseline", "the query does not parse as PromQL: 1:5: parse error: unclosed left parenthesis"),
		fe("metrics[0].provider.judge.address", "not allowed"),
		fe("metrics[0].provider.judge.canary", "query is required"),
		fe("metrics[0].provider.judge.baseline", "bad query"),
	})
}

func TestCompileScoring(t *testing.T) {
	input := judgeSpec("      canary: canary_latency\n      baseline: baseline_latency\n      lookback: 30m\n      step: 15s\n"+"      group: latency\n      critical: true\n", "- name: plain\n  provider: {prometheus: {query: up}}\n") +
		"scoring: {groups: {latency: 60}, pass: 90}\n"
	sources := &recordingSources{}
	_, compiled, errs := ParseAndCompile([]byte(input), nil, Builtin(sources.source))
	if len(errs) > 0 {
		t.Fatalf("unexpected problems:\n%s", formatErrors(errs))
	}
	want := &judge.ScoreConfig{GroupWeights: map[string]float64{"latency": 60}, Pass: 90, Marginal: 75}
	if !reflect.DeepEqual(compiled.Plan.Scoring, want) {
		t.Errorf("scoring: got %+v, want %+v", compiled.Plan.Scoring, want)
	}
	if m := compiled.Plan.Metrics; m[0].Group != "latency" || !m[0].Compared || m[1].Group != judge.DefaultGroup || m[1].Compared {
		t.Errorf("metrics: %+v", m)
	}
}

// TestJudgeSpecFixtures compiles every spec of testdata/judge-specs, the
// examples of docs/judge.md.
func TestJudgeSpecFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "judge-specs", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources := &recordingSources{}
		if _, _, errs := ParseAndCompile(data, nil, Builtin(sources.source)); len(errs) > 0 {
			t.Errorf("%s:\n%s", f, formatErrors(errs))
		}
	}
}

// The judge's provider checks the judge's configuration
// (judge.Metric.Validate in internal/provider/judge), once, on the metric's path, and builds no
// source from a configuration it refuses.
func TestCompileChecksTheJudgesConfiguration(t *testing.T) {
	sources := &recordingSources{}
	_, _, errs := ParseAndCompile([]byte(judgeSpec("      canary: c\n      baseline: b\n      lookback: 30m\n      step: 1h\n", "")), nil, Builtin(sources.source))
	checkErrors(t, "step longer than lookback", errs, []api.FieldError{
		fe("metrics[0].provider.judge.step", "step (1h) must not be longer than lookback (30m)"),
	})
	if len(sources.asked) > 0 {
		t.Errorf("Prometheus was asked for %+v", sources.asked)
	}
}

// spec's scoring defaults are the judge's: spec does not import it.
func TestScoringDefaultsAreTheJudges(t *testing.T) {
	if spec.DefaultPass != judge.DefaultPassThreshold || spec.DefaultMarginal != judge.DefaultMarginalThreshold || spec.DefaultGroup != judge.DefaultGroup {
		t.Errorf("spec's defaults %v, %v, %q; the judge's %v, %v, %q", spec.DefaultPass, spec.DefaultMarginal, spec.DefaultGroup,
			judge.DefaultPassThreshold, judge.DefaultMarginalThreshold, judge.DefaultGroup)
	}
}
