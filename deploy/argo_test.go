package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// argoCRDs are Argo Rollouts' own CRDs, unchanged (testdata/argo-crds).
var argoCRDs = map[string]string{
	"Rollout":          "testdata/argo-crds/rollout-crd.yaml",
	"AnalysisTemplate": "testdata/argo-crds/analysis-template-crd.yaml",
}

// crdSchema is the openAPIV3Schema of the served version of a CRD file.
func crdSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Name == "v1alpha1" {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s serves no v1alpha1", file)
	return nil
}

// checkSchema lists where v does not fit the structural schema s, as the
// API server checks a custom resource: the types, the fields (one the
// schema does not know is an error, where the API server would drop it
// without a word, unless the schema keeps unknown fields), the required
// ones, int-or-string, enums. metadata is the API server's own.
func checkSchema(path string, v any, s map[string]any) []string {
	if v == nil {
		if s["nullable"] == true {
			return nil
		}
		return []string{path + ": null"}
	}
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
			return nil
		}
		return []string{fmt.Sprintf("%s: %T, want an integer or a string", path, v)}
	}
	var errs []string
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is none of %v", path, v, enum))
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: %T, want an object", path, v))
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := m[r]; !ok {
				errs = append(errs, path+"."+r+": required")
			}
		}
		additional, _ := s["additionalProperties"].(map[string]any)
		for k, child := range m {
			p := path + "." + k
			switch cs, ok := props[k].(map[string]any); {
			case ok && p == ".metadata":
			case ok:
				errs = append(errs, checkSchema(p, child, cs)...)
			case additional != nil:
				errs = append(errs, checkSchema(p, child, additional)...)
			case s["x-kubernetes-preserve-unknown-fields"] != true:
				errs = append(errs, p+": not a field of the schema")
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: %T, want an array", path, v))
		}
		items, _ := s["items"].(map[string]any)
		for i, child := range a {
			errs = append(errs, checkSchema(fmt.Sprintf("%s[%d]", path, i), child, items)...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a string", path, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			errs = append(errs, fmt.Sprintf("%s: %v, want an integer", path, v))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a number", path, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a boolean", path, v))
		}
	}
	return errs
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// argoDocuments are the documents of the Argo examples, by file.
func argoDocuments(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, err := filepath.Glob("examples/argo/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples/argo: %v %v", files, err)
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				out[f] = append(out[f], m)
			}
		}
	}
	return out
}

// TestArgoExamplesFitArgosSchemas holds the Argo examples that
// docs/argo-rollouts.md links to Argo Rollouts v1.10's own CRDs: each
// Rollout and AnalysisTemplate fits the CRD's openAPIV3Schema, and the
// examples together are the recipe: a Rollout with a background analysis
// and an analysis step of the AnalysisTemplate, whose metric asks canaryd
// with the web provider, its token from a Secret through an argument's
// valueFrom.secretKeyRef, the canary's pod-template-hash passed.
func TestArgoExamplesFitArgosSchemas(t *testing.T) {
	schemas := map[string]map[string]any{}
	for kind, file := range argoCRDs {
		schemas[kind] = crdSchema(t, file)
	}
	kinds := map[string]map[string]any{}
	for file, docs := range argoDocuments(t) {
		for _, doc := range docs {
			kind, _ := doc["kind"].(string)
			kinds[kind] = doc
			s, ok := schemas[kind]
			if !ok {
				if doc["apiVersion"] == "argoproj.io/v1alpha1" {
					t.Errorf("%s: an Argo %s, for which the test has no CRD", file, kind)
				}
				continue
			}
			if doc["apiVersion"] != "argoproj.io/v1alpha1" {
				t.Errorf("%s: %s has apiVersion %v", file, kind, doc["apiVersion"])
			}
			for _, e := range checkSchema("", doc, s) {
				t.Errorf("%s: %s%s", file, kind, e)
			}
		}
	}
	for _, kind := range []string{"Rollout", "AnalysisTemplate", "Secret"} {
		if kinds[kind] == nil {
			t.Fatalf("examples/argo has no %s", kind)
		}
	}

	text := func(v any) string { b, _ := yaml.Marshal(v); return string(b) }
	tpl := text(kinds["AnalysisTemplate"])
	for _, want := range []string{"web:", "jsonBody:", "jsonPath: '{$.phase}'", "secretKeyRef:", "Bearer {{args.canaryd-token}}",
		"canary-hash: '{{args.canary-hash}}'", "/v1/templates/"} {
		if !strings.Contains(tpl, want) {
			t.Errorf("the AnalysisTemplate does not hold %q:\n%s", want, tpl)
		}
	}
	canary := kinds["Rollout"]["spec"].(map[string]any)["strategy"].(map[string]any)["canary"].(map[string]any)
	background := text(canary["analysis"])
	if !strings.Contains(background, "templateName: "+kinds["AnalysisTemplate"]["metadata"].(map[string]any)["name"].(string)) ||
		!strings.Contains(background, "podTemplateHashValue: Latest") {
		t.Errorf("the background analysis does not run the template with the canary's hash:\n%s", background)
	}
	step := ""
	for _, s := range asSlice(canary["steps"]) {
		if a, ok := s.(map[string]any)["analysis"]; ok {
			step = text(a)
		}
	}
	if !strings.Contains(step, "podTemplateHashValue: Latest") {
		t.Errorf("no analysis step passes the canary's hash:\n%s", step)
	}
}

// TestArgoSchemaCheckCatches: the check finds what the API server would
// refuse or drop: a field misspelt, a header's value from a Secret
// (headers take a value only), a count that is no number or string.
func TestArgoSchemaCheckCatches(t *testing.T) {
	s := crdSchema(t, argoCRDs["AnalysisTemplate"])
	for _, tc := range []struct{ name, doc, want string }{
		{"jsonpath", `{apiVersion: argoproj.io/v1alpha1, kind: AnalysisTemplate, metadata: {name: x}, spec: {metrics: [{name: m, provider: {web: {url: u, jsonpath: "{$.phase}"}}}]}}`,
			".spec.metrics[0].provider.web.jsonpath: not a field"},
		{"header from a secret", `{apiVersion: argoproj.io/v1alpha1, kind: AnalysisTemplate, metadata: {name: x}, spec: {metrics: [{name: m, provider: {web: {url: u, headers: [{key: Authorization, valueFrom: {secretKeyRef: {name: s, key: k}}}]}}}]}}`,
			".spec.metrics[0].provider.web.headers[0].value: required"},
		{"count", `{apiVersion: argoproj.io/v1alpha1, kind: AnalysisTemplate, metadata: {name: x}, spec: {metrics: [{name: m, count: [1], provider: {web: {url: u}}}]}}`,
			".spec.metrics[0].count: []interface {}, want an integer or a string"},
	} {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
			t.Fatal(err)
		}
		errs := strings.Join(checkSchema("", doc, s), "\n")
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, errs, tc.want)
		}
	}
}
