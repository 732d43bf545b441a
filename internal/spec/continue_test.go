package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// TestParseLeavesWrongTypesOut: a value of the wrong type is a problem
// and is left out (Document.Pruned); the rest of the document is returned,
// so that what follows Parse checks it in the same pass.
func TestParseLeavesWrongTypesOut(t *testing.T) {
	doc, errs := Parse([]byte(`apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  args: [{name: service}]
  metrics:
  - name: m
    interval: 5
    count: [3]
    successCondition: result[0] < 1
    provider: {prometheus: {query: 'up{service="{{args.service}}"}'}}
  - "not a metric"
`))
	checkErrors(t, "the problems", errs, []api.FieldError{
		fe("metrics[0].count", "must be an integer or a string, got a list"),
		fe("metrics[0].interval", "must be a string, got a number (quote the value in YAML)"),
		fe("metrics[1]", "must be an object, got a string"),
	})
	if doc == nil {
		t.Fatal("no document")
	}
	if want := []string{"metrics[0].count", "metrics[0].interval", "metrics[1]"}; !slices.Equal(doc.Pruned(), want) {
		t.Errorf("Pruned %v, want %v", doc.Pruned(), want)
	}
	m := doc.Spec.Metrics[0]
	if m.Interval != "" || m.Count != nil || m.SuccessCondition != "result[0] < 1" || len(doc.Spec.Args) != 1 || len(doc.Spec.Metrics) != 2 {
		t.Errorf("the rest of the document: %+v", doc.Spec)
	}

	// What no field can be left out for still refuses the document.
	if doc, _ := Parse([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nspec: 5\n")); doc != nil {
		t.Errorf("a spec that is not an object: got a document")
	}
}

// TestResolveContinue: with Continue, Resolve returns a spec with a
// placeholder for every tag it could not substitute, lists those fields,
// and says which values wait for an argument.
func TestResolveContinue(t *testing.T) {
	doc := mustParse(t, `metrics:
- name: m
  successCondition: result[0] < {{args.limit}}
  provider:
    prometheus:
      address: '{{args.address}}'
      query: 'rate(x{a="{{args.a}}", b="{{args.nope}}"}[{{args.window}}])'
args: [{name: limit}, {name: address}, {name: a, value: "x\"y"}, {name: window, value: "5m) or (y"}]
`)
	o := ResolveOptions{Continue: true, Conditions: Expr, Languages: map[string]Language{"provider.prometheus.query": PromQL}}
	res, errs := doc.Spec.Resolve(nil, o)
	if res == nil {
		t.Fatalf("no resolution: %v", errs)
	}
	m := res.Spec.Metrics[0]
	if m.SuccessCondition != "result[0] < 1" {
		t.Errorf("condition %q: a number stands for a value in an expression", m.SuccessCondition)
	}
	if want := `{"address":"canaryd_placeholder_address","query":"rate(x{a=\"x\\\"y\", b=\"canaryd_placeholder_\"}[canaryd_placeholder_window])"}`; string(m.Provider.Prometheus) != want {
		t.Errorf("provider %s\nwant     %s", m.Provider.Prometheus, want)
	}
	wantUnresolved := map[string]Language{
		"metrics[0].successCondition":            Expr,
		"metrics[0].provider.prometheus.address": ValueText,
		"metrics[0].provider.prometheus.query":   PromQL,
	}
	if len(res.Unresolved) != len(wantUnresolved) {
		t.Errorf("Unresolved %v, want %v", res.Unresolved, wantUnresolved)
	}
	for f, l := range wantUnresolved {
		if res.Unresolved[f] != l {
			t.Errorf("Unresolved[%s] = %v, want %v", f, res.Unresolved[f], l)
		}
	}
	var address string
	for _, e := range errs {
		if e.Field == "args[1].value" {
			address = e.Message
		}
	}
	if !strings.HasSuffix(address, "; checked once it has a value: metrics[0].provider.prometheus.address") {
		t.Errorf("the address' argument: %q, want it to say the address waits for it", address)
	}

	// Without Continue, nothing is resolved.
	if res, errs := doc.Spec.Resolve(nil, ResolveOptions{Conditions: Expr, Languages: o.Languages}); res != nil || len(errs) == 0 {
		t.Errorf("without Continue: %v %v", res, errs)
	}
	// Over a bound, Continue or not, nothing is built.
	o.MaxQueryLength = 10
	if res, _ := doc.Spec.Resolve(nil, o); res != nil {
		t.Errorf("a query over its bound was built")
	}
}

// TestFieldLine: a field's line in its document, under an Argo document's
// spec but for its own fields; a field left out is on its object's line.
func TestFieldLine(t *testing.T) {
	const doc = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: t
spec:
  metrics:
  - name: m
    provider:
      prometheus:
        query: |
          up
`
	in := NodeTree([]byte(doc))
	for field, want := range map[string]int{
		"metadata.name":                        4,
		"metrics":                              6,
		"metrics[0]":                           7,
		"metrics[0].provider.prometheus.query": 10,
		"metrics[0].interval":                  7,
		"metrics[3]":                           6,
		"body":                                 0,
		"nothing":                              5,
	} {
		if got := FieldLine(in, field); got != want {
			t.Errorf("%s: line %d, want %d", field, got, want)
		}
	}
}
