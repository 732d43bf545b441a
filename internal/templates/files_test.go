package templates

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

func TestSplitDocuments(t *testing.T) {
	type doc struct {
		line int
		text string // the document without its padding
	}
	tests := []struct {
		name, file, data string
		want             []doc
	}{
		{"one document", "a.yaml", "a: 1\nb: 2\n", []doc{{1, "a: 1\nb: 2\n"}}},
		{"leading separator and comment", "a.yaml", "# head\n---\na: 1\n", []doc{{3, "a: 1\n"}}},
		{"two documents", "a.yaml", "a: 1\n---\nb: 2\n", []doc{{1, "a: 1\n"}, {3, "b: 2\n"}}},
		{"separator with a comment and spaces, CRLF", "a.yml", "a: 1\r\n--- # next\r\n\r\nb: 2\r\n---   \r\n", []doc{{1, "a: 1\r\n"}, {4, "\r\nb: 2\r\n"}}},
		{"empty documents dropped", "a.yaml", "---\n---\n# only a comment\n---\n\n", nil},
		{"---x and indented --- are not separators", "a.yaml", "a: |\n  ---\n---x: 1\n", []doc{{1, "a: |\n  ---\n---x: 1\n"}}},
		{"content after --- on its line is kept with the document", "a.yaml", "--- {a: 1}\n", []doc{{1, "--- {a: 1}\n"}}},
		{"a byte order mark", "a.yaml", "\xEF\xBB\xBFa: 1\n", []doc{{1, "a: 1\n"}}},
		{"JSON is one document", "a.json", "\n{\"a\": \"\\n---\\n\"}\n---\n", []doc{{2, "\n{\"a\": \"\\n---\\n\"}\n---\n"}}},
		{"empty JSON", "a.JSON", " \n", nil},
		{"no final newline", "a.yaml", "a: 1\n---\nb: 2", []doc{{1, "a: 1\n"}, {3, "b: 2"}}},
	}
	for _, tt := range tests {
		var got []doc
		for i, d := range splitDocuments(tt.file, []byte(tt.data)) {
			if d.index != i+1 {
				t.Errorf("%s: document %d has index %d", tt.name, i+1, d.index)
			}
			text := string(d.data)
			if tt.file[len(tt.file)-5:] != ".json" && tt.file[len(tt.file)-5:] != ".JSON" {
				pad := bytes.IndexFunc(d.data, func(r rune) bool { return r != '\n' })
				if pad < 0 {
					pad = len(d.data)
				}
				text = text[pad:]
			}
			got = append(got, doc{d.line, text})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %#v\nwant %#v", tt.name, got, tt.want)
		}
	}
}

// The padding makes the parser's line numbers the file's.
func TestSplitDocumentsPadding(t *testing.T) {
	data := "a: 1\n---\n# c\nb: 2\n"
	docs := splitDocuments("a.yaml", []byte(data))
	if len(docs) != 2 {
		t.Fatalf("got %d documents", len(docs))
	}
	lines := bytes.Split(docs[1].data, []byte("\n"))
	if got := string(lines[docs[1].line-1]); got != "b: 2" {
		t.Errorf("line %d of the padded document is %q, want %q", docs[1].line, got, "b: 2")
	}
}

func TestPeek(t *testing.T) {
	tests := []struct {
		name, data, kind, wantName string
	}{
		{"block", "apiVersion: v1\nkind: AnalysisTemplate\nmetadata:\n  labels:\n    name: no\n  name: yes # comment\n", "AnalysisTemplate", "yes"},
		{"quoted", "kind: 'Rollout'\nmetadata:\n\n  # c\n  name: \"q\"\n", "Rollout", "q"},
		{"flow", "kind: AnalysisTemplate\nmetadata: { name: success-rate, namespace: echo }\n", "AnalysisTemplate", "success-rate"},
		{"flow, name later", "metadata: {namespace: echo, name: x}\n", "", "x"},
		{"json", `{"kind": "AnalysisTemplate", "metadata": {"namespace": "n", "name": "j"}}`, "AnalysisTemplate", "j"},
		{"no metadata name", "kind: X\nmetadata:\n  labels: {name: no}\nspec:\n  name: no\n", "X", ""},
		{"nothing", "]]]", "", ""},
	}
	for _, tt := range tests {
		kind, name := peek([]byte(tt.data))
		if kind != tt.kind || name != tt.wantName {
			t.Errorf("%s: peek = %q, %q; want %q, %q", tt.name, kind, name, tt.kind, tt.wantName)
		}
	}
}

func FuzzSplitDocuments(f *testing.F) {
	f.Add("a: 1\n---\nb: 2\n")
	f.Add("---\n--- # c\r\n\n---x\n...\n")
	f.Add("\xEF\xBB\xBF---")
	f.Add("kind: K\nmetadata:\n  name: n\n")
	f.Fuzz(func(t *testing.T, data string) {
		peek([]byte(data))
		for _, name := range []string{"a.yaml", "a.json"} {
			lines := bytes.Count([]byte(data), []byte("\n")) + 1
			prev := 0
			for i, d := range splitDocuments(name, []byte(data)) {
				if d.index != i+1 || d.line <= prev || d.line > lines {
					t.Fatalf("%s %q: document %d: index %d, line %d (previous %d, lines %d)", name, data, i+1, d.index, d.line, prev, lines)
				}
				prev = d.line
				// The document's content is on its line.
				docLines := bytes.Split(d.data, []byte("\n"))
				if d.line > len(docLines) || len(bytes.TrimSpace(docLines[d.line-1])) == 0 {
					t.Fatalf("%s %q: document %d: line %d of %q is blank", name, data, i+1, d.line, d.data)
				}
				if !bytes.Contains([]byte(data), bytes.TrimLeft(d.data, "\n")) {
					t.Fatalf("%s %q: document %q is not part of the input", name, data, d.data)
				}
			}
		}
	})
}

func ExampleTemplate_MissingArgs() {
	tmpl := &Template{Args: []Arg{{Name: "namespace", Required: true}, {Name: "threshold", Value: new("0.99")}}}
	fmt.Println(tmpl.MissingArgs(map[string]string{"threshold": "0.95"}))
	// Output: [namespace]
}
