package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
)

func FuzzParse(f *testing.F) {
	for _, file := range []string{"success-rate.yaml", "success-rate.json", "success-rate-args.yaml", "analysisrun.yaml", "cluster-analysis-template.yaml", "bare-spec.yaml"} {
		f.Add(fixture(f, file))
	}
	for _, s := range []string{
		"", "null", "[]", "{}", "---\n---\n", "a: &x [*x]", `{"metrics": [{"count": 1e99}]}`,
		`{"metrics": [{"name": "a", "count": "{{args.n}}", "provider": {"prometheus": {"query": "{{"}}}], "args": [{"name": "n"}]}`,
		"metrics: [{name: a, provider: {plugin: {x: 1, y: 2}}}]\ndryRun: [{metricName: '('}]\nmeasurementRetention: [{metricName: a, limit: -3}]\n",
		"0:",
		"metrics: [{name: a, provider: {judge: {canary: a, baseline: b, lookback: 1h, step: 1m, confidenceLevel: 0.9}}}]\nscoring: {groups: {default: 100}, pass: 90}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nspec: {scoring: {}, metrics: [{name: a, provider: {judge: {canary: a}}}]}\n",
		"apiVersion: canaryd.io/v1alpha1\nkind: ClusterAnalysisTemplate\nspec: {scoring: {groups: {a: 1e3}}, metrics: []}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, errs := Parse(data)
		if doc == nil && len(errs) == 0 {
			t.Fatalf("Parse(%q) = nil, no errors: want a document or errors", data)
		}
		for _, e := range errs {
			if e.Message == "" {
				t.Fatalf("Parse(%q): error without a message on %q", data, e.Field)
			}
			// A document comes back with errors only when they leave it
			// decodable: unknown fields, canaryd's extensions in an Argo
			// document, and values of the wrong type, left out.
			if doc != nil && e.Message != unknownField && !isExtensionError(e) && !slices.Contains(doc.Pruned(), e.Field) {
				t.Fatalf("Parse(%q) returned a document with the error %v", data, e)
			}
		}
		if doc == nil {
			return
		}

		// What Parse returns, written back out, parses again to the same.
		var out []byte
		var err error
		if doc.Kind == "" {
			out, err = json.Marshal(doc.Spec)
		} else {
			out, err = json.Marshal(doc)
		}
		if err != nil {
			t.Fatalf("marshal %+v: %v", doc, err)
		}
		again, errs := Parse(out)
		for _, e := range errs {
			// Unknown fields are dropped by the re-encoding; extensions
			// in an Argo document are kept, and still refused.
			if !isExtensionError(e) {
				t.Fatalf("Parse(%q) accepted, its re-encoding %s is not: %v", data, out, errs)
			}
		}
		if again.Kind != doc.Kind || len(again.Spec.Metrics) != len(doc.Spec.Metrics) || len(again.Spec.Args) != len(doc.Spec.Args) {
			t.Fatalf("round trip of %q changed the document:\n%+v\n%+v", data, doc, again)
		}

		// The later steps never panic on anything Parse accepts.
		doc.Spec.Validate(testScored)
		if resolved, _ := resolveArgs(&doc.Spec, nil); resolved != nil {
			resolved.Validate(testScored)
			resolved.DryRunMetrics()
			resolved.RetentionLimits()
			for i := range resolved.Metrics {
				m := &resolved.Metrics[i]
				_, _ = m.IntervalDuration()
				_, _ = m.InitialDelayDuration()
				m.CountValue()
				m.ConsecutiveErrorLimitValue()
			}
		}
	})
}

func FuzzResolve(f *testing.F) {
	f.Add(`up{ns="{{args.ns}}"}`, "ns", "echo", "")
	f.Add(`{{ args.service-name }}`, "service-name", "a\"b\nc", "{{args.x}}")
	f.Add(`{{args.ns`, "ns", "x", "")
	f.Add(`{{}}{{args.}}{{ }}`, "", "", "3")
	f.Add(`}}{{args.n}}}}`, "n", "\x00\u2028", "{{args.n}}")
	f.Fuzz(func(t *testing.T, template, name, value, count string) {
		s := &Spec{
			Args: []Argument{{Name: name, Value: &value}},
			Metrics: []Metric{{
				Name:             "m",
				Count:            &IntOrString{IsString: true, Str: count},
				SuccessCondition: template,
				Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{
					Query:   template,
					Headers: []Header{{Key: template, Value: "v"}},
				})},
			}},
		}
		resolved, errs := resolveArgs(s, map[string]string{name: value})
		if (resolved == nil) == (len(errs) == 0) {
			t.Fatalf("Resolve: got %v, %v: want a spec or errors", resolved, errs)
		}
		if resolved == nil {
			return
		}
		resolved.Validate(testScored)
		q := prom(resolved.Metrics[0].Provider).Query
		// JSON, Argo's way and canaryd's, has no room for invalid UTF-8.
		if !utf8.ValidString(template) {
			return
		}
		if !strings.Contains(template, openTag) && q != template {
			t.Fatalf("template %q without tags became %q", template, q)
		}
		if template == openTag+argsTag+name+closeTag && q != value {
			t.Fatalf("template %q with %s=%q became %q", template, name, value, q)
		}
		if prom(s.Metrics[0].Provider).Query != template {
			t.Fatalf("Resolve changed its receiver")
		}
	})
}

// isExtensionError reports whether e refuses a canaryd extension in an Argo
// document.
func isExtensionError(e api.FieldError) bool {
	return strings.Contains(e.Message, "is a canaryd extension that Argo Rollouts does not have")
}
