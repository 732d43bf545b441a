package spec

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// promSpec is a bare spec of one Prometheus metric whose query is query,
// with args (YAML flow list) declared.
func promSpec(args, query string) string {
	return "args: " + args + "\nmetrics:\n- name: m\n  provider:\n    prometheus:\n      query: " + strconv.Quote(query) + "\n"
}

func TestResolveQuery(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		overrides map[string]string
		query     string
		want      string
		wantErrs  []api.FieldError
	}{
		{name: "no tags", args: "[]", query: `up{job="a"}`, want: `up{job="a"}`},
		{name: "tag", args: "[{name: ns, value: echo}]", query: `up{ns="{{args.ns}}"}`, want: `up{ns="echo"}`},
		{name: "tag with spaces", args: "[{name: ns, value: echo}]", query: `up{ns="{{ args.ns }}", x="{{args.ns   }}"}`, want: `up{ns="echo", x="echo"}`},
		{name: "name with dashes", args: "[{name: service-name, value: web}]", query: `up{s="{{args.service-name}}"}`, want: `up{s="web"}`},
		{name: "value with quotes and newlines, escaped in a string", args: `[{name: v, value: "a\"b\nc\\d"}]`, query: `x{v="{{args.v}}"}`, want: `x{v="a\"b\nc\\d"}`},
		{name: "value with control characters Argo would choke on", args: `[{name: v, value: "\u0007\u0000\u007f"}]`, query: `x{v="{{args.v}}"}`, want: `x{v="\a\x00\x7f"}`},
		{name: "value that looks like a tag is not expanded again", args: `[{name: v, value: "{{args.v}}"}]`, query: `x{v="{{args.v}}"}`, want: `x{v="{{args.v}}"}`},
		{name: "same tag twice", args: "[{name: a, value: x}]", query: `{{args.a}}{{args.a}}`, want: "xx"},
		{name: "lone closing braces are text", args: "[]", query: `a}}b`, want: "a}}b"},
		{name: "override replaces the default", args: "[{name: ns, value: echo}]", overrides: map[string]string{"ns": "prod"}, query: `{{args.ns}}`, want: "prod"},
		{name: "override supplies a missing value", args: "[{name: ns}]", overrides: map[string]string{"ns": "prod"}, query: `{{args.ns}}`, want: "prod"},
		{name: "empty override is a value", args: "[{name: ns, value: echo}]", overrides: map[string]string{"ns": ""}, query: `x{ns="{{args.ns}}"}`, want: `x{ns=""}`},
		{
			name: "missing argument", args: "[{name: ns}, {name: other, value: x}]", query: `{{args.ns}}`,
			wantErrs: []api.FieldError{fe("args[0].value", `argument "ns" was not supplied`)},
		},
		{
			name: "missing argument, even when no metric uses it (as in Argo)", args: "[{name: unused}]", query: `up`,
			wantErrs: []api.FieldError{fe("args[0].value", `argument "unused" was not supplied`)},
		},
		{
			name: "unknown tags, each reported once", args: "[{name: ns, value: echo}]", query: `{{workflow.name}} {{ args.nope }} {{args.ns}} {{workflow.name}} {{}}`,
			wantErrs: []api.FieldError{
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{workflow.name}}"),
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{ args.nope }}"),
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{}}"),
			},
		},
		{
			name: "tags are case-sensitive", args: "[{name: ns, value: echo}]", query: `{{Args.ns}}{{args.NS}}`,
			wantErrs: []api.FieldError{
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{Args.ns}}"),
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{args.NS}}"),
			},
		},
		{
			name: "unclosed tag", args: "[{name: ns, value: echo}]", query: `{{args.ns}} {{args.ns`,
			wantErrs: []api.FieldError{fe("metrics[0].provider.prometheus.query", `failed to resolve: "{{" without a closing "}}"`)},
		},
		{
			name: "undeclared overrides, sorted", args: "[{name: ns, value: echo}, {name: ns, value: echo}]", overrides: map[string]string{"nss": "x", "b": "y"}, query: `up`,
			wantErrs: []api.FieldError{
				fe("args.b", `argument "b" is not declared by the spec (declared: ns)`),
				fe("args.nss", `argument "nss" is not declared by the spec (declared: ns)`),
			},
		},
		{
			name: "override of a spec without arguments", args: "[]", overrides: map[string]string{"ns": "x"}, query: `up`,
			wantErrs: []api.FieldError{fe("args.ns", `argument "ns" is not declared by the spec (it declares no arguments)`)},
		},
		{
			name: "secretKeyRef", args: "[{name: token, valueFrom: {secretKeyRef: {name: prom, key: token}}}]", query: `{{args.token}}`,
			wantErrs: []api.FieldError{fe("args[0].valueFrom", `argument "token": valueFrom.secretKeyRef (Secret "prom", key "token") is Kubernetes-only and canaryd runs outside the cluster; supply the value with --arg token=VALUE, the query parameter arg.token=VALUE or the request body's args`)},
		},
		{
			name: "secretKeyRef next to a value still needs the Secret", args: "[{name: token, value: x, valueFrom: {secretKeyRef: {name: prom, key: token}}}]", query: `up`,
			wantErrs: []api.FieldError{fe("args[0].valueFrom", `argument "token": valueFrom.secretKeyRef (Secret "prom", key "token") is Kubernetes-only and canaryd runs outside the cluster; supply the value with --arg token=VALUE, the query parameter arg.token=VALUE or the request body's args`)},
		},
		{
			name: "fieldRef", args: `[{name: hash, valueFrom: {fieldRef: {fieldPath: "metadata.labels['x']"}}}]`, query: `{{args.hash}}`,
			wantErrs: []api.FieldError{fe("args[0].valueFrom", `argument "hash": valueFrom.fieldRef ("metadata.labels['x']") reads a Rollout, which is Kubernetes-only and canaryd runs outside the cluster; supply the value with --arg hash=VALUE, the query parameter arg.hash=VALUE or the request body's args`)},
		},
		{
			name: "empty valueFrom", args: "[{name: x, valueFrom: {}}]", query: `up`,
			wantErrs: []api.FieldError{fe("args[0].valueFrom", `argument "x" was not supplied: its valueFrom names no source; supply the value with --arg x=VALUE, the query parameter arg.x=VALUE or the request body's args`)},
		},
		{name: "override wins over secretKeyRef", args: "[{name: token, valueFrom: {secretKeyRef: {name: prom, key: token}}}]", overrides: map[string]string{"token": "s3cr3t"}, query: `{{args.token}}`, want: "s3cr3t"},
		{name: "override wins over fieldRef", args: "[{name: hash, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]", overrides: map[string]string{"hash": "abc"}, query: `{{args.hash}}`, want: "abc"},
		{name: "argument declared twice with one value", args: "[{name: a}, {name: a, value: x}]", query: `{{args.a}}`, want: "x"},
		{name: "argument declared twice with the same value", args: "[{name: a, value: x}, {name: a, value: x}]", query: `{{args.a}}`, want: "x"},
		{
			name: "argument declared twice with different values", args: "[{name: a, value: x}, {name: a, value: z}]", query: `{{args.a}}`,
			wantErrs: []api.FieldError{fe("args[1].value", "Argument `a` specified multiple times with different values: 'x', 'z'")},
		},
		{
			name: "every problem at once", args: "[{name: a}, {name: s, valueFrom: {secretKeyRef: {name: sec, key: k}}}]", overrides: map[string]string{"z": "1"},
			query: `{{args.a}} {{args.s}} {{args.b}}`,
			wantErrs: []api.FieldError{
				fe("args.z", `argument "z" is not declared by the spec (declared: a, s)`),
				fe("args[0].value", `argument "a" was not supplied`),
				fe("args[1].valueFrom", `argument "s": valueFrom.secretKeyRef (Secret "sec", key "k") is Kubernetes-only and canaryd runs outside the cluster; supply the value with --arg s=VALUE, the query parameter arg.s=VALUE or the request body's args`),
				fe("metrics[0].provider.prometheus.query", "failed to resolve {{args.b}}"),
			},
		},
	}
	for _, tt := range tests {
		doc := mustParse(t, promSpec(tt.args, tt.query))
		got, errs := resolveArgs(&doc.Spec, tt.overrides)
		checkErrors(t, tt.name, errs, tt.wantErrs)
		if tt.wantErrs != nil {
			if got != nil {
				t.Errorf("%s: got a spec with errors", tt.name)
			}
			continue
		}
		if got == nil {
			continue
		}
		if q := prom(got.Metrics[0].Provider).Query; q != tt.want {
			t.Errorf("%s: got query %q, want %q", tt.name, q, tt.want)
		}
	}
}

