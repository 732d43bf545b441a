package spec

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/canaryd/canaryd/api"
)

func jsonTree(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return v
}

// TestFieldPointer checks the conversion of canaryd's field paths into
// RFC 6901 JSON Pointers, found in the value they point into.
func TestFieldPointer(t *testing.T) {
	body := jsonTree(t, `{
		"metrics": [{"name": "m", "successCondition": "result > 1", "provider": {"prometheus": {"query": "up"}}}],
		"args": {"namespace": "echo"},
		"metadata": {"app.kubernetes.io/name": "shop", "app": "other"},
		"a/b": {"c~d": 1},
		"~": [10, 20],
		"webhook": {"url": "https://x", "events": ["completed", "oops"]}
	}`)
	none := "(none)"
	for _, tc := range []struct {
		field, want string
		exact       bool
	}{
		{"metrics[0].successCondition", "/metrics/0/successCondition", true},
		{"metrics[0].provider.prometheus.query", "/metrics/0/provider/prometheus/query", true},
		{"metrics", "/metrics", true},
		{"metrics[0]", "/metrics/0", true},
		{"args.namespace", "/args/namespace", true},
		{"webhook.events[1]", "/webhook/events/1", true},
		// Escaping, RFC 6901 section 3: ~ as ~0, / as ~1.
		{"a/b.c~d", "/a~1b/c~0d", true},
		{"~[1]", "/~0/1", true},
		// A key with a "." of its own is matched whole, the longest first.
		{"metadata.app.kubernetes.io/name", "/metadata/app.kubernetes.io~1name", true},
		{"metadata.app", "/metadata/app", true},
		// A member missing from an object points where it belongs.
		{"metrics[0].interval", "/metrics/0/interval", false},
		{"args.threshold", "/args/threshold", false},
		{"dryRun", "/dryRun", false},
		{"new~/key", "/new~0~1key", false},
		// Not within the body: more than one step missing, an index where
		// there is an object, a key where there is a list, an index out of
		// range, a step below a scalar.
		{"metrics[0].provider.judge.canary", none, false},
		{"args[0].value", none, false},
		{"metrics.name", none, false},
		{"metrics[1].name", none, false},
		{"metrics[-1]", none, false},
		{"metrics[x]", none, false},
		{"metrics[0].name.first", none, false},
		{"webhook.url.host", none, false},
	} {
		got, exact, ok := FieldPointer(body, tc.field)
		if !ok {
			got = none
		}
		if got != tc.want || (ok && exact != tc.exact) {
			t.Errorf("FieldPointer(%q) = %q (exact %v), want %q (exact %v)", tc.field, got, exact, tc.want, tc.exact)
		}
	}
	if got, _, ok := FieldPointer(nil, "metrics"); ok {
		t.Errorf("FieldPointer(nil body) = %q, want none", got)
	}
}

// TestDocumentPointer checks where a posted document's problems point:
// a bare spec's fields from the top, an Argo document's spec fields under
// /spec and its own fields from the top.
func TestDocumentPointer(t *testing.T) {
	const (
		bare     = `{"metrics": [{"name": "m", "intervall": "1m"}], "body": 1, "args": [{"name": "namespace"}]}`
		document = `{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": 1},
			"spec": {"metrics": [{"name": "m"}], "extra": 1}, "other": 2}`
	)
	none := "(none)"
	for _, tc := range []struct {
		body, field, want string
	}{
		{bare, "metrics[0].intervall", "/metrics/0/intervall"},
		{bare, "metrics[0].provider", "/metrics/0/provider"},
		{bare, "args[0].value", "/args/0/value"},
		// An unknown field named body is that field; otherwise body is
		// the body as a whole.
		{bare, "body", "/body"},
		{`{"metrics": []}`, "body", ""},
		{`[1, 2]`, "body", ""},
		{"", "body", ""},
		// An override of an undeclared argument is in the query.
		{bare, "args.nope", none},
		{`{"metrics": []}`, "args.nope", none},
		{document, "metrics[0].successCondition", "/spec/metrics/0/successCondition"},
		{document, "metrics", "/spec/metrics"},
		{document, "dryRun", "/spec/dryRun"},
		{document, "extra", "/spec/extra"},
		{document, "other", "/other"},
		{document, "metadata.name", "/metadata/name"},
		{document, "kind", "/kind"},
		{document, "status", "/status"},
		{document, "args.nope", none},
		{`{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate"}`, "spec", "/spec"},
		{`{"kind": "Rollout", "spec": []}`, "kind", "/kind"},
	} {
		var tree any
		if tc.body != "" {
			tree = jsonTree(t, tc.body)
		}
		got, ok := documentPointer(tree, tc.field)
		if !ok {
			got = none
		}
		if got != tc.want {
			t.Errorf("%s: documentPointer(%q) = %q, want %q", tc.body, tc.field, got, tc.want)
		}
	}
}

