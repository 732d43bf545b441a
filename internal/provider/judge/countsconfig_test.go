package judge_test

import (
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
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
		{"a history of a day at the default step", validCountsYAML + "        history: {lookback: 24h}\n", nil},
		{"a history of 11,000 intervals, the most", validCountsYAML + "        history: {lookback: 11000m, step: 1m}\n", nil},
		{"a history without lookback", validCountsYAML + "        history: {step: 1m}\n", []api.FieldError{
			fe(p+".counts.history.lookback", "lookback must be specified")}},
		{"a history of 0 at a negative step", validCountsYAML + "        history: {lookback: 0s, step: -1m}\n", []api.FieldError{
			fe(p+".counts.history.lookback", `lookback must be a positive duration, got "0s"`),
			fe(p+".counts.history.step", `step must be a positive duration, got "-1m"`)}},
		{"a history whose step is not a duration", validCountsYAML + "        history: {lookback: 1d}\n", []api.FieldError{
			fe(p+".counts.history.lookback", `lookback must be a duration such as 30s, 10m or 1h: time: unknown unit "d" in duration "1d"`)}},
		{"a history shorter than its step", validCountsYAML + "        history: {lookback: 1m}\n", []api.FieldError{
			fe(p+".counts.history.step", "step 5m0s (the default) must not be longer than the history's lookback 1m")}},
		{"a history of more intervals than Prometheus returns points", validCountsYAML + "        history: {lookback: 11001m, step: 1m}\n", []api.FieldError{
			fe(p+".counts.history.step", "a history of 11001m at a step of 1m is 11001 intervals, more than the 11000 points a series Prometheus returns: make step longer or lookback shorter")}},
		{"a history's unknown field", validCountsYAML + "        history: {lookback: 24h, steps: 1m}\n", []api.FieldError{
			fe(p+".counts.history.steps", "unknown field")}},
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

// TestCountsHistoryMaxResultValues: a history of more points a series
// than the datasource's --max-result-values is a problem when the spec is
// compiled, before anything is sent.
func TestCountsHistoryMaxResultValues(t *testing.T) {
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: "http://127.0.0.1:9"}}, MaxResultValues: 288})
	if err != nil {
		t.Fatal(err)
	}
	const field = "metrics[0].provider.judge.counts.history.step"
	for history, want := range map[string][]api.FieldError{
		"        history: {lookback: 1435m}\n": nil, // 287 intervals, 288 points
		"        history: {lookback: 24h}\n": {fe(field,
			"a history of 24h at a step of 5m0s (the default) is 289 points a series, more than the 288 values a query may return (--max-result-values): make step longer or lookback shorter")},
	} {
		_, _, errs := compile.ParseAndCompile([]byte(judgeSpec(validCountsYAML+history, "")), nil, promAndJudge(p.Source))
		checkErrors(t, history, errs, want)
	}
}
