package judge_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// validJudge is a judge configuration that passes every rule.
func validJudge() *judge.Metric {
	return &judge.Metric{Canary: "canary_latency", Baseline: "baseline_latency", Lookback: "30m", Step: "15s"}
}

func noSources(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return nil, nil, nil
}

func fe(field, msg string) api.FieldError { return api.FieldError{Field: field, Message: msg} }

func ptr[T any](v T) *T { return &v }

// checkErrors compares problems in any order: those of the document's
// shape come before those of compiling it.
func checkErrors(t *testing.T, name string, got, want []api.FieldError) {
	t.Helper()
	order := func(a, b api.FieldError) int { return strings.Compare(a.Field+a.Message, b.Field+b.Message) }
	got, want = slices.SortedFunc(slices.Values(got), order), slices.SortedFunc(slices.Values(want), order)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot  %v\nwant %v", name, got, want)
	}
}

// judgeSpec is a bare spec of one judge metric whose provider.judge body is
// judgeYAML (indented for its place), and extra top-level YAML.
func judgeSpec(judgeYAML, extra string) string {
	return "metrics:\n- name: latency\n  provider:\n    judge:\n" + judgeYAML + extra
}

const validJudgeYAML = `      canary: canary_latency
      baseline: baseline_latency
      lookback: 30m
      step: 15s
`

// TestDecode reads every field of a judge's configuration, and reports
// every unknown field and wrong type on its path, with the document's
// other problems.
func TestDecode(t *testing.T) {
	every := `      address: http://prometheus:9090
      timeout: 10
      insecure: true
      headers: [{key: X-Scope-OrgID, value: team-a}]
      authentication: {basicAuth: {username: u, password: p}}
      canary: canary_latency
      control: {offset: 1h}
      lookback: 30m
      step: 15s
      direction: increase
      nanStrategy: replace
      removeOutliers: true
      outlierFactor: 2.5
      confidenceLevel: 0.95
      tolerance: 0.1
      effectSize: {measure: cles, allowedIncrease: 0.6, allowedDecrease: 0.4, criticalIncrease: 0.8, criticalDecrease: 0.2}
      critical: true
      group: latency
`
	doc, compiled, errs := compile.ParseAndCompile([]byte(judgeSpec(every, "scoring: {groups: {latency: 100}}\n")), nil, promAndJudge(noSources))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got, errs := judge.Decode(doc.Spec.Metrics[0].Provider.Judge)
	want := &judge.Metric{
		Address: "http://prometheus:9090", Timeout: ptr(int64(10)), Insecure: true,
		Headers:        []prometheus.Header{{Key: "X-Scope-OrgID", Value: "team-a"}},
		Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "u", Password: "p"}},
		Canary:         "canary_latency", Control: &judge.Control{Offset: "1h"}, Lookback: "30m", Step: "15s",
		Direction: "increase", NaNStrategy: "replace", RemoveOutliers: true, OutlierFactor: ptr(2.5),
		ConfidenceLevel: ptr(0.95), Tolerance: ptr(0.1),
		EffectSize: &judge.EffectSize{Measure: "cles", AllowedIncrease: ptr(0.6), AllowedDecrease: ptr(0.4),
			CriticalIncrease: ptr(0.8), CriticalDecrease: ptr(0.2)},
		Critical: true, Group: "latency",
	}
	if len(errs) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("judge:\ngot  %+v (%v)\nwant %+v", got, errs, want)
	}
	if m := compiled.Plan.Metrics[0]; !m.Compared || m.Group != "latency" || m.SuccessCondition != judge.DefaultSuccessCondition {
		t.Errorf("compiled: %+v", m)
	}

	for _, tt := range []struct {
		name, input string
		want        []api.FieldError
	}{
		{name: "unknown fields, each with its path", input: judgeSpec(validJudgeYAML+"      effectSize: {mesure: cles}\n      control: {ofset: 1h}\n", "scoring: {group: {a: 1}}\n"), want: []api.FieldError{
			fe("metrics[0].provider.judge.control.ofset", "unknown field"),
			fe("metrics[0].provider.judge.effectSize.mesure", "unknown field"),
			fe("scoring.group", "unknown field"),
		}},
		{name: "in an Argo document, with an unknown field", input: "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: t}\nspec:\n  " +
			strings.ReplaceAll(judgeSpec(validJudgeYAML+"      lookbak: 1h\n", ""), "\n", "\n  "), want: []api.FieldError{
			fe("metrics[0].provider.judge.lookbak", "unknown field"),
			fe("metrics[0].provider.judge", "provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
		}},
		{name: "wrong types, with the document's, which keep it from being compiled", input: judgeSpec("      canary: c\n      baseline: b\n      step: 15s\n      confidenceLevel: high\n      tolerance: [1]\n      critical: \"yes\"\n      lookback: 30\n", "scoring: {groups: {a: x}, pass: true}\n"), want: []api.FieldError{
			fe("metrics[0].provider.judge.confidenceLevel", "must be a number, got a string"),
			fe("metrics[0].provider.judge.critical", "must be true or false, got a string"),
			fe("metrics[0].provider.judge.lookback", "must be a string, got a number (quote the value in YAML)"),
			fe("metrics[0].provider.judge.tolerance", "must be a number, got a list"),
			fe("scoring.groups.a", "must be a number, got a string"),
			fe("scoring.pass", "must be a number, got a boolean"),
		}},
		{name: "integers are numbers", input: judgeSpec(validJudgeYAML+"      confidenceLevel: 0\n", ""), want: []api.FieldError{
			fe("metrics[0].provider.judge.confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default 0.98), got 0"),
		}},
	} {
		_, _, errs := compile.ParseAndCompile([]byte(tt.input), nil, promAndJudge(noSources))
		checkErrors(t, tt.name, errs, tt.want)
	}
}