// TestInputValue checks that YAML and JSON inputs decode alike, a byte
// order mark and all, into the value that problems are located in.
func TestInputValue(t *testing.T) {
	for _, tc := range []struct {
		body   string
		isJSON bool
	}{
		{`{"metrics": [{"name": "m"}]}`, true},
		{"\xef\xbb\xbf{\"metrics\": [{\"name\": \"m\"}]}", true},
		{"metrics:\n- name: m\n", false},
		{"\xef\xbb\xbfmetrics:\n- {name: m}\n", false},
	} {
		_, input, _ := ParseInput([]byte(tc.body))
		got, _, ok := FieldPointer(input.Value(), "metrics[0].name")
		if !ok || got != "/metrics/0/name" {
			t.Errorf("%q: metrics[0].name at %q (%v), want /metrics/0/name", tc.body, got, ok)
		}
	}
	if _, input, _ := ParseInput([]byte("metrics: [unclosed")); input.Value() != nil {
		t.Errorf("the value of invalid YAML = %v, want nil", input.Value())
	}
}

// TestLocate checks that problems are given their pointers in the input
// they are about, and that the problems of an input refused as a whole
// point at all of it.
func TestLocate(t *testing.T) {
	_, input, _ := ParseInput([]byte("apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {}\nspec:\n  metrics:\n  - name: m\n"))
	got := input.Locate([]api.FieldError{{Field: "metrics[0].interval"}, {Field: "metadata.name"}, {Field: "args.nope"}, {Field: bodyField}})
	for i, want := range []string{"/spec/metrics/0/interval", "/metadata/name", "(none)", ""} {
		if p := got[i].Pointer; (p == nil) != (want == "(none)") || p != nil && *p != want {
			t.Errorf("%s points at %v, want %s", got[i].Field, p, want)
		}
	}
	_, refused, _ := ParseInput([]byte("metrics: [unclosed"))
	for _, e := range refused.Locate([]api.FieldError{{Field: bodyField}, {Field: bodyField}}) {
		if e.Pointer == nil || *e.Pointer != "" {
			t.Errorf("a problem of a refused input points at %v, want the whole input", e.Pointer)
		}
	}
}

// TestCheckJSON checks the line and column of a JSON text's first
// syntax error, a newline's included.
func TestCheckJSON(t *testing.T) {
	for text, want := range map[string]string{
		`{"a": 1}`:          "",
		"{\n  \"a\": 1,\n}": "invalid JSON: line 3, column 1: invalid character '}' looking for beginning of object key string",
		`{"a": tru}`:        "invalid JSON: line 1, column 10: invalid character '}' in literal true (expecting 'e')",
		"{\"a\":\n":         "invalid JSON: line 2, column 1: unexpected end of JSON input",
	} {
		err := CheckJSON([]byte(text))
		if got := fmt.Sprint(err); (err == nil) != (want == "") || err != nil && got != want {
			t.Errorf("CheckJSON(%q) = %v, want %q", text, err, want)
		}
	}
	if line, col := ByteLine([]byte("ab\ncd"), 3); line != 2 || col != 1 {
		t.Errorf("the newline is at line %d, column %d; want line 2, column 1", line, col)
	}
}
