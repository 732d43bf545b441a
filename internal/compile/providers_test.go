package compile

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
	"github.com/canaryd/canaryd/internal/spec"
)

// A metric names its provider by the key of its provider object; the
// registry decides which names this canaryd runs.
func TestProvidersRegistry(t *testing.T) {
	var gotConfig json.RawMessage
	reg := Builtin(noSources).Register("web", provider.Func(func(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
		gotConfig = config
		if strings.Contains(string(gotConfig), "bad") {
			return nil, nil, []api.FieldError{{Field: "provider.web.url", Message: "refused"}}
		}
		return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Value: 1.0}
		}), map[string]string{"k": "v"}, nil
	}))
	compile := func(provider string) (*Compiled, []api.FieldError) {
		t.Helper()
		doc := mustParse(t, `metrics: [{name: m, successCondition: "result == 1", provider: `+provider+`}]`)
		return Compile(doc, nil, reg)
	}

	for _, tt := range []struct {
		name, provider string
		want           []api.FieldError
	}{
		{"unregistered provider Argo has", `{datadog: {query: x}}`, []api.FieldError{{Field: "metrics[0].provider.datadog",
			Message: "provider datadog is not supported by this canaryd (it runs judge, prometheus, web)"}}},
		{"unregistered provider named as Argo spells it", `{newRelic: {}}`, []api.FieldError{{Field: "metrics[0].provider.newRelic",
			Message: "provider newRelic is not supported by this canaryd (it runs judge, prometheus, web)"}}},
		{"plugin", `{plugin: {argoproj-labs/x: {}}}`, []api.FieldError{{Field: "metrics[0].provider.plugin",
			Message: "provider plugin is not supported by this canaryd (it runs judge, prometheus, web)"}}},
		{"two providers", `{web: {url: x}, prometheus: {query: up}}`, []api.FieldError{{Field: "metrics[0].provider",
			Message: "multiple providers specified"}}},
		{"no provider", `{}`, []api.FieldError{{Field: "metrics[0].provider", Message: "no provider specified"}}},
		{"the provider's own problems, once, on the metric's path", `{web: {url: bad}}`, []api.FieldError{{Field: "metrics[0].provider.web.url",
			Message: "refused"}}},
	} {
		_, errs := compile(tt.provider)
		checkErrors(t, tt.name, errs, tt.want)
	}

	compiled, errs := compile(`{web: {url: "http://x/{{args.missing}}"}}`)
	if compiled != nil || len(errs) != 1 || errs[0].Field != "metrics[0].provider.web.url" {
		t.Fatalf("an unresolved argument in a raw provider configuration: got %v", errs)
	}
	compiled, errs = compile(`{web: {url: "http://x/"}}`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if string(gotConfig) != `{"url":"http://x/"}` || compiled.Plan.Metrics[0].Metadata["k"] != "v" || compiled.Plan.Metrics[0].Source == nil {
		t.Fatalf("the web provider got %s and built %+v", gotConfig, compiled.Plan.Metrics[0])
	}
}

func TestRegistryRefusesNameTwice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("registering prometheus twice did not panic")
		}
	}()
	Builtin(noSources).Register("prometheus", PrometheusFunc(noSources))
}

// A provider's configuration is decoded by its provider: its unknown fields
// and wrong types are reported with the document's other problems, each
// once, on its path.
func TestProviderShapeProblemsWithTheDocuments(t *testing.T) {
	input := `metrics:
- name: m
  failureLimt: 1
  successCondition: result[0] >=
  provider: {prometheus: {query: up, adress: http://x, timeout: "10", headers: [{key: a, value: b, sensitive: true}]}}
- name: j
  provider: {judge: {canary: c, baseline: b, lookback: 1h, step: 1m, critical: "yes"}}
`
	_, _, errs := ParseAndCompile([]byte(input), nil, Builtin(noSources))
	fields := map[string]string{}
	for _, e := range errs {
		fields[e.Field] = e.Message
	}
	for field, msg := range map[string]string{
		"metrics[0].failureLimt":                              "unknown field",
		"metrics[0].provider.prometheus.adress":               "unknown field",
		"metrics[0].provider.prometheus.headers[0].sensitive": "unknown field",
		"metrics[0].provider.prometheus.timeout":              "must be an integer, got a string",
		"metrics[1].provider.judge.critical":                  "must be true or false, got a string",
	} {
		if fields[field] != msg {
			t.Errorf("%s: got %q, want %q (all: %v)", field, fields[field], msg, errs)
		}
	}
	if _, ok := fields["metrics[0].successCondition"]; !ok || len(errs) != 6 {
		t.Errorf("got %v, want the condition's problem too, and each problem once", errs)
	}
}

