package spec

import (
	"slices"
	"testing"
)

// What is said of a refused document after Parse (its providers'
// configurations, the value its fields are found in, the lines of its
// tree) comes from the one reading of it: asking allocates nothing for
// YAML, and reads a JSON input as YAML once, for its lines.
func TestParseInputIsReadOnce(t *testing.T) {
	yamlDoc := []byte("metrics:\n- name: 5\n  provider:\n    prometheus: {query: up, adress: x}\n")
	jsonDoc := []byte(`{"metrics": [{"name": 5, "provider": {"prometheus": {"query": "up", "adress": "x"}}}]}`)
	for _, tt := range []struct {
		name string
		data []byte
		line int // metrics[0]'s
	}{{"yaml", yamlDoc, 2}, {"json", jsonDoc, 1}} {
		doc, in, errs := ParseInput(tt.data)
		if doc == nil || len(errs) != 1 || !slices.Equal(doc.Pruned(), []string{"metrics[0].name"}) {
			t.Fatalf("%s: got %v %v, want the name refused and left out", tt.name, doc, errs)
		}
		if _, ok := in.Value().(map[string]any); !ok {
			t.Errorf("%s: Value %v, want the document", tt.name, in.Value())
		}
		if configs := in.ProviderConfigs(); string(configs["metrics[0].provider.prometheus"]) != `{"adress":"x","query":"up"}` {
			t.Errorf("%s: ProviderConfigs %s", tt.name, configs)
		}
		tree := in.Tree()
		if tree == nil || tree.Content[1].Content[0].Line != tt.line {
			t.Fatalf("%s: Tree %v, want the document's, metrics[0] on line %d", tt.name, tree, tt.line)
		}
		if allocs := testing.AllocsPerRun(10, func() {
			in.Value()
			if in.Tree() != tree {
				t.Fatalf("%s: another tree", tt.name)
			}
		}); allocs != 0 {
			t.Errorf("%s: asking for the value and the tree again allocated %.0f times: the input was read again", tt.name, allocs)
		}
	}

	// Refused as a whole: no value, no tree, nothing read again.
	_, in, _ := ParseInput([]byte("a: &x 1\nb: *x\n"))
	if in.Value() != nil || in.ProviderConfigs() != nil || in.Tree() != nil {
		t.Errorf("anchors: got a value or a tree")
	}
	if allocs := testing.AllocsPerRun(10, func() { in.Tree() }); allocs != 0 {
		t.Errorf("anchors: Tree allocated %.0f times: the input was read again", allocs)
	}
}