// Substitution reaches every string field, as Argo's marshal-substitute-
// unmarshal does, including counts and limits written as strings.
func TestResolveEveryField(t *testing.T) {
	const input = `
args:
- {name: nm, value: metric}
- {name: count, value: "5"}
- {name: two, value: "2"}
- {name: dur, value: 30s}
- {name: host, value: prom.example}
- {name: tenant, value: "team \"a\""}
metrics:
- name: "{{args.nm}}-rate"
  interval: "{{args.dur}}"
  initialDelay: "{{ args.dur }}"
  count: "{{args.count}}"
  failureLimit: "{{args.two}}"
  inconclusiveLimit: "{{args.two}}"
  consecutiveErrorLimit: "{{args.two}}"
  consecutiveSuccessLimit: "{{args.two}}"
  successCondition: result[0] >= {{args.two}}
  failureCondition: result[0] < {{args.two}}
  provider:
    prometheus:
      address: "https://{{args.host}}:9090"
      query: up{tenant="{{args.tenant}}"}
      headers: [{key: "X-{{args.nm}}", value: "{{args.tenant}}"}]
      rangeQuery: {start: "now() - duration(\"{{args.dur}}\")", end: "now()", step: "{{args.dur}}"}
      authentication:
        oauth2: {tokenUrl: "https://{{args.host}}/token", clientId: "{{args.nm}}", scopes: ["{{args.nm}}"]}
dryRun: [{metricName: "{{args.nm}}"}]
`
	doc := mustParse(t, input)
	got, errs := resolveArgs(&doc.Spec, nil)
	if len(errs) > 0 {
		t.Fatalf("Resolve: %s", formatErrors(errs))
	}
	want := Metric{
		Name:                    "metric-rate",
		Interval:                "30s",
		InitialDelay:            "30s",
		Count:                   strOrStr("5"),
		FailureLimit:            strOrStr("2"),
		InconclusiveLimit:       strOrStr("2"),
		ConsecutiveErrorLimit:   strOrStr("2"),
		ConsecutiveSuccessLimit: strOrStr("2"),
		SuccessCondition:        "result[0] >= 2",
		FailureCondition:        "result[0] < 2",
		Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{
			Address:    "https://prom.example:9090",
			Query:      `up{tenant="team \"a\""}`,
			Headers:    []Header{{Key: "X-metric", Value: `team "a"`}},
			RangeQuery: &PrometheusRangeQueryArgs{Start: `now() - duration("30s")`, End: "now()", Step: "30s"},
			Authentication: &Authentication{OAuth2: &OAuth2Config{
				TokenURL: "https://prom.example/token", ClientID: "metric", Scopes: []string{"metric"},
			}},
		})},
	}
	gotMetric := got.Metrics[0]
	if !reflect.DeepEqual(prom(gotMetric.Provider), prom(want.Provider)) {
		t.Errorf("resolved provider:\ngot  %s\nwant %s", gotMetric.Provider.Prometheus, want.Provider.Prometheus)
	}
	gotMetric.Provider, want.Provider = MetricProvider{}, MetricProvider{}
	if !reflect.DeepEqual(gotMetric, want) {
		t.Errorf("resolved metric:\ngot  %+v\nwant %+v", gotMetric, want)
	}
	// Argo does not template rule names.
	if got.DryRun[0].MetricName != "{{args.nm}}" {
		t.Errorf("dryRun[0].metricName: got %q, want it unchanged", got.DryRun[0].MetricName)
	}
	// The resolved copy carries the values used.
	if v := got.Args[5].Value; v == nil || *v != `team "a"` {
		t.Errorf("args[5].value: got %v", v)
	}
	if errs := got.Validate(testScored); !reflect.DeepEqual(errs, []api.FieldError{fe("dryRun[0].metricName", "Rule didn't match any metric name(s)")}) {
		t.Errorf("Validate: got\n%s", formatErrors(errs))
	}
}

