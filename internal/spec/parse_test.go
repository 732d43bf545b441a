package spec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// seedQuery is the seed template's query, which must reach Prometheus
// exactly as written.
const seedQuery = `sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="echo", response_code!~"5.."}[1m]))
/
sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="echo"}[1m]))
`

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file      string
		kind      string
		name      string
		namespace string
		metrics   []string
		args      []string
	}{
		{"success-rate.yaml", KindAnalysisTemplate, "success-rate", "echo", []string{"non-5xx-rate"}, nil},
		{"success-rate.json", KindAnalysisTemplate, "success-rate", "echo", []string{"non-5xx-rate"}, nil},
		{"success-rate-args.yaml", KindAnalysisTemplate, "success-rate-args", "", []string{"non-5xx-rate"}, []string{"namespace"}},
		{"analysisrun.yaml", KindAnalysisRun, "echo-7d9c6b8f5d-4-2", "echo", []string{"non-5xx-rate", "latency-p99"}, []string{"namespace", "service"}},
		{"cluster-analysis-template.yaml", KindClusterAnalysisTemplate, "error-budget", "", []string{"error-budget"}, []string{"service-name", "prometheus-address", "threshold"}},
		{"bare-spec.yaml", "", "", "", []string{"error-rate", "saturation"}, []string{"count", "pod"}},
	}
	for _, tt := range tests {
		doc, errs := Parse(fixture(t, tt.file))
		if len(errs) > 0 {
			t.Errorf("%s: unexpected errors:\n%s", tt.file, formatErrors(errs))
			continue
		}
		wantVersion := APIVersion
		if tt.kind == "" {
			wantVersion = ""
		}
		if doc.Kind != tt.kind || doc.APIVersion != wantVersion {
			t.Errorf("%s: got %s %s, want %s %s", tt.file, doc.APIVersion, doc.Kind, wantVersion, tt.kind)
		}
		if doc.Metadata.Name != tt.name || doc.Metadata.Namespace != tt.namespace {
			t.Errorf("%s: got metadata %+v, want name %q namespace %q", tt.file, doc.Metadata, tt.name, tt.namespace)
		}
		var metrics, args []string
		for _, m := range doc.Spec.Metrics {
			metrics = append(metrics, m.Name)
		}
		for _, a := range doc.Spec.Args {
			args = append(args, a.Name)
		}
		if !reflect.DeepEqual(metrics, tt.metrics) || !reflect.DeepEqual(args, tt.args) {
			t.Errorf("%s: got metrics %q args %q, want %q %q", tt.file, metrics, args, tt.metrics, tt.args)
		}
	}
}

// The seed template must parse, resolve and validate clean, and its query
// must be left exactly as written.
func TestSeedTemplate(t *testing.T) {
	yamlDoc, errs := Parse(fixture(t, "success-rate.yaml"))
	if len(errs) > 0 {
		t.Fatalf("yaml: %s", formatErrors(errs))
	}
	jsonDoc, errs := Parse(fixture(t, "success-rate.json"))
	if len(errs) > 0 {
		t.Fatalf("json: %s", formatErrors(errs))
	}
	if y, j := raw(yamlDoc), raw(jsonDoc); !bytes.Equal(y, j) {
		t.Errorf("YAML and JSON seed differ:\nyaml %s\njson %s", y, j)
	}

	resolved, errs := resolveArgs(&yamlDoc.Spec, nil)
	if len(errs) > 0 {
		t.Fatalf("Resolve: %s", formatErrors(errs))
	}
	if errs := resolved.Validate(testScored); len(errs) > 0 {
		t.Fatalf("Validate: %s", formatErrors(errs))
	}
	m := resolved.Metrics[0]
	if got := prom(m.Provider).Query; got != seedQuery {
		t.Errorf("query changed:\ngot  %q\nwant %q", got, seedQuery)
	}
	want := Metric{
		Name:             "non-5xx-rate",
		Interval:         "30s",
		Count:            intOrStr(3),
		SuccessCondition: "result[0] >= 0.99",
		FailureLimit:     intOrStr(1),
		Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{
			Address: "http://kube-prometheus-stack-prometheus.observability.svc.cluster.local:9090",
			Query:   seedQuery,
		})},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("seed metric:\ngot  %+v\nwant %+v", m, want)
	}
}

