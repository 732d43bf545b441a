package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// judgeSpec is a bare spec of one judge metric whose provider.judge body is
// judgeYAML (indented for its place), and extra top-level YAML.
func judgeSpec(judgeYAML, extra string) string {
	return "metrics:\n- name: latency\n  provider:\n    judge:\n" + judgeYAML + extra
}

const validJudge = `      canary: canary_latency
      baseline: baseline_latency
      lookback: 30m
      step: 15s
`

// validJudgeMetric is a judge metric that passes every rule.
func validJudgeMetric() Metric {
	return Metric{Name: "latency", Provider: MetricProvider{Judge: &JudgeMetric{
		Canary: "canary_latency", Baseline: "baseline_latency", Lookback: "30m", Step: "15s",
	}}}
}

func TestParseJudge(t *testing.T) {
	const argoDoc = "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: t}\nspec:\n"
	const canarydDoc = "apiVersion: canaryd.io/v1alpha1\nkind: %s\nmetadata: {name: t}\nspec:\n"
	indent := func(s string) string {
		lines := strings.SplitAfter(s, "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = "  " + l
			}
		}
		return strings.Join(lines, "")
	}
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
	scoring := "scoring: {groups: {latency: 60.5}, pass: 90, marginal: 50}\n"
	tests := []struct {
		name     string
		input    string
		wantErrs []api.FieldError
		check    func(t *testing.T, doc *Document)
	}{
		{name: "bare spec, every field", input: judgeSpec(every, scoring), check: func(t *testing.T, doc *Document) {
			want := &JudgeMetric{
				Address: "http://prometheus:9090", Timeout: ptr(int64(10)), Insecure: true,
				Headers:        []Header{{Key: "X-Scope-OrgID", Value: "team-a"}},
				Authentication: Authentication{BasicAuth: BasicAuthConfig{Username: "u", Password: "p"}},
				Canary:         "canary_latency", Control: &JudgeControl{Offset: "1h"}, Lookback: "30m", Step: "15s",
				Direction: "increase", NaNStrategy: "replace", RemoveOutliers: true, OutlierFactor: ptr(2.5),
				ConfidenceLevel: ptr(0.95), Tolerance: ptr(0.1),
				EffectSize: &EffectSize{Measure: "cles", AllowedIncrease: ptr(0.6), AllowedDecrease: ptr(0.4),
					CriticalIncrease: ptr(0.8), CriticalDecrease: ptr(0.2)},
				Critical: true, Group: "latency",
			}
			if got := doc.Spec.Metrics[0].Provider.Judge; !reflect.DeepEqual(got, want) {
				t.Errorf("judge:\ngot  %+v\nwant %+v", got, want)
			}
			wantScoring := &Scoring{Groups: map[string]float64{"latency": 60.5}, Pass: ptr(90.0), Marginal: ptr(50.0)}
			if !reflect.DeepEqual(doc.Spec.Scoring, wantScoring) {
				t.Errorf("scoring: got %+v, want %+v", doc.Spec.Scoring, wantScoring)
			}
		}},
		{name: "canaryd template", input: strings.Replace(canarydDoc, "%s", "AnalysisTemplate", 1) + indent(judgeSpec(validJudge, scoring)),
			check: func(t *testing.T, doc *Document) {
				if doc.APIVersion != CanarydAPIVersion || doc.Spec.Metrics[0].Provider.Judge == nil || doc.Spec.Scoring == nil {
					t.Errorf("got %+v", doc)
				}
			}},
		{name: "canaryd cluster template", input: strings.Replace(canarydDoc, "%s", "ClusterAnalysisTemplate", 1) + indent(judgeSpec(validJudge, ""))},
		{name: "canaryd template may be a plain Argo spec", input: strings.Replace(canarydDoc, "%s", "AnalysisTemplate", 1) +
			"  metrics: [{name: m, provider: {prometheus: {query: up}}}]\n"},
		{name: "no AnalysisRun of canaryd's", input: strings.Replace(canarydDoc, "%s", "AnalysisRun", 1) + indent(judgeSpec(validJudge, "")),
			wantErrs: []api.FieldError{fe("kind", `unsupported kind "AnalysisRun" for apiVersion canaryd.io/v1alpha1: a canaryd template is an AnalysisTemplate or a ClusterAnalysisTemplate`)}},
		{name: "judge in an Argo document", input: argoDoc + indent(judgeSpec(validJudge, "")), wantErrs: []api.FieldError{
			fe("metrics[0].provider.judge", "provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
		}, check: func(t *testing.T, doc *Document) {
			if doc == nil {
				t.Error("the document is not returned, so its other problems cannot be reported with this one")
			}
		}},
		{name: "scoring in an Argo document", input: argoDoc + "  scoring: {pass: 90}\n  metrics: [{name: m, provider: {prometheus: {query: up}}}]\n", wantErrs: []api.FieldError{
			fe("scoring", "scoring is a canaryd extension that Argo Rollouts does not have (it would drop it and judge the analysis metric by metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
		}},
		{name: "both in an Argo document, with an unknown field", input: argoDoc + indent(judgeSpec(validJudge+"      lookbak: 1h\n", "scoring: {}\n")), wantErrs: []api.FieldError{
			fe("metrics[0].provider.judge.lookbak", "unknown field"),
			fe("scoring", "scoring is a canaryd extension that Argo Rollouts does not have (it would drop it and judge the analysis metric by metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
			fe("metrics[0].provider.judge", "provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
		}},
		{name: "null judge in an Argo document is absent", input: argoDoc + "  metrics: [{name: m, provider: {judge: null, prometheus: {query: up}}}]\n"},
		{name: "unknown fields, each with its path", input: judgeSpec(validJudge+"      effectSize: {mesure: cles}\n      control: {ofset: 1h}\n", "scoring: {group: {a: 1}}\n"), wantErrs: []api.FieldError{
			fe("metrics[0].provider.judge.control.ofset", "unknown field"),
			fe("metrics[0].provider.judge.effectSize.mesure", "unknown field"),
			fe("scoring.group", "unknown field"),
		}},
		{name: "wrong types", input: judgeSpec("      canary: c\n      baseline: b\n      step: 15s\n      confidenceLevel: high\n      tolerance: [1]\n      critical: \"yes\"\n      lookback: 30\n", "scoring: {groups: {a: x}, pass: true}\n"), wantErrs: []api.FieldError{
			fe("metrics[0].provider.judge.confidenceLevel", "must be a number, got a string"),
			fe("metrics[0].provider.judge.critical", "must be true or false, got a string"),
			fe("metrics[0].provider.judge.lookback", "must be a string, got a number (quote the value in YAML)"),
			fe("metrics[0].provider.judge.tolerance", "must be a number, got a list"),
			fe("scoring.groups.a", "must be a number, got a string"),
			fe("scoring.pass", "must be a number, got a boolean"),
		}},
		{name: "a number out of range", input: `{"metrics": [], "scoring": {"groups": {"b": 1e999}}}`, wantErrs: []api.FieldError{
			fe("scoring.groups.b", "must be a number within float64's range, got 1e999"),
		}},
		{name: "groups must be an object", input: judgeSpec(validJudge, "scoring: {groups: [a]}\n"), wantErrs: []api.FieldError{
			fe("scoring.groups", "must be an object, got a list"),
		}},
		{name: "integers are numbers", input: judgeSpec(validJudge+"      confidenceLevel: 1\n", "scoring: {groups: {default: 100}}\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, errs := Parse([]byte(tt.input))
			checkErrors(t, tt.name, errs, tt.wantErrs)
			if tt.check != nil {
				tt.check(t, doc)
			}
		})
	}
}

func TestValidateJudge(t *testing.T) {
	const p = "metrics[0].provider.judge."
	tests := []struct {
		name    string
		edit    func(j *JudgeMetric)
		scoring bool
		want    []api.FieldError
	}{
		{name: "valid", edit: func(j *JudgeMetric) {}},
		{name: "valid control", edit: func(j *JudgeMetric) { j.Baseline, j.Control = "", &JudgeControl{Offset: "24h"} }},
		{name: "valid with every option", scoring: true, edit: func(j *JudgeMetric) {
			j.Direction, j.NaNStrategy, j.RemoveOutliers, j.OutlierFactor = "decrease", "remove", true, ptr(1.5)
			j.ConfidenceLevel, j.Tolerance, j.MustHaveData, j.Critical, j.Group = ptr(0.9), ptr(0.5), true, true, "g"
			j.EffectSize = &EffectSize{Measure: "meanRatio", AllowedIncrease: ptr(1.1), AllowedDecrease: ptr(0.9), CriticalIncrease: ptr(1.5), CriticalDecrease: ptr(0.5)}
		}},
		{name: "required fields", edit: func(j *JudgeMetric) { j.Canary, j.Lookback, j.Step = "", "", "" }, want: []api.FieldError{
			fe(p+"canary", "canary must be specified"),
			fe(p+"lookback", "lookback must be specified"),
			fe(p+"step", "step must be specified"),
		}},
		{name: "neither baseline nor control", edit: func(j *JudgeMetric) { j.Baseline = "  " }, want: []api.FieldError{
			fe(p+"baseline", "baseline or control must be specified: a baseline query to compare the canary query with, or control.offset to compare the canary query with itself that long before"),
		}},
		{name: "both baseline and control", edit: func(j *JudgeMetric) { j.Control = &JudgeControl{Offset: "1h"} }, want: []api.FieldError{
			fe(p+"control", "baseline and control cannot both be specified: control compares the canary query with itself control.offset earlier, instead of with a baseline query"),
		}},
		{name: "control without offset", edit: func(j *JudgeMetric) { j.Baseline, j.Control = "", &JudgeControl{} }, want: []api.FieldError{
			fe(p+"control.offset", "offset must be specified"),
		}},
		{name: "bad durations", edit: func(j *JudgeMetric) {
			j.Baseline, j.Control, j.Lookback, j.Step = "", &JudgeControl{Offset: "-1h"}, "half an hour", "0s"
		}, want: []api.FieldError{
			fe(p+"lookback", `lookback must be a duration such as 30s, 10m or 1h: time: invalid duration "half an hour"`),
			fe(p+"step", `step must be a positive duration, got "0s"`),
			fe(p+"control.offset", `offset must be a positive duration, got "-1h"`),
		}},
		{name: "step longer than lookback", edit: func(j *JudgeMetric) { j.Step = "1h" }, want: []api.FieldError{
			fe(p+"step", "step (1h) must not be longer than lookback (30m)"),
		}},
		{name: "too many points", edit: func(j *JudgeMetric) { j.Lookback, j.Step = "24h", "1s" }, want: []api.FieldError{
			fe(p+"step", "lookback 24h at step 1s is 86401 points per series, more than the 11000 Prometheus allows: make step longer"),
		}},
		{name: "as many points as allowed", edit: func(j *JudgeMetric) { j.Lookback, j.Step = "10999s", "1s" }},
		{name: "negative timeout", edit: func(j *JudgeMetric) { j.Timeout = ptr(int64(-1)) }, want: []api.FieldError{
			fe(p+"timeout", "timeout should not be negative"),
		}},
		{name: "bad enumerations", edit: func(j *JudgeMetric) {
			j.Direction, j.NaNStrategy, j.EffectSize = "up", "drop", &EffectSize{Measure: "ratio"}
		}, want: []api.FieldError{
			fe(p+"direction", `direction must be one of increase, decrease, either, got "up"`),
			fe(p+"nanStrategy", `nanStrategy must be one of remove, replace, got "drop"`),
			fe(p+"effectSize.measure", `measure must be one of meanRatio, cles, got "ratio"`),
		}},
		{name: "outlierFactor without removeOutliers", edit: func(j *JudgeMetric) { j.OutlierFactor = ptr(2.0) }, want: []api.FieldError{
			fe(p+"outlierFactor", "outlierFactor applies only with removeOutliers: true"),
		}},
		{name: "outlierFactor zero", edit: func(j *JudgeMetric) { j.RemoveOutliers, j.OutlierFactor = true, ptr(0.0) }, want: []api.FieldError{
			fe(p+"outlierFactor", "outlierFactor must be a positive number (default 3), got 0"),
		}},
		{name: "confidenceLevel as a percentage", edit: func(j *JudgeMetric) { j.ConfidenceLevel = ptr(98.0) }, want: []api.FieldError{
			fe(p+"confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default 0.98), got 98 (a fraction: 0.98 for 98%)"),
		}},
		{name: "confidenceLevel 1", edit: func(j *JudgeMetric) { j.ConfidenceLevel = ptr(1.0) }, want: []api.FieldError{
			fe(p+"confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default 0.98), got 1"),
		}},
		{name: "tolerance zero", edit: func(j *JudgeMetric) { j.Tolerance = ptr(0.0) }, want: []api.FieldError{
			fe(p+"tolerance", "tolerance must be a positive number (default 0.25), got 0"),
		}},
		{name: "meanRatio thresholds", edit: func(j *JudgeMetric) {
			j.EffectSize = &EffectSize{AllowedIncrease: ptr(0.0), AllowedDecrease: ptr(-1.0)}
		}, want: []api.FieldError{
			fe(p+"effectSize.allowedIncrease", "allowedIncrease must be a positive ratio of the means (1.1 is 10% higher, 0.9 10% lower; default 1), got 0"),
			fe(p+"effectSize.allowedDecrease", "allowedDecrease must be a positive ratio of the means (1.1 is 10% higher, 0.9 10% lower; default 1), got -1"),
		}},
		{name: "cles thresholds are probabilities", edit: func(j *JudgeMetric) {
			j.EffectSize = &EffectSize{Measure: "cles", AllowedIncrease: ptr(1.1), AllowedDecrease: ptr(1.0)}
		}, want: []api.FieldError{
			fe(p+"effectSize.allowedIncrease", "allowedIncrease must be a probability above 0 and at most 1 with measure cles (default 0.5), got 1.1"),
		}},
		{name: "critical thresholds without critical", scoring: true, edit: func(j *JudgeMetric) {
			j.EffectSize = &EffectSize{CriticalIncrease: ptr(1.5), CriticalDecrease: ptr(0.5)}
		}, want: []api.FieldError{
			fe(p+"effectSize.criticalIncrease", "criticalIncrease applies only to a critical metric (critical: true)"),
			fe(p+"effectSize.criticalDecrease", "criticalDecrease applies only to a critical metric (critical: true)"),
		}},
		{name: "mustHaveData with nanStrategy replace", edit: func(j *JudgeMetric) { j.MustHaveData, j.NaNStrategy = true, "replace" }, want: []api.FieldError{
			fe(p+"mustHaveData", "mustHaveData has no effect with nanStrategy replace, under which a sample without data passes"),
		}},
		{name: "critical and group without scoring", edit: func(j *JudgeMetric) { j.Critical, j.Group = true, "latency" }, want: []api.FieldError{
			fe(p+"critical", "critical applies only when the spec declares scoring (without it, any failing metric fails the analysis already): declare scoring, or remove critical"),
			fe(p+"group", "group applies only when the spec declares scoring: declare scoring, or remove group"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validJudgeMetric()
			tt.edit(m.Provider.Judge)
			s := Spec{Metrics: []Metric{m}}
			if tt.scoring {
				s.Scoring = &Scoring{}
			}
			// The judge's provider checks its configuration
			// (JudgeMetric.Validate) when the spec is compiled; Validate
			// only what needs the spec.
			errs := append(s.Validate(), s.Metrics[0].Provider.Judge.Validate("metrics[0].provider.judge")...)
			checkErrors(t, tt.name, errs, tt.want)
		})
	}
}

func TestValidateJudgeMetric(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *Metric)
		want []api.FieldError
	}{
		{name: "noData is for Prometheus metrics", edit: func(m *Metric) { m.NoData = "Inconclusive" }, want: []api.FieldError{
			fe("metrics[0].noData", `noData does not apply to a judge metric, whose missing data the judge classifies (Nodata, or NodataFailMetric with mustHaveData); decide it with the conditions instead, e.g. failureCondition: result.classification != "Pass"`),
		}},
		{name: "one provider only", edit: func(m *Metric) { m.Provider.Prometheus = &PrometheusMetric{Query: "up"} }, want: []api.FieldError{
			fe("metrics[0].provider", "multiple providers specified"),
		}},
		{name: "Argo's limits apply", edit: func(m *Metric) { m.Count = intOrStr(3) }, want: []api.FieldError{
			fe("metrics[0].interval", "interval must be specified when count > 1"),
		}},
	}
	for _, tt := range tests {
		m := validJudgeMetric()
		tt.edit(&m)
		s := Spec{Metrics: []Metric{m}}
		checkErrors(t, tt.name, s.Validate(), tt.want)
	}
}

func TestValidateScoring(t *testing.T) {
	judged := func(name, group string) Metric {
		m := validJudgeMetric()
		m.Name, m.Provider.Judge.Group = name, group
		return m
	}
	tests := []struct {
		name    string
		metrics []Metric
		dryRun  []DryRun
		scoring Scoring
		want    []api.FieldError
	}{
		{name: "defaults", metrics: []Metric{validMetric("a"), judged("b", "")}},
		{name: "weights that sum to 100", metrics: []Metric{judged("a", "latency"), validMetric("b")},
			scoring: Scoring{Groups: map[string]float64{"latency": 60, "default": 40}, Pass: ptr(90.0), Marginal: ptr(90.0)}},
		{name: "weights that sum to 100 in floating point", metrics: []Metric{judged("a", "x"), judged("b", "y"), judged("c", "z")},
			scoring: Scoring{Groups: map[string]float64{"x": 33.3, "y": 33.3, "z": 33.4}}},
		{name: "an unweighted group takes the rest", metrics: []Metric{judged("a", "latency"), validMetric("b")},
			scoring: Scoring{Groups: map[string]float64{"latency": 70}}},
		{name: "thresholds out of range", metrics: []Metric{validMetric("a")}, scoring: Scoring{Pass: ptr(0.0), Marginal: ptr(101.0)}, want: []api.FieldError{
			fe("scoring.pass", "pass must be above 0 and at most 100, got 0"),
			fe("scoring.marginal", "marginal must be from 0 to 100, got 101"),
		}},
		{name: "marginal above pass", metrics: []Metric{validMetric("a")}, scoring: Scoring{Pass: ptr(80.0), Marginal: ptr(90.0)}, want: []api.FieldError{
			fe("scoring.marginal", "marginal (90) must not be above pass (80)"),
		}},
		{name: "default marginal above pass", metrics: []Metric{validMetric("a")}, scoring: Scoring{Pass: ptr(70.0)}, want: []api.FieldError{
			fe("scoring.marginal", "the default marginal threshold 75 is above pass (70): give a marginal threshold at or below it"),
		}},
		{name: "nothing to score", metrics: []Metric{validMetric("a")}, dryRun: []DryRun{{MetricName: ".*"}}, want: []api.FieldError{
			fe("scoring", "every metric is dry-run: there is nothing to score"),
		}},
		{name: "bad weights", metrics: []Metric{judged("a", "latency"), judged("b", "muted"), validMetric("c")}, dryRun: []DryRun{{MetricName: "b"}},
			scoring: Scoring{Groups: map[string]float64{"latency": 0, "errors": 10, "muted": 10, "": 5}}, want: []api.FieldError{
				fe("scoring.groups", "a group name must not be empty"),
				fe("scoring.groups.errors", `no metric is in group "errors" (a judge metric names its group with provider.judge.group; the others are in group "default")`),
				fe("scoring.groups.latency", `the weight of group "latency" must be a positive number (a percentage), got 0`),
				fe("scoring.groups.muted", `only dry-run metrics are in group "muted", and dry-run metrics are not scored`),
			}},
		{name: "weights above 100", metrics: []Metric{judged("a", "x"), judged("b", "y")},
			scoring: Scoring{Groups: map[string]float64{"x": 60, "y": 50}}, want: []api.FieldError{
				fe("scoring.groups", "the weights sum to 110, more than 100"),
			}},
		{name: "every group weighted, short of 100", metrics: []Metric{judged("a", "x"), judged("b", "y")},
			scoring: Scoring{Groups: map[string]float64{"x": 60, "y": 20}}, want: []api.FieldError{
				fe("scoring.groups", "the weights sum to 80 and every group has one, so no score could reach 100: make them sum to 100, or leave a group without a weight to share the rest"),
			}},
		{name: "nothing left for an unweighted group", metrics: []Metric{judged("a", "x"), validMetric("b")},
			scoring: Scoring{Groups: map[string]float64{"x": 100}}, want: []api.FieldError{
				fe("scoring.groups", `the weights sum to 100, which leaves nothing for group "default", which has no weight: give it one, or make the weights sum to less than 100`),
			}},
		{name: "nothing left for unweighted groups", metrics: []Metric{judged("a", "x"), judged("b", "y"), validMetric("c")},
			scoring: Scoring{Groups: map[string]float64{"x": 100}}, want: []api.FieldError{
				fe("scoring.groups", `the weights sum to 100, which leaves nothing for groups "default", "y", which have no weight: give them one, or make the weights sum to less than 100`),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.scoring
			s := Spec{Metrics: tt.metrics, DryRun: tt.dryRun, Scoring: &sc}
			checkErrors(t, tt.name, s.Validate(), tt.want)
		})
	}
}

func TestResolveJudge(t *testing.T) {
	doc := mustParse(t, `
args: [{name: canary, value: echo-canary}, {name: offset}, {name: group, value: latency}]
scoring: {groups: {latency: 50}}
metrics:
- name: m
  provider:
    judge:
      canary: lat{w="{{args.canary}}"}
      control: {offset: "{{args.offset}}"}
      lookback: 30m
      step: 15s
      group: "{{args.group}}"
- name: other
  provider: {prometheus: {query: up}}
`)
	got, errs := resolveArgs(&doc.Spec, map[string]string{"offset": "2h"})
	if len(errs) > 0 {
		t.Fatalf("Resolve: %s", formatErrors(errs))
	}
	j := got.Metrics[0].Provider.Judge
	if j.Canary != `lat{w="echo-canary"}` || j.Control.Offset != "2h" || j.Group != "latency" {
		t.Errorf("resolved judge: %+v %+v", j, j.Control)
	}
	if !reflect.DeepEqual(got.Scoring, doc.Spec.Scoring) || got.Scoring == doc.Spec.Scoring {
		t.Errorf("scoring: got %+v, want a copy of %+v", got.Scoring, doc.Spec.Scoring)
	}
	if errs := got.Validate(); len(errs) > 0 {
		t.Errorf("Validate: %s", formatErrors(errs))
	}
}
