package templates

import (
	"reflect"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

func fe(field, msg string) api.FieldError { return api.FieldError{Field: field, Message: msg} }

func mustParse(t *testing.T, name, text string) *spec.Document {
	t.Helper()
	doc, errs := spec.Parse([]byte(text))
	if len(errs) > 0 {
		t.Fatalf("%s: Parse:\n%s", name, formatFieldErrors(errs))
	}
	return doc
}

// Validation at load stands required arguments in with placeholders and
// reports only what the placeholders cannot have caused.
func TestCheckDocumentPlaceholders(t *testing.T) {
	tests := []struct {
		name string
		spec string // the spec of an AnalysisTemplate, indented by two
		want []api.FieldError
	}{
		{
			name: "required arguments everywhere: nothing to report",
			spec: `  args:
  - name: ns
  - name: count
  - name: threshold
  - name: address
  - name: token
    valueFrom: {secretKeyRef: {name: s, key: k}}
  - name: metric
  metrics:
  - name: rate-{{args.metric}}
    interval: 30s
    count: "{{args.count}}"
    failureLimit: 1
    successCondition: result[0] >= {{args.threshold}}
    provider:
      prometheus:
        address: "{{args.address}}"
        headers: [{key: Authorization, value: "Bearer {{args.token}}"}]
        query: sum(rate(x{ns="{{ args.ns }}"}[1m]))
  dryRun:
  - metricName: rate-canary
`,
		},
		{
			name: "a tag naming no argument is reported though its field uses one",
			spec: `  args:
  - name: ns
  metrics:
  - name: m
    successCondition: result[0] > 0
    provider:
      prometheus:
        query: x{ns="{{args.ns}}", pod="{{args.pod}}"}
`,
			want: []api.FieldError{fe("metrics[0].provider.prometheus.query", "failed to resolve {{args.pod}}")},
		},
		{
			name: "problems of fields without arguments are reported",
			spec: `  args:
  - name: count
  metrics:
  - name: m
    interval: 30s
    count: "{{args.count}}"
    failureLimit: -2
    provider:
      prometheus:
        query: up
`,
			want: []api.FieldError{fe("metrics[0].failureLimit", "failureLimit must be >= 0, or -1 to be disabled")},
		},
		{
			name: "a limit from an argument is not compared with the count",
			spec: `  args:
  - name: limit
  metrics:
  - name: m
    interval: 30s
    count: 2
    failureLimit: "{{args.limit}}"
    consecutiveSuccessLimit: 5
    provider:
      prometheus:
        query: up
`,
		},
		{
			name: "conditions are compiled",
			spec: `  args:
  - name: ns
  metrics:
  - name: m
    successCondition: result[0] >=
    provider:
      prometheus:
        query: x{ns="{{args.ns}}"}
`,
			want: []api.FieldError{fe("metrics[0].successCondition", "")},
		},
		{
			name: "a dryRun rule is checked when no metric name uses an argument",
			spec: `  args:
  - name: ns
  metrics:
  - name: m
    provider:
      prometheus:
        query: x{ns="{{args.ns}}"}
  dryRun:
  - metricName: other
`,
			want: []api.FieldError{fe("dryRun[0].metricName", "Rule didn't match any metric name(s)")},
		},
		{
			name: "an argument with a default is not a placeholder",
			spec: `  args:
  - name: count
    value: "x"
  metrics:
  - name: m
    interval: 30s
    count: "{{args.count}}"
    provider:
      prometheus:
        query: up
`,
			want: []api.FieldError{fe("metrics[0].count", "")},
		},
		{
			name: "an argument declared twice takes the value given",
			spec: `  args:
  - name: count
  - name: count
    value: "3"
  metrics:
  - name: m
    interval: 30s
    count: "{{args.count}}"
    provider:
      prometheus:
        query: up
`,
		},
	}
	for _, tt := range tests {
		doc := mustParse(t, tt.name, template("t", tt.spec))
		got := checkDocument(doc, testProviders, nil)
		// An empty wanted message matches any: the text is the spec's.
		for i := range got {
			if i < len(tt.want) && tt.want[i].Message == "" {
				got[i].Message = ""
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot\n%swant\n%s", tt.name, formatFieldErrors(got), formatFieldErrors(tt.want))
		}
	}
}

// The server's Check sees the placeholders, and its problems on fields
// that use them are dropped too.
func TestCheckCallback(t *testing.T) {
	allowed := "http://prometheus:9090"
	var seen []*spec.Document
	check := func(doc *spec.Document) []api.FieldError {
		seen = append(seen, doc)
		var errs []api.FieldError
		for i, m := range doc.Spec.Metrics {
			p, _ := prometheus.Decode(m.Provider.Prometheus)
			if a := p.Address; p != nil && a != "" && a != allowed {
				errs = append(errs, fe("metrics["+string(rune('0'+i))+"].provider.prometheus.address", "address "+a+" is not allowed"))
			}
		}
		return errs
	}
	tests := []struct {
		name, address string
		want          []api.FieldError
	}{
		{"allowed", allowed, nil},
		{"none", "", nil},
		{"not allowed", "http://elsewhere:9090", []api.FieldError{fe("metrics[0].provider.prometheus.address", "address http://elsewhere:9090 is not allowed")}},
		{"from an argument the caller supplies", "{{args.address}}", nil},
	}
	for _, tt := range tests {
		doc := mustParse(t, tt.name, template("t", `  args:
  - name: address
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
  metrics:
  - name: m
    provider:
      prometheus:
        address: "`+tt.address+`"
        query: up
`))
		seen = nil
		got := checkDocument(doc, testProviders, check)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot\n%swant\n%s", tt.name, formatFieldErrors(got), formatFieldErrors(tt.want))
		}
		if len(seen) != 1 {
			t.Fatalf("%s: Check called %d times, want once", tt.name, len(seen))
		}
		a := seen[0].Spec.Args[0]
		if a.Value == nil || *a.Value != spec.Placeholder("address") || a.ValueFrom != nil {
			t.Errorf("%s: Check was given argument %+v, want the placeholder", tt.name, a)
		}
		if doc.Spec.Args[0].Value != nil || doc.Spec.Args[0].ValueFrom == nil {
			t.Errorf("%s: the document itself was changed: %+v", tt.name, doc.Spec.Args[0])
		}
	}

	// Through the store.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.yaml": template("t", "  metrics:\n  - name: m\n    provider: {prometheus: {address: 'http://x:1', query: up}}\n")})
	s := load(t, dir, Options{Check: check})
	checkRows(t, "Check through the store", s, []row{{"t", "t.yaml:1", "error", "metrics[0].provider.prometheus.address"}})
}

func TestWithin(t *testing.T) {
	tests := []struct {
		path, parent string
		want         bool
	}{
		{"metrics[0].count", "metrics[0]", true},
		{"metrics[0].count", "metrics", true},
		{"metrics[10].count", "metrics[1]", false},
		{"metrics[0].count", "metrics[0].co", false},
		{"metrics[0]", "metrics[0]", false},
		{"anything", "", true},
	}
	for _, tt := range tests {
		if got := within(tt.path, tt.parent); got != tt.want {
			t.Errorf("within(%q, %q) = %v, want %v", tt.path, tt.parent, got, tt.want)
		}
	}
}

func TestUsesArg(t *testing.T) {
	names := map[string]bool{"ns": true, "service-name": true}
	tests := []struct {
		text string
		want bool
	}{
		{`x{ns="{{args.ns}}"}`, true},
		{`{{ args.service-name }}`, true},
		{`{{args.nsx}} {{args.other}}`, false},
		{`{{args.ns`, false},
		{`}}{{args.x}}{{args.ns}}`, true},
		{`no tags`, false},
	}
	for _, tt := range tests {
		if got := usesArg(tt.text, names); got != tt.want {
			t.Errorf("usesArg(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestArgs(t *testing.T) {
	doc := mustParse(t, "args", template("t", `  args:
  - name: namespace
  - name: threshold
    value: "0.99"
  - name: api-token
    value: s3cret
  - name: pod
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
  - name: count
  - name: count
    value: "3"
  metrics:
  - name: m
    provider: {prometheus: {query: up}}
`))
	str := func(s string) *string { return &s }
	tmpl := &Template{Args: templateArgs(&doc.Spec)}
	want := []Arg{
		{Name: "namespace", Required: true},
		{Name: "threshold", Value: str("0.99")},
		{Name: "api-token", Value: str("*****")},
		{Name: "pod", Required: true},
		{Name: "count", Value: str("3")},
	}
	if !reflect.DeepEqual(tmpl.Args, want) {
		t.Errorf("Args:\ngot  %s\nwant %s", formatArgs(tmpl.Args), formatArgs(want))
	}
	for _, tt := range []struct {
		supplied map[string]string
		want     []string
	}{
		{nil, []string{"namespace", "pod"}},
		{map[string]string{"namespace": "echo"}, []string{"pod"}},
		{map[string]string{"namespace": "echo", "pod": "p", "count": "1"}, nil},
	} {
		if got := tmpl.MissingArgs(tt.supplied); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("MissingArgs(%v) = %q, want %q", tt.supplied, got, tt.want)
		}
	}
}

func formatArgs(args []Arg) string {
	var parts []string
	for _, a := range args {
		v := "<nil>"
		if a.Value != nil {
			v = *a.Value
		}
		parts = append(parts, a.Name+"="+v+map[bool]string{true: " (required)"}[a.Required])
	}
	return strings.Join(parts, ", ")
}

// The fixtures load clean, with the arguments a caller must supply.
func TestFixtures(t *testing.T) {
	s := load(t, "../../testdata/templates", Options{})
	checkRows(t, "fixtures", s, []row{{"latency-p99", "latency-p99.yaml:10", "ok", ""}, {"success-rate", "success-rate.yaml:7", "ok", ""}})
	str := func(s string) *string { return &s }
	for name, want := range map[string][]Arg{
		"success-rate": {{Name: "namespace", Required: true}},
		"latency-p99":  {{Name: "service", Required: true}, {Name: "threshold-ms", Value: str("500")}},
	} {
		tmpl, ok := s.Get(name)
		if !ok {
			t.Fatalf("%s: not served", name)
		}
		if !reflect.DeepEqual(tmpl.Args, want) {
			t.Errorf("%s: Args:\ngot  %s\nwant %s", name, formatArgs(tmpl.Args), formatArgs(want))
		}
		args := map[string]string{"namespace": "echo", "service": "echo-canary"}
		for k := range args {
			if !slicesContainsArg(tmpl.Args, k) {
				delete(args, k)
			}
		}
		if _, errs := compile.Compile(tmpl.Document, args, testProviders); len(errs) > 0 {
			t.Errorf("%s: Compile with its required arguments:\n%s", name, formatFieldErrors(errs))
		}
	}
}

func slicesContainsArg(args []Arg, name string) bool {
	for _, a := range args {
		if a.Name == name {
			return true
		}
	}
	return false
}