func TestSuccessRateArgsFixture(t *testing.T) {
	doc := mustParse(t, string(fixture(t, "success-rate-args.yaml")))
	if _, errs := resolveArgs(&doc.Spec, nil); !reflect.DeepEqual(errs, []api.FieldError{fe("args[0].value", `argument "namespace" was not supplied`)}) {
		t.Errorf("without the namespace: got\n%s", formatErrors(errs))
	}
	resolved, errs := resolveArgs(&doc.Spec, map[string]string{"namespace": "echo"})
	if len(errs) > 0 {
		t.Fatalf("Resolve: %s", formatErrors(errs))
	}
	if errs := resolved.Validate(testScored); len(errs) > 0 {
		t.Fatalf("Validate: %s", formatErrors(errs))
	}
	p := prom(resolved.Metrics[0].Provider)
	if p.Query != seedQuery || p.Address != "" {
		t.Errorf("got address %q query %q, want no address and the seed query", p.Address, p.Query)
	}
}

func TestParseAnalysisRunKeepsSpec(t *testing.T) {
	doc := mustParse(t, string(fixture(t, "analysisrun.yaml")))
	s := doc.Spec
	if got := s.Args[0].Value; got == nil || *got != "echo" {
		t.Errorf("args[0].value: got %v, want echo", got)
	}
	if got := s.Metrics[1].Count; !reflect.DeepEqual(got, strOrStr("3")) {
		t.Errorf("metrics[1].count: got %+v, want the string 3", got)
	}
	if got := prom(s.Metrics[1].Provider).Timeout; got == nil || *got != 10 {
		t.Errorf("metrics[1].provider.prometheus.timeout: got %v, want 10", got)
	}
	want := []DryRun{{MetricName: "latency-.*"}}
	if !reflect.DeepEqual(s.DryRun, want) {
		t.Errorf("dryRun: got %+v, want %+v", s.DryRun, want)
	}
	wantRetention := []MeasurementRetention{{MetricName: "non-5xx-rate", Limit: 20}}
	if !reflect.DeepEqual(s.MeasurementRetention, wantRetention) {
		t.Errorf("measurementRetention: got %+v, want %+v", s.MeasurementRetention, wantRetention)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Spec
	}{
		{
			name:  "bare spec in JSON",
			input: `{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up"}}}]}`,
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}}},
		},
		{
			name:  "YAML flow mapping that is not JSON",
			input: `{metrics: [{name: m, provider: {prometheus: {query: up}}}]}`,
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}}},
		},
		{
			name:  "byte order mark and leading document marker",
			input: "\xEF\xBB\xBF---\nmetrics:\n- name: m\n  provider: {prometheus: {query: up}}\n",
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}}},
		},
		{
			name:  "trailing empty document",
			input: "metrics:\n- name: m\n  provider: {prometheus: {query: up}}\n---\n",
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}}},
		},
		{
			name:  "nulls are unset",
			input: "metrics:\n- name: m\n  count: null\n  interval:\n  provider: {prometheus: {query: up}, web: null}\nargs: null\n",
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"}), Web: []byte("null")}}}},
		},
		{
			name: "int-or-string counts and limits",
			input: `{"metrics": [{"name": "m", "count": "{{args.n}}", "failureLimit": -1, "consecutiveSuccessLimit": "2",
				"inconclusiveLimit": 0, "consecutiveErrorLimit": "4", "provider": {"prometheus": {"query": "up"}}}]}`,
			want: Spec{Metrics: []Metric{{
				Name: "m", Count: strOrStr("{{args.n}}"), FailureLimit: intOrStr(-1), ConsecutiveSuccessLimit: strOrStr("2"),
				InconclusiveLimit: intOrStr(0), ConsecutiveErrorLimit: strOrStr("4"),
				Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})},
			}}},
		},
		{
			name: "every prometheus field",
			input: `
metrics:
- name: m
  provider:
    prometheus:
      address: http://prom:9090
      query: up
      timeout: 5
      insecure: true
      headers: [{key: X-Scope-OrgID, value: tenant}]
      rangeQuery: {start: now() - duration("5m"), end: now(), step: 30s}
      authentication:
        sigv4: {region: eu-west-1, profile: p, roleArn: arn}
        oauth2: {tokenUrl: http://t, clientId: c, clientSecret: s, scopes: [a, b]}
        basicAuth: {username: u, password: p}
`,
			want: Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Prometheus: json.RawMessage(`{"address":"http://prom:9090",` +
				`"authentication":{"basicAuth":{"password":"p","username":"u"},"oauth2":{"clientId":"c","clientSecret":"s","scopes":["a","b"],"tokenUrl":"http://t"},` +
				`"sigv4":{"profile":"p","region":"eu-west-1","roleArn":"arn"}},"headers":[{"key":"X-Scope-OrgID","value":"tenant"}],"insecure":true,"query":"up",` +
				`"rangeQuery":{"end":"now()","start":"now() - duration(\"5m\")","step":"30s"},"timeout":5}`)}}}},
		},
		{
			name:  "another provider is kept to be named",
			input: `{"metrics": [{"name": "m", "provider": {"web": {"url": "http://x", "anything": [1]}}}]}`,
			want:  Spec{Metrics: []Metric{{Name: "m", Provider: MetricProvider{Web: []byte(`{"url": "http://x", "anything": [1]}`)}}}},
		},
		{
			name: "argument value, valueFrom",
			input: `{"args": [{"name": "a", "value": "x"}, {"name": "b", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
				{"name": "c", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}], "metrics": []}`,
			want: Spec{Metrics: []Metric{}, Args: []Argument{
				{Name: "a", Value: ptr("x")},
				{Name: "b", ValueFrom: &ValueFrom{SecretKeyRef: &SecretKeyRef{Name: "s", Key: "k"}}},
				{Name: "c", ValueFrom: &ValueFrom{FieldRef: &FieldRef{FieldPath: "metadata.name"}}},
			}},
		},
		{
			name:  "document with only what is required",
			input: "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nspec: {metrics: []}\n",
			want:  Spec{Metrics: []Metric{}},
		},
	}
	for _, tt := range tests {
		doc, errs := Parse([]byte(tt.input))
		if len(errs) > 0 {
			t.Errorf("%s: unexpected errors:\n%s", tt.name, formatErrors(errs))
			continue
		}
		if got, want := raw(doc.Spec), raw(tt.want); !bytes.Equal(got, want) {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const doc = "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\n"
	const empty = "empty input: expected an Argo Rollouts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, or a bare spec"
	tests := []struct {
		name  string
		input string
		want  []api.FieldError
	}{
		{"empty", "", []api.FieldError{fe("body", empty)}},
		{"blank", " \n\t\n", []api.FieldError{fe("body", empty)}},
		{"only a comment", "# nothing\n", []api.FieldError{fe("body", empty)}},
		{"only a document marker", "---\n", []api.FieldError{fe("body", empty)}},
		{"null", "null", []api.FieldError{fe("body", empty)}},
		{"list", "[1, 2]", []api.FieldError{fe("body", "expected an object (an Argo Rollouts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, or a bare spec), got a list")}},
		{"scalar", "hello", []api.FieldError{fe("body", "expected an object (an Argo Rollouts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, or a bare spec), got a string")}},
		{"truncated JSON", `{"metrics": [`, []api.FieldError{fe("body", "invalid JSON: line 1, column 14: unexpected end of input")}},
		{"bad JSON", "{\n  \"metrics\": [},\n}", []api.FieldError{fe("body", "invalid JSON: line 2, column 15: invalid character '}' looking for beginning of value")}},
		{"trailing JSON", `{"metrics": []} {}`, []api.FieldError{fe("body", "invalid JSON: line 1, column 17: unexpected data after the top-level value")}},
		{"bad YAML", "metrics:\n- name: a\n  count: 1\n bad: 2\n", []api.FieldError{fe("body", "invalid YAML: yaml: line 3: did not find expected key")}},
		{"tab-indented YAML", "metrics:\n\t- name: a\n", []api.FieldError{fe("body", "invalid YAML: yaml: line 2: found character that cannot start any token")}},
		{"two YAML documents", doc + "spec: {metrics: []}\n---\n" + doc + "spec: {metrics: []}\n", []api.FieldError{fe("body", "invalid YAML: more than one YAML document (separated by ---); send one document per request")}},
		{"duplicate YAML key", "metrics:\n- name: a\n  count: 1\n  count: 2\n", []api.FieldError{fe("body", "invalid YAML: yaml: unmarshal errors:\n  line 4: key \"count\" already set in map")}},
		{
			"duplicate JSON keys, each with its path",
			`{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun", "spec": {"metrics": [{"name": "a", "count": 1, "count": 2, "provider": {}}]}, "kind": "AnalysisRun"}`,
			[]api.FieldError{fe("metrics[0].count", "duplicate key"), fe("kind", "duplicate key")},
		},
		{"missing apiVersion", "kind: AnalysisTemplate\nspec: {metrics: []}\n", []api.FieldError{fe("apiVersion", "apiVersion must be specified: argoproj.io/v1alpha1, or canaryd.io/v1alpha1 for a canaryd template")}},
		{"missing kind", "apiVersion: argoproj.io/v1alpha1\nspec: {metrics: []}\n", []api.FieldError{fe("kind", "kind must be specified: AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun")}},
		{"only a spec", "spec: {metrics: []}\n", []api.FieldError{
			fe("apiVersion", "apiVersion must be specified: argoproj.io/v1alpha1, or canaryd.io/v1alpha1 for a canaryd template"),
			fe("kind", "kind must be specified: AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun"),
		}},
		{"wrong apiVersion", "apiVersion: argoproj.io/v1beta1\nkind: AnalysisTemplate\nspec: {metrics: [], bogus: 1}\n", []api.FieldError{
			fe("apiVersion", `unsupported apiVersion "argoproj.io/v1beta1": canaryd accepts argoproj.io/v1alpha1, or canaryd.io/v1alpha1 for a canaryd template`),
		}},
		{"wrong kind", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nspec: {replicas: 3}\n", []api.FieldError{
			fe("kind", `unsupported kind "Rollout": canaryd accepts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun`),
		}},
		{"kind of the wrong type", "apiVersion: 1\nkind: [AnalysisTemplate]\n", []api.FieldError{
			fe("apiVersion", `unsupported apiVersion 1: canaryd accepts argoproj.io/v1alpha1, or canaryd.io/v1alpha1 for a canaryd template`),
			fe("kind", `unsupported kind a list: canaryd accepts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun`),
		}},
		{"missing spec", doc + "metadata: {name: x}\n", []api.FieldError{fe("spec", "spec must be specified")}},
		{"null spec", doc + "spec:\n", []api.FieldError{fe("spec", "spec must be specified")}},
		{"spec not an object", doc + "spec: [1]\n", []api.FieldError{fe("spec", "must be an object, got a list")}},
		{"metadata not an object", doc + "metadata: x\nspec: {metrics: []}\n", []api.FieldError{fe("metadata", "must be an object, got a string")}},
		{"metadata name not a string", doc + "metadata: {name: 5, namespace: [a], labels: {x: y}}\nspec: {metrics: []}\n", []api.FieldError{
			fe("metadata.name", "must be a string, got a number"), fe("metadata.namespace", "must be a string, got a list"),
		}},
		{"status on a template", doc + "spec: {metrics: []}\nstatus: {phase: Running}\n", []api.FieldError{fe("status", "unknown field")}},
		{"run-only fields on a template", doc + "spec: {metrics: [], terminate: true, ttlStrategy: {}}\n", []api.FieldError{
			fe("terminate", "unknown field"), fe("ttlStrategy", "unknown field"),
		}},
		{"unknown top-level field of a document", doc + "spec: {metrics: []}\nitems: []\n", []api.FieldError{fe("items", "unknown field")}},
		{"template references", doc + "spec: {templates: [{templateName: other}], metrics: []}\n", []api.FieldError{
			fe("templates", "template references are not supported by canaryd: it cannot read other templates from a cluster; copy the referenced templates' metrics into this spec"),
		}},
		{"bare spec with metadata", "metadata: {name: x}\nmetrics: []\n", []api.FieldError{fe("metadata", "unknown field")}},
		{
			"several unknown fields at once, at every level",
			doc + `spec:
  dryrun: [{metricName: a}]
  args: [{name: a, default: x}]
  metrics:
  - name: a
    failureLimt: 1
    provider:
      prometheus: {query: up}
  - name: b
    succesCondition: "true"
    provider: {promethus: {query: up}}
  measurementRetention: [{metricName: a, limit: 1, keep: 2}]
`,
			[]api.FieldError{
				fe("args[0].default", "unknown field"),
				fe("dryrun", "unknown field"),
				fe("measurementRetention[0].keep", "unknown field"),
				fe("metrics[0].failureLimt", "unknown field"),
				fe("metrics[1].provider.promethus", "unknown field"),
				fe("metrics[1].succesCondition", "unknown field"),
			},
		},
		{"field names are case-sensitive", `{"Metrics": [], "metrics": [{"Name": "a", "name": "a", "provider": {}}]}`, []api.FieldError{
			fe("Metrics", "unknown field"), fe("metrics[0].Name", "unknown field"),
		}},
		{"valueFrom a pod template hash (Rollout-only)", "args: [{name: h, valueFrom: {podTemplateHashValue: Stable}}]\nmetrics: []\n", []api.FieldError{
			fe("args[0].valueFrom.podTemplateHashValue", "unknown field"),
		}},
		{
			"type errors, each with its path",
			`metrics:
- name: 5
  count: true
  failureLimit: 1.5
  inconclusiveLimit: 3000000000
  consecutiveErrorLimit: [1]
  interval: 30
  provider:
    prometheus: {query: up}
- "just a name"
args: [{name: flag, value: yes}, {name: n, value: 1.0}]
dryRun: {metricName: a}
measurementRetention: [{metricName: a, limit: "5"}]
`,
			[]api.FieldError{
				fe("args[0].value", "must be a string, got a boolean (quote the value in YAML)"),
				fe("args[1].name", "must be a string, got a boolean (quote the value in YAML)"), // YAML 1.1: n is false
				fe("args[1].value", "must be a string, got a number (quote the value in YAML)"),
				fe("dryRun", "must be a list, got an object"),
				fe("measurementRetention[0].limit", "must be an integer, got a string"),
				fe("metrics[0].consecutiveErrorLimit", "must be an integer or a string, got a list"),
				fe("metrics[0].count", "must be an integer or a string, got a boolean"),
				fe("metrics[0].failureLimit", "must be an integer (a 32-bit one) or a string, got 1.5"),
				fe("metrics[0].inconclusiveLimit", "must be an integer (a 32-bit one) or a string, got 3000000000"),
				fe("metrics[0].interval", "must be a string, got a number (quote the value in YAML)"),
				fe("metrics[0].name", "must be a string, got a number (quote the value in YAML)"),
				fe("metrics[1]", "must be an object, got a string"),
			},
		},
	}
	for _, tt := range tests {
		doc, errs := Parse([]byte(tt.input))
		if doc != nil && !onlyPrunedOrUnknown(doc, errs) {
			t.Errorf("%s: got a document with errors %v (pruned %v)", tt.name, errs, doc.Pruned())
		}
		if doc == nil && onlyUnknownFields(errs) {
			t.Errorf("%s: no document, but its only problems are unknown fields %v", tt.name, errs)
		}
		checkErrors(t, tt.name, errs, tt.want)
	}
}

