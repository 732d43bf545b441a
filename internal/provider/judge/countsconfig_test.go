package judge_test

import (
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider/judge"
)

const validCountsYAML = `      counts:
        canary: {bad: 'sum(errors_total{track="canary"})', total: 'sum(requests_total{track="canary"})'}
        baseline: {bad: 'sum(errors_total{track="baseline"})', total: 'sum(requests_total{track="baseline"})'}
`

// TestCountsValidate checks a counts metric's rules as a document's
// problems, on their paths: missing counters, the sample judge's fields
// mixed in, alpha, tolerance and direction out of their ranges.
func TestCountsValidate(t *testing.T) {
	const p = "metrics[0].provider.judge"
	sample := func(field string) api.FieldError {
		return fe(p+"."+field, field+" is the sample judge's and does not apply with counts, which counts events from the analysis' start "+
			"with the four counters of counts.canary and counts.baseline")
	}
	tests := []struct {
		name string
		yaml string
		want []api.FieldError
	}{
		{"valid", validCountsYAML, nil},
		{"valid with every field of counts", validCountsYAML + "      alpha: 0.01\n      tolerance: 1.2\n      direction: decrease\n", nil},
		{"alpha 0.5 is the largest", validCountsYAML + "      alpha: 0.5\n", nil},
		{"missing counters", "      counts:\n        canary: {bad: errors_total}\n", []api.FieldError{
			fe(p+".counts.canary.total", "total must be specified"),
			fe(p+".counts.baseline.bad", "bad must be specified"),
			fe(p+".counts.baseline.total", "total must be specified"),
		}},
		{"mixed with the sample judge's queries", validCountsYAML + "      canary: latency\n      baseline: latency\n      lookback: 30m\n      step: 1m\n",
			[]api.FieldError{sample("canary"), sample("baseline"), sample("lookback"), sample("step")}},
		{"mixed with the sample judge's statistics", validCountsYAML +
			"      control: {offset: 1h}\n      nanStrategy: replace\n      removeOutliers: true\n      outlierFactor: 2\n      confidenceLevel: 0.9\n      effectSize: {measure: cles}\n      mustHaveData: true\n",
			[]api.FieldError{sample("control"), sample("nanStrategy"), sample("removeOutliers"), sample("outlierFactor"),
				sample("confidenceLevel"), sample("effectSize"), sample("mustHaveData")}},
		{"alpha above 0.5", validCountsYAML + "      alpha: 0.6\n", []api.FieldError{
			fe(p+".alpha", "alpha must be above 0 and at most 0.5 (default 0.05), got 0.6")}},
		{"alpha 0", validCountsYAML + "      alpha: 0\n", []api.FieldError{
			fe(p+".alpha", "alpha must be above 0 and at most 0.5 (default 0.05), got 0")}},
		{"tolerance 0", validCountsYAML + "      tolerance: 0\n", []api.FieldError{
			fe(p+".tolerance", "tolerance with counts is the rate ratio canary/baseline that is still fine, a positive number (default 1; 1.2 tolerates 20% more), got 0")}},
		{"tolerance negative", validCountsYAML + "      tolerance: -1\n", []api.FieldError{
			fe(p+".tolerance", "tolerance with counts is the rate ratio canary/baseline that is still fine, a positive number (default 1; 1.2 tolerates 20% more), got -1")}},
		{"direction either is the sample judge's", validCountsYAML + "      direction: either\n", []api.FieldError{
			fe(p+".direction", `direction with counts must be one of increase, decrease (the change of the rate of bad events that fails), got "either"`)}},
		{"alpha without counts", validJudgeYAML + "      alpha: 0.05\n", []api.FieldError{
			fe(p+".alpha", "alpha applies only to counts (provider.judge.counts), whose test it bounds; the sample judge's is confidenceLevel")}},
	}
	for _, tt := range tests {
		_, _, errs := compile.ParseAndCompile([]byte(judgeSpec(tt.yaml, "")), nil, promAndJudge(noSources))
		checkErrors(t, tt.name, errs, tt.want)
	}
}

// TestCountsDefaultConditions: a counts metric that sets no condition is
// judged by its decision, a sample judge's by its classification.
func TestCountsDefaultConditions(t *testing.T) {
	for _, tt := range []struct {
		yaml             string
		success, failure string
	}{
		{validCountsYAML, judge.DefaultCountsSuccessCondition, judge.DefaultCountsFailureCondition},
		{validJudgeYAML, judge.DefaultSuccessCondition, judge.DefaultFailureCondition},
	} {
		_, compiled, errs := compile.ParseAndCompile([]byte(judgeSpec(tt.yaml, "")), nil, promAndJudge(noSources))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if m := compiled.Plan.Metrics[0]; m.SuccessCondition != tt.success || m.FailureCondition != tt.failure || !m.Compared {
			t.Errorf("conditions %q, %q (compared %v), want %q, %q", m.SuccessCondition, m.FailureCondition, m.Compared, tt.success, tt.failure)
		}
	}
}