func TestResolveErrorsAreOnTheirField(t *testing.T) {
	const input = `
metrics:
- name: a
  count: "{{args.count}}"
  provider:
    prometheus:
      query: up
      headers: [{key: X, value: "{{secret.token}}"}]
`
	doc := mustParse(t, input)
	_, errs := resolveArgs(&doc.Spec, nil)
	want := []api.FieldError{
		fe("metrics[0].count", "failed to resolve {{args.count}}"),
		fe("metrics[0].provider.prometheus.headers[0].value", "failed to resolve {{secret.token}}"),
	}
	checkErrors(t, "errors on their fields", errs, want)
}

// TestResolveRefusesInvalidUTF8 checks that an argument value that is not
// text (a query string's %96) is refused on its field, once, rather than
// substituted as U+FFFD.
func TestResolveRefusesInvalidUTF8(t *testing.T) {
	doc := mustParse(t, `
args: [{name: ns}, {name: job, value: api}]
metrics:
- name: a
  provider:
    prometheus:
      query: up{ns="{{args.ns}}",job="{{args.job}}"}
`)
	_, errs := resolveArgs(&doc.Spec, map[string]string{"ns": "echo\x96"})
	checkErrors(t, "an override", errs, []api.FieldError{fe("args.ns", notUTF8)})

	bad := "a\xff"
	doc.Spec.Args[1].Value = &bad
	_, errs = resolveArgs(&doc.Spec, map[string]string{"ns": "echo"})
	checkErrors(t, "a default", errs, []api.FieldError{fe("args[1].value", notUTF8)})
}

