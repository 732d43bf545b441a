package templates

import (
	"strings"
	"testing"
)

// A template file with YAML anchors or aliases loads as spec.Parse reads a
// body: the document with them is an error naming each, on the file's
// lines; the others of the file load.
func TestLoadRefusesYAMLAliases(t *testing.T) {
	dir := t.TempDir()
	aliased := "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata:\n  name: aliased\nspec:\n" +
		"  metrics:\n  - &m\n    name: a\n    provider: {prometheus: {query: up}}\n  - *m\n"
	writeFiles(t, dir, map[string]string{"t.yaml": template("plain", simple("1m")) + "---\n" + aliased})
	s := load(t, dir, Options{})
	checkRows(t, "aliases", s, []row{
		{"aliased", "t.yaml:15", StatusError, "metrics[0],metrics[1]"},
		{"plain", "t.yaml:1", StatusOK, ""},
	})
	for _, in := range s.List() {
		if in.Name == "aliased" && (len(in.Errors) != 2 || !strings.Contains(in.Errors[1].Message, "line 24, column 5: YAML alias *m")) {
			t.Errorf("errors: %+v", in.Errors)
		}
	}
}