// onlyPrunedOrUnknown reports whether every problem of a document Parse
// returned is an unknown field or a value it left out (Document.Pruned).
func onlyPrunedOrUnknown(doc *Document, errs []api.FieldError) bool {
	for _, e := range errs {
		if e.Message != unknownField && !slices.Contains(doc.Pruned(), e.Field) {
			return false
		}
	}
	return true
}

func onlyUnknownFields(errs []api.FieldError) bool {
	for _, e := range errs {
		if e.Message != unknownField {
			return false
		}
	}
	return true
}

func TestParseDepthLimit(t *testing.T) {
	deep := make([]byte, 0, 2*maxDepth+20)
	for range maxDepth + 1 {
		deep = append(deep, '[')
	}
	for range maxDepth + 1 {
		deep = append(deep, ']')
	}
	doc, errs := Parse(deep)
	if doc != nil || len(errs) != 1 || errs[0].Field != "body" {
		t.Errorf("deeply nested input: got %v %v, want one body error", doc, errs)
	}
}

// TestDecodeStrict checks a provider's configuration as Parse checks a
// document: every unknown field, duplicate key and wrong type on its path.
func TestDecodeStrict(t *testing.T) {
	type conf struct {
		Name    string             `json:"name"`
		Timeout *int64             `json:"timeout,omitempty"`
		List    []struct{ A bool } `json:"list,omitempty"`
		Raw     json.RawMessage    `json:"raw,omitempty"`
	}
	var c conf
	errs := DecodeStrict(json.RawMessage(`{"name": 1, "timeout": "x", "list": [{"A": 2}], "nope": true, "raw": [1]}`), &c, "provider.p")
	want := []api.FieldError{
		{Field: "provider.p.list[0].A", Message: "must be true or false, got a number"},
		{Field: "provider.p.name", Message: "must be a string, got a number (quote the value in YAML)"},
		{Field: "provider.p.nope", Message: unknownField},
		{Field: "provider.p.timeout", Message: "must be an integer, got a string"},
	}
	if !slices.Equal(errs, want) || c.Name != "" {
		t.Errorf("got %v (%+v), want %v", errs, c, want)
	}
	if errs := DecodeStrict(json.RawMessage(`{"name": "a", "name": "b"}`), &c, "provider.p"); !slices.Equal(errs, []api.FieldError{{Field: "provider.p.name", Message: "duplicate key"}}) {
		t.Errorf("duplicate key: got %v", errs)
	}
	if errs := DecodeStrict(json.RawMessage(`{"name": "a", "timeout": 5}`), &c, "provider.p"); errs != nil || c.Name != "a" || *c.Timeout != 5 {
		t.Errorf("got %v, %+v", errs, c)
	}
}