func TestResolveStringCount(t *testing.T) {
	tests := []struct {
		name     string
		count    string
		want     int32
		wantErrs []api.FieldError
	}{
		{name: "integer", count: "3", want: 3},
		{name: "zero", count: "0", want: 0},
		{name: "not an integer", count: "three", wantErrs: []api.FieldError{
			fe("metrics[0].count", `count must be an integer: "three" is not an integer (Argo Rollouts would silently read it as 0)`),
		}},
		{name: "padded", count: " 3", wantErrs: []api.FieldError{
			fe("metrics[0].count", `count must be an integer: " 3" is not an integer (Argo Rollouts would silently read it as 0)`),
		}},
		{name: "too big", count: "99999999999", wantErrs: []api.FieldError{
			fe("metrics[0].count", `count must be an integer: "99999999999" is out of range (-2147483648 to 2147483647)`),
		}},
	}
	for _, tt := range tests {
		doc := mustParse(t, `
args: [{name: count}]
metrics:
- name: m
  interval: 1m
  count: "{{args.count}}"
  provider: {prometheus: {query: up}}
`)
		resolved, errs := resolveArgs(&doc.Spec, map[string]string{"count": tt.count})
		if len(errs) > 0 {
			t.Errorf("%s: Resolve: %s", tt.name, formatErrors(errs))
			continue
		}
		checkErrors(t, tt.name, resolved.Validate(testScored), tt.wantErrs)
		if tt.wantErrs == nil {
			if got := resolved.Metrics[0].CountValue(); got != tt.want {
				t.Errorf("%s: CountValue() = %d, want %d", tt.name, got, tt.want)
			}
		}
	}
}

func TestResolveDoesNotChangeTheSpec(t *testing.T) {
	doc := mustParse(t, string(fixture(t, "cluster-analysis-template.yaml")))
	before, _ := json.Marshal(doc.Spec)
	resolved, errs := resolveArgs(&doc.Spec, map[string]string{"service-name": "web", "threshold": "0.9"})
	if len(errs) > 0 {
		t.Fatalf("Resolve: %s", formatErrors(errs))
	}
	resolved.Args[0].Value = ptr("changed")
	resolved.DryRun = append(resolved.DryRun, DryRun{MetricName: "x"})
	after, _ := json.Marshal(doc.Spec)
	if string(before) != string(after) {
		t.Errorf("Resolve changed its receiver:\nbefore %s\nafter  %s", before, after)
	}
	if got := prom(resolved.Metrics[0].Provider).Headers[0].Value; got != "web" {
		t.Errorf("header: got %q, want web", got)
	}
	if got := resolved.Metrics[0].SuccessCondition; got != "len(result) == 0 || result[0] >= 0.9" {
		t.Errorf("successCondition: got %q", got)
	}
}

// argoResolve is Argo Rollouts' ResolveMetricArgs, restated: marshal the
// metric, substitute strconv.Quote'd values into the JSON text, unmarshal.
// It exists to show that canaryd's substitution gives the same metric.
func argoResolve(m Metric, values map[string]string) (*Metric, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	text := string(raw)
	for name, v := range values {
		q := strconv.Quote(v)
		q = q[1 : len(q)-1]
		for _, tag := range []string{"{{args." + name + "}}", "{{ args." + name + " }}"} {
			text = strings.ReplaceAll(text, tag, q)
		}
	}
	var out Metric
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// With verbatim arguments (an Argo document on a canaryd run with
// --verbatim-args), canaryd substitutes as Argo does.
func TestResolveVerbatimMatchesArgo(t *testing.T) {
	values := []string{"echo", `a"b`, "line1\nline2", `back\slash`, "tab\there", "unicode ✓ é", `{"json": [1]}`, "", "  spaced  "}
	for _, v := range values {
		doc := mustParse(t, `
args: [{name: v}]
metrics:
- name: "m-{{args.v}}"
  successCondition: 'result[0] == "{{args.v}}"'
  provider:
    prometheus:
      query: 'up{l="{{ args.v }}"}'
      headers: [{key: K, value: "{{args.v}}"}]
`)
		res, errs := doc.Spec.Resolve(map[string]string{"v": v}, ResolveOptions{Argo: true, VerbatimArgs: true, Conditions: Expr, Languages: testLanguages})
		if len(errs) > 0 {
			t.Errorf("value %q: %s", v, formatErrors(errs))
			continue
		}
		got := res.Spec
		want, err := argoResolve(doc.Spec.Metrics[0], map[string]string{"v": v})
		if err != nil {
			t.Errorf("value %q: Argo's way failed: %v", v, err)
			continue
		}
		if !reflect.DeepEqual(got.Metrics[0], *want) {
			t.Errorf("value %q:\ncanaryd %+v\nArgo    %+v", v, got.Metrics[0], *want)
		}
	}
}