// The providers declare which of their fields are PromQL and expr: an
// argument's value is escaped there, and --max-query-length bounds the
// PromQL ones; every other field is bounded as a field.
func TestProvidersDeclareTheirLanguages(t *testing.T) {
	langs := languages(Builtin(noSources))
	want := map[string]spec.Language{
		"provider.prometheus.query": promql.Language{}, "provider.prometheus.rangeQuery.start": condition.Expr, "provider.prometheus.rangeQuery.end": condition.Expr,
		"provider.judge.canary": promql.Language{}, "provider.judge.baseline": promql.Language{},
		"provider.judge.counts.canary.bad": promql.Language{}, "provider.judge.counts.canary.total": promql.Language{},
		"provider.judge.counts.baseline.bad": promql.Language{}, "provider.judge.counts.baseline.total": promql.Language{},
	}
	if !maps.Equal(langs, want) {
		t.Errorf("languages: got %v, want %v", langs, want)
	}
	long := strings.Repeat("a", 40)
	doc := mustParse(t, `args: [{name: v, value: 'x"y'}]
metrics:
- {name: p, provider: {prometheus: {query: 'up{a="{{args.v}}"}', address: 'http://`+long+`'}}}
- {name: j, provider: {judge: {canary: `+long+`, baseline: b, lookback: 1h, step: 1m}}}
`)
	compiled, errs := Compile(doc, nil, Builtin(noSources), WithLimits(limits.Limits{MaxQueryLength: 30, MaxFieldLength: 30}))
	checkErrors(t, "bounds", errs, []api.FieldError{
		fe("metrics[0].provider.prometheus.address", "the field is 47 bytes long, longer than the 30 this canaryd accepts in one field"),
		fe("metrics[1].provider.judge.canary", "the query is 40 bytes long, longer than the 30 this canaryd accepts (--max-query-length)"),
	})
	if compiled != nil {
		t.Fatal("compiled over its bounds")
	}
	compiled, errs = Compile(doc, nil, Builtin(noSources))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := string(compiled.Spec.Metrics[0].Provider.Prometheus); !strings.Contains(got, `up{a=\"x\\\"y\"}`) {
		t.Errorf("the value is not escaped in the query: %s", got)
	}
}

// The credentials a metric carries are its provider's to tell: a compiled
// spec says whether it holds any (a store keeps it sealed).
func TestCompiledCredentials(t *testing.T) {
	for _, tt := range []struct {
		provider string
		want     bool
	}{
		{`{prometheus: {query: up}}`, false},
		{`{prometheus: {query: up, headers: [{key: X-Scope-OrgID, value: team}]}}`, false},
		{`{prometheus: {query: up, headers: [{key: Authorization, value: Bearer x}]}}`, true},
		{`{prometheus: {query: up, authentication: {basicAuth: {username: u, password: p}}}}`, true},
		{`{judge: {canary: c, baseline: b, lookback: 1h, step: 1m, authentication: {oauth2: {clientSecret: s}}}}`, true},
	} {
		compiled, errs := Compile(mustParse(t, `metrics: [{name: m, provider: `+tt.provider+`}]`), nil, Builtin(noSources))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", tt.provider, errs)
		}
		if compiled.Credentials != tt.want {
			t.Errorf("%s: Credentials %v, want %v", tt.provider, compiled.Credentials, tt.want)
		}
	}
}

// A document that spec.Parse cannot decode is compiled no further, but its
// providers' configurations are checked for their shape, so that their
// unknown fields and wrong types are listed with the document's.
func TestShapeProblemsOfADocumentThatDoesNotDecode(t *testing.T) {
	input := `metrics:
- name: 5
  count: true
  provider:
    prometheus: {query: {a: b}, timeout: "10", insecure: "yes", headers: {key: a}, rangeQuery: [now], adress: x}
- name: w
  provider: {judge: {canary: c, lookback: 30}}
- "just a name"
`
	_, _, errs := ParseAndCompile([]byte(input), nil, Builtin(noSources))
	checkErrors(t, "shape problems", errs, []api.FieldError{
		fe("metrics[0].count", "must be an integer or a string, got a boolean"),
		fe("metrics[0].name", "must be a string, got a number (quote the value in YAML)"),
		fe("metrics[2]", "must be an object, got a string"),
		fe("metrics[0].provider.prometheus.adress", "unknown field"),
		fe("metrics[0].provider.prometheus.headers", "must be a list, got an object"),
		fe("metrics[0].provider.prometheus.insecure", "must be true or false, got a string"),
		fe("metrics[0].provider.prometheus.query", "must be a string, got an object"),
		fe("metrics[0].provider.prometheus.rangeQuery", "must be an object, got a list"),
		fe("metrics[0].provider.prometheus.timeout", "must be an integer, got a string"),
		fe("metrics[1].provider.judge.lookback", "must be a string, got a number (quote the value in YAML)"),
	})
	// A wrong kind keeps the spec from being checked at all.
	_, _, errs = ParseAndCompile([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nspec: {metrics: [{name: m, provider: {prometheus: {adress: x}}}]}\n"), nil, Builtin(noSources))
	if len(errs) != 1 || errs[0].Field != "kind" {
		t.Errorf("a wrong kind: got %v", errs)
	}
}