func TestValidate(t *testing.T) {
	const p = "metrics[0].provider.judge."
	tests := []struct {
		name    string
		edit    func(j *judge.Metric)
		scoring bool
		want    []api.FieldError
	}{
		{name: "valid", edit: func(j *judge.Metric) {}},
		{name: "valid control", edit: func(j *judge.Metric) { j.Baseline, j.Control = "", &judge.Control{Offset: "24h"} }},
		{name: "valid with every option", scoring: true, edit: func(j *judge.Metric) {
			j.Direction, j.NaNStrategy, j.RemoveOutliers, j.OutlierFactor = "decrease", "remove", true, ptr(1.5)
			j.ConfidenceLevel, j.Tolerance, j.MustHaveData, j.Critical, j.Group = ptr(0.9), ptr(0.5), true, true, "g"
			j.EffectSize = &judge.EffectSize{Measure: "meanRatio", AllowedIncrease: ptr(1.1), AllowedDecrease: ptr(0.9), CriticalIncrease: ptr(1.5), CriticalDecrease: ptr(0.5)}
		}},
		{name: "required fields", edit: func(j *judge.Metric) { j.Canary, j.Lookback, j.Step = "", "", "" }, want: []api.FieldError{
			fe(p+"canary", "canary must be specified"),
			fe(p+"lookback", "lookback must be specified"),
			fe(p+"step", "step must be specified"),
		}},
		{name: "neither baseline nor control", edit: func(j *judge.Metric) { j.Baseline = "  " }, want: []api.FieldError{
			fe(p+"baseline", "baseline or control must be specified: a baseline query to compare the canary query with, or control.offset to compare the canary query with itself that long before"),
		}},
		{name: "both baseline and control", edit: func(j *judge.Metric) { j.Control = &judge.Control{Offset: "1h"} }, want: []api.FieldError{
			fe(p+"control", "baseline and control cannot both be specified: control compares the canary query with itself control.offset earlier, instead of with a baseline query"),
		}},
		{name: "control without offset", edit: func(j *judge.Metric) { j.Baseline, j.Control = "", &judge.Control{} }, want: []api.FieldError{
			fe(p+"control.offset", "offset must be specified"),
		}},
		{name: "bad durations", edit: func(j *judge.Metric) {
			j.Baseline, j.Control, j.Lookback, j.Step = "", &judge.Control{Offset: "-1h"}, "half an hour", "0s"
		}, want: []api.FieldError{
			fe(p+"lookback", `lookback must be a duration such as 30s, 10m or 1h: time: invalid duration "half an hour"`),
			fe(p+"step", `step must be a positive duration, got "0s"`),
			fe(p+"control.offset", `offset must be a positive duration, got "-1h"`),
		}},
		{name: "step longer than lookback", edit: func(j *judge.Metric) { j.Step = "1h" }, want: []api.FieldError{
			fe(p+"step", "step (1h) must not be longer than lookback (30m)"),
		}},
		{name: "too many points", edit: func(j *judge.Metric) { j.Lookback, j.Step = "24h", "1s" }, want: []api.FieldError{
			fe(p+"step", "lookback 24h at step 1s is 86401 points per series, more than the 11000 Prometheus allows: make step longer"),
		}},
		{name: "as many points as allowed", edit: func(j *judge.Metric) { j.Lookback, j.Step = "10999s", "1s" }},
		{name: "negative timeout", edit: func(j *judge.Metric) { j.Timeout = ptr(int64(-1)) }, want: []api.FieldError{
			fe(p+"timeout", "timeout should not be negative"),
		}},
		{name: "bad enumerations", edit: func(j *judge.Metric) {
			j.Direction, j.NaNStrategy, j.EffectSize = "up", "drop", &judge.EffectSize{Measure: "ratio"}
		}, want: []api.FieldError{
			fe(p+"direction", `direction must be one of increase, decrease, either, got "up"`),
			fe(p+"nanStrategy", `nanStrategy must be one of remove, replace, got "drop"`),
			fe(p+"effectSize.measure", `measure must be one of meanRatio, cles, got "ratio"`),
		}},
		{name: "outlierFactor without removeOutliers", edit: func(j *judge.Metric) { j.OutlierFactor = ptr(2.0) }, want: []api.FieldError{
			fe(p+"outlierFactor", "outlierFactor applies only with removeOutliers: true"),
		}},
		{name: "outlierFactor zero", edit: func(j *judge.Metric) { j.RemoveOutliers, j.OutlierFactor = true, ptr(0.0) }, want: []api.FieldError{
			fe(p+"outlierFactor", "outlierFactor must be a positive number (default 3), got 0"),
		}},
		{name: "confidenceLevel as a percentage", edit: func(j *judge.Metric) { j.ConfidenceLevel = ptr(98.0) }, want: []api.FieldError{
			fe(p+"confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default 0.98), got 98 (a fraction: 0.98 for 98%)"),
		}},
		{name: "confidenceLevel 1", edit: func(j *judge.Metric) { j.ConfidenceLevel = ptr(1.0) }, want: []api.FieldError{
			fe(p+"confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default 0.98), got 1"),
		}},
		{name: "tolerance zero", edit: func(j *judge.Metric) { j.Tolerance = ptr(0.0) }, want: []api.FieldError{
			fe(p+"tolerance", "tolerance must be a positive number (default 0.25), got 0"),
		}},
		{name: "meanRatio thresholds", edit: func(j *judge.Metric) {
			j.EffectSize = &judge.EffectSize{AllowedIncrease: ptr(0.0), AllowedDecrease: ptr(-1.0)}
		}, want: []api.FieldError{
			fe(p+"effectSize.allowedIncrease", "allowedIncrease must be a positive ratio of the means (1.1 is 10% higher, 0.9 10% lower; default 1), got 0"),
			fe(p+"effectSize.allowedDecrease", "allowedDecrease must be a positive ratio of the means (1.1 is 10% higher, 0.9 10% lower; default 1), got -1"),
		}},
		{name: "cles thresholds are probabilities", edit: func(j *judge.Metric) {
			j.EffectSize = &judge.EffectSize{Measure: "cles", AllowedIncrease: ptr(1.1), AllowedDecrease: ptr(1.0)}
		}, want: []api.FieldError{
			fe(p+"effectSize.allowedIncrease", "allowedIncrease must be a probability above 0 and at most 1 with measure cles (default 0.5), got 1.1"),
		}},
		{name: "critical thresholds without critical", scoring: true, edit: func(j *judge.Metric) {
			j.EffectSize = &judge.EffectSize{CriticalIncrease: ptr(1.5), CriticalDecrease: ptr(0.5)}
		}, want: []api.FieldError{
			fe(p+"effectSize.criticalIncrease", "criticalIncrease applies only to a critical metric (critical: true)"),
			fe(p+"effectSize.criticalDecrease", "criticalDecrease applies only to a critical metric (critical: true)"),
		}},
		{name: "mustHaveData with nanStrategy replace", edit: func(j *judge.Metric) { j.MustHaveData, j.NaNStrategy = true, "replace" }, want: []api.FieldError{
			fe(p+"mustHaveData", "mustHaveData has no effect with nanStrategy replace, under which a sample without data passes"),
		}},
		{name: "critical and group without scoring", edit: func(j *judge.Metric) { j.Critical, j.Group = true, "latency" }, want: []api.FieldError{
			fe(p+"critical", "critical applies only when the spec declares scoring (without it, any failing metric fails the analysis already): declare scoring, or remove critical"),
			fe(p+"group", "group applies only when the spec declares scoring: declare scoring, or remove group"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := validJudge()
			tt.edit(j)
			config, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			input := `{"metrics": [{"name": "latency", "provider": {"judge": ` + string(config) + `}}]`
			if tt.scoring {
				input += `, "scoring": {}`
			}
			// The judge's provider checks its configuration
			// (judge.Metric.Validate) when the spec is compiled; spec's
			// Validate what needs the spec (critical, group).
			_, _, errs := compile.ParseAndCompile([]byte(input+"}"), nil, promAndJudge(noSources))
			checkErrors(t, tt.name, errs, tt.want)
		})
	}
}
