package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
)

// serviceLimits are the bounds a service resolves with by default.
var serviceLimits = ResolveOptions{
	SecretArg: testSecret, Languages: testLanguages, Conditions: Expr,
	MaxQueryLength: 16 << 10, MaxConditionLength: 4096, MaxFieldLength: limits.MaxFieldLength, MaxResolvedSize: limits.MaxResolvedSize,
}

// withArgo is o for the spec of an argoproj.io/v1alpha1 document when argo
// is set.
func withArgo(o ResolveOptions, argo bool) ResolveOptions {
	o.Argo = argo
	return o
}

// TestResolveBoundsTheResolvedSpec tries to exceed each bound on the text a
// spec resolves to.
func TestResolveBoundsTheResolvedSpec(t *testing.T) {
	big := strings.Repeat("a", 20<<10)
	tests := []struct {
		name      string
		input     string
		overrides map[string]string
		limits    ResolveOptions
		want      []api.FieldError
	}{
		{name: "a query at its limit", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: 'x{a=\"{{args.a}}\"}'}}}]\n",
			overrides: map[string]string{"a": strings.Repeat("a", 16<<10-7)}, limits: serviceLimits},
		{name: "a query over its limit", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: 'x{a=\"{{args.a}}\"}'}}}]\n",
			overrides: map[string]string{"a": strings.Repeat("a", 16<<10-6)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.query", "with its arguments substituted the query would be 16385 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)")}},
		{name: "escaping counts", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: 'x{a=\"{{args.a}}\"}'}}}]\n",
			overrides: map[string]string{"a": strings.Repeat("\x00", 4000)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.query", "with its arguments substituted the query would be 16007 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)")}[:0]},
		{name: "escaping counts, over", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: 'x{a=\"{{args.a}}\"}'}}}]\n",
			overrides: map[string]string{"a": strings.Repeat("\x00", 4100)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.query", "with its arguments substituted the query would be 16407 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)")}},
		{name: "a query too long without arguments", input: "metrics: [{name: m, provider: {prometheus: {query: " + big + "}}}]\n", limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.query", "the query is 20480 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)")}},
		{name: "a judge's query", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {judge: {canary: '{{args.a}}', baseline: b, lookback: 1h, step: 1m}}}]\n",
			overrides: map[string]string{"a": big}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.judge.canary", "with its arguments substituted the query would be 20480 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)")}},
		{name: "a condition", input: "args: [{name: a}]\nmetrics: [{name: m, successCondition: 'result > {{args.a}}', provider: {prometheus: {query: up}}}]\n",
			overrides: map[string]string{"a": strings.Repeat("1", 5000)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].successCondition", "with its arguments substituted the condition would be 5009 bytes long, longer than the 4096 this canaryd accepts (--max-condition-length)")}},
		{name: "a header value", input: "args: [{name: api-token}]\nmetrics: [{name: m, provider: {prometheus: {query: up, headers: [{key: Authorization, value: 'Bearer {{args.api-token}}'}]}}}]\n",
			overrides: map[string]string{"api-token": strings.Repeat("t", 9000)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.headers[0].value", "with its arguments substituted the field would be 9007 bytes long, longer than the 8192 this canaryd accepts in one field")}},
		{name: "an address", input: "args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: up, address: 'http://{{args.a}}'}}}]\n",
			overrides: map[string]string{"a": big}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.address", "with its arguments substituted the field would be 20487 bytes long, longer than the 8192 this canaryd accepts in one field")}},
		{name: "all the metrics together", input: manyMetrics(80, "x{a=\"{{args.a}}\"}"), overrides: map[string]string{"a": strings.Repeat("a", 14<<10)}, limits: serviceLimits,
			want: []api.FieldError{fe("metrics", "with their arguments substituted the metrics would be 1151830 bytes, more than the 1048576 this canaryd accepts in one spec")}},
		{name: "no limits on the command line", input: manyMetrics(80, "x{a=\"{{args.a}}\"}"), overrides: map[string]string{"a": big}},
	}
	for _, tt := range tests {
		doc := mustParse(t, tt.input)
		res, errs := doc.Spec.Resolve(tt.overrides, tt.limits)
		checkErrors(t, tt.name, errs, tt.want)
		if (res == nil) == (len(tt.want) == 0) {
			t.Errorf("%s: got a spec %v with %d errors", tt.name, res != nil, len(errs))
		}
	}
}

func manyMetrics(n int, query string) string {
	var b strings.Builder
	b.WriteString("args: [{name: a}]\nmetrics:\n")
	for i := range n {
		fmt.Fprintf(&b, "- {name: m%d, provider: {prometheus: {query: '%s'}}}\n", i, query)
	}
	return b.String()
}

// A value a thousand times in a field, a thousand times the value: refused
// from the counts, without building any of it.
func TestResolveRefusesTheProductWithoutBuildingIt(t *testing.T) {
	value := strings.Repeat("a", 100<<10)
	for _, tt := range []struct {
		name, field string
		set         func(*Metric, string)
		text        string
	}{
		{"a query, outside quotes", "metrics[0].provider.prometheus.query", setQuery, "x" + strings.Repeat(" + {{args.v}}", 10000)},
		{"a query, inside quotes", "metrics[0].provider.prometheus.query", setQuery, `x{a="` + strings.Repeat("{{args.v}}", 10000) + `"}`},
		{"a header", "metrics[0].provider.prometheus.headers[0].value", setHeader, strings.Repeat("{{args.v}}", 10000)},
	} {
		s := oneArg(tt.set, tt.text, false)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, errs := s.Resolve(map[string]string{"v": value}, serviceLimits)
		runtime.ReadMemStats(&after)
		if res != nil || len(errs) != 1 || errs[0].Field != tt.field || !strings.Contains(errs[0].Message, "would be 10240") {
			t.Errorf("%s: %v", tt.name, errs)
		}
		// The product is a gigabyte; what is measured is the template.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 32<<20 {
			t.Errorf("%s: resolving allocated %d MiB", tt.name, allocated>>20)
		}
	}
}

// The templates shipped (testdata, deploy) resolve with the arguments they
// are run with: namespace and service names, durations, numbers, an
// address and a token.
func TestShippedSpecsResolveWithRealArguments(t *testing.T) {
	values := map[string]string{
		"namespace": "echo", "service": "web", "service-name": "web-api", "threshold-ms": "500", "threshold": "0.99",
		"count": "5", "canary": "web-canary", "baseline": "web-stable", "prometheus-address": "http://prometheus:9090",
		"canaryd-token": "c4naryd-t0ken", "pod": "web-7d9c", "canary-hash": "7d9c5b8f4",
	}
	var files []string
	for _, dir := range []string{"testdata/templates", "testdata/specs", "testdata/judge-specs", "deploy/kustomize/base/templates", "deploy/examples/templates", "deploy/examples/argo"} {
		matches, err := filepath.Glob(filepath.Join("..", "..", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	resolved := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(data), "\n---\n") {
			doc, errs := Parse([]byte(part))
			if doc == nil || len(errs) > 0 {
				continue // another kind (a Rollout, a Secret), or several documents
			}
			overrides := map[string]string{}
			for _, a := range doc.Spec.Args {
				if v, ok := values[a.Name]; ok {
					overrides[a.Name] = v
				}
			}
			if _, errs := doc.Spec.Resolve(overrides, withArgo(serviceLimits, doc.APIVersion == APIVersion)); len(errs) > 0 {
				t.Errorf("%s: %s", file, formatErrors(errs))
			}
			resolved++
		}
	}
	if resolved < 12 {
		t.Errorf("resolved %d documents of %d files; the fixtures moved?", resolved, len(files))
	}
}
