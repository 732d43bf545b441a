package spec

import (
	"encoding/json"
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
	return Metric{Name: "latency", Provider: MetricProvider{Judge: raw(&JudgeMetric{
		Canary: "canary_latency", Baseline: "baseline_latency", Lookback: "30m", Step: "15s",
	})}}
}

// canaryd's extensions are refused in an Argo document, by their names;
// what a judge's configuration must be is its provider's
// (internal/provider/judge).
func TestParseExtensions(t *testing.T) {
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
	scoring := "scoring: {groups: {latency: 60.5}, pass: 90, marginal: 50}\n"
	tests := []struct {
		name     string
		input    string
		wantErrs []api.FieldError
		check    func(t *testing.T, doc *Document)
	}{
		{name: "bare spec", input: judgeSpec(validJudge, scoring), check: func(t *testing.T, doc *Document) {
			wantScoring := &Scoring{Groups: map[string]float64{"latency": 60.5}, Pass: ptr(90.0), Marginal: ptr(50.0)}
			if !reflect.DeepEqual(doc.Spec.Scoring, wantScoring) || !isSet(doc.Spec.Metrics[0].Provider.Judge) {
				t.Errorf("scoring: got %+v, want %+v", doc.Spec.Scoring, wantScoring)
			}
		}},
		{name: "canaryd template", input: strings.Replace(canarydDoc, "%s", "AnalysisTemplate", 1) + indent(judgeSpec(validJudge, scoring)),
			check: func(t *testing.T, doc *Document) {
				if doc.APIVersion != CanarydAPIVersion || !isSet(doc.Spec.Metrics[0].Provider.Judge) || doc.Spec.Scoring == nil {
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
		{name: "both in an Argo document", input: argoDoc + indent(judgeSpec(validJudge+"      lookbak: 1h\n", "scoring: {}\n")), wantErrs: []api.FieldError{
			fe("scoring", "scoring is a canaryd extension that Argo Rollouts does not have (it would drop it and judge the analysis metric by metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
			fe("metrics[0].provider.judge", "provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): use it in a bare spec or in a canaryd template (apiVersion canaryd.io/v1alpha1), not in an argoproj.io/v1alpha1 document"),
		}},
		{name: "null judge in an Argo document is absent", input: argoDoc + "  metrics: [{name: m, provider: {judge: null, prometheus: {query: up}}}]\n"},
		{name: "scoring's unknown fields and types", input: judgeSpec(validJudge, "scoring: {group: {a: 1}}\n"), wantErrs: []api.FieldError{
			fe("scoring.group", "unknown field"),
		}},
		{name: "scoring's types", input: judgeSpec(validJudge, "scoring: {groups: {a: x}, pass: true}\n"), wantErrs: []api.FieldError{
			fe("scoring.groups.a", "must be a number, got a string"),
			fe("scoring.pass", "must be a number, got a boolean"),
		}},
		{name: "a number out of range", input: `{"metrics": [], "scoring": {"groups": {"b": 1e999}}}`, wantErrs: []api.FieldError{
			fe("scoring.groups.b", "must be a number within float64's range, got 1e999"),
		}},
		{name: "groups must be an object", input: judgeSpec(validJudge, "scoring: {groups: [a]}\n"), wantErrs: []api.FieldError{
			fe("scoring.groups", "must be an object, got a list"),
		}},
		{name: "integers are numbers", input: judgeSpec(validJudge, "scoring: {groups: {default: 100}}\n")},
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

func TestValidateJudgeMetric(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *Metric)
		want []api.FieldError
	}{
		{name: "noData is for Prometheus metrics", edit: func(m *Metric) { m.NoData = "Inconclusive" }, want: []api.FieldError{
			fe("metrics[0].noData", `noData does not apply to a judge metric, whose missing data the judge classifies (Nodata, or NodataFailMetric with mustHaveData); decide it with the conditions instead, e.g. failureCondition: result.classification != "Pass"`),
		}},
		{name: "one provider only", edit: func(m *Metric) { m.Provider.Prometheus = raw(&PrometheusMetric{Query: "up"}) }, want: []api.FieldError{
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
		checkErrors(t, tt.name, s.Validate(testScored), tt.want)
	}
}

func TestValidateScoring(t *testing.T) {
	judged := func(name, group string) Metric {
		m := validJudgeMetric()
		m.Name = name
		m.Provider.Judge = raw(&JudgeMetric{Canary: "canary_latency", Baseline: "baseline_latency", Lookback: "30m", Step: "15s", Group: group})
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
			checkErrors(t, tt.name, s.Validate(testScored), tt.want)
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
	var j JudgeMetric
	if err := json.Unmarshal(got.Metrics[0].Provider.Judge, &j); err != nil {
		t.Fatal(err)
	}
	if j.Canary != `lat{w="echo-canary"}` || j.Control.Offset != "2h" || j.Group != "latency" {
		t.Errorf("resolved judge: %+v %+v", j, j.Control)
	}
	if !reflect.DeepEqual(got.Scoring, doc.Spec.Scoring) || got.Scoring == doc.Spec.Scoring {
		t.Errorf("scoring: got %+v, want a copy of %+v", got.Scoring, doc.Spec.Scoring)
	}
	if errs := got.Validate(testScored); len(errs) > 0 {
		t.Errorf("Validate: %s", formatErrors(errs))
	}
}
