package spec

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
)

// The languages the tests declare fields in: the Prometheus provider's
// and the conditions'.
var (
	PromQL Language = promql.Language{}
	Expr            = condition.Expr
)

// TestFieldLanguageEach: a language declared on "KEY.*" is the language of
// every field of that object (a provider's map of named queries), and of
// nothing else.
func TestFieldLanguageEach(t *testing.T) {
	doc := mustParse(t, `metrics:
- name: m
  provider:
    datadog:
      queries:
        a: 'x{service="{{args.service}}"}'
        b: 'y{{args.suffix}}'
      formula: 'a {{args.suffix}}'
args: [{name: service, value: 'a"b'}, {name: suffix, value: ") or z"}]
`)
	o := ResolveOptions{Conditions: Expr, Languages: map[string]Language{"provider.datadog.queries.*": PromQL}}
	res, errs := doc.Spec.Resolve(nil, o)
	if res != nil || len(errs) != 1 || errs[0].Field != "args[1].value" || !strings.Contains(errs[0].Message, "provider.datadog.queries.b") {
		t.Fatalf("the value outside a string in queries.b is not refused alone: %v", errs)
	}
	doc.Spec.Args[1].Value = ptr("_total")
	res, errs = doc.Spec.Resolve(nil, o)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if want := `{"formula":"a _total","queries":{"a":"x{service=\"a\\\"b\"}","b":"y_total"}}`; string(res.Spec.Metrics[0].Provider.Datadog) != want {
		t.Errorf("got  %s\nwant %s", res.Spec.Metrics[0].Provider.Datadog, want)
	}
}

// TestFieldLanguageEveryElement: a language declared on "KEY[].FIELD" is
// the language of that field in every element of the list, and of nothing
// else.
func TestFieldLanguageEveryElement(t *testing.T) {
	doc := mustParse(t, `metrics:
- name: m
  provider:
    cloudWatch:
      metricDataQueries:
      - {id: a, expression: 'x{service="{{args.service}}"}'}
      - {id: '{{args.suffix}}', expression: 'y{{args.suffix}}'}
args: [{name: service, value: 'a"b'}, {name: suffix, value: ") or z"}]
`)
	o := ResolveOptions{Conditions: Expr, Languages: map[string]Language{"provider.cloudWatch.metricDataQueries[].expression": PromQL}}
	res, errs := doc.Spec.Resolve(nil, o)
	if res != nil || len(errs) != 1 || errs[0].Field != "args[1].value" || !strings.Contains(errs[0].Message, "provider.cloudWatch.metricDataQueries[1].expression") {
		t.Fatalf("the value outside a string in metricDataQueries[1].expression is not refused alone: %v", errs)
	}
	doc.Spec.Args[1].Value = ptr("_total")
	res, errs = doc.Spec.Resolve(nil, o)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if want := `{"metricDataQueries":[{"expression":"x{service=\"a\\\"b\"}","id":"a"},{"expression":"y_total","id":"_total"}]}`; string(res.Spec.Metrics[0].Provider.CloudWatch) != want {
		t.Errorf("got  %s\nwant %s", res.Spec.Metrics[0].Provider.CloudWatch, want)
	}
	for in, want := range map[string]string{"a[0].b[12].c": "a[].b[].c", "a.b": "a.b", "a[]": "a[]", "a[3": "a[3"} {
		if got := EveryElement(in); got != want {
			t.Errorf("EveryElement(%q) = %q, want %q", in, got, want)
		}
	}
}
