package compile

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
)

// A metric names its provider by the key of its provider object; the
// registry decides which names this canaryd runs.
func TestProvidersRegistry(t *testing.T) {
	var gotConfig json.RawMessage
	reg := Builtin(noSources).Register("web", provider.Func(func(config any) (analysis.Source, map[string]string, []api.FieldError) {
		gotConfig, _ = config.(json.RawMessage)
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
	Builtin(noSources).Register("prometheus", PrometheusProvider(noSources))
}
