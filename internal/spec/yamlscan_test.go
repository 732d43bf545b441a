package spec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// yamlNodes is the exact count of the nodes in every document of data as
// yaml.v3 parses it (scalars, keys included, sequences, mappings and
// aliases, an alias not followed), and whether it parses.
func yamlNodes(data []byte) (int, bool) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	total := 0
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return total, true
		}
		if err != nil {
			return 0, false
		}
		var count func(n *yamlv3.Node)
		count = func(n *yamlv3.Node) {
			if n.Kind != yamlv3.DocumentNode {
				total++
			}
			if n.Kind != yamlv3.AliasNode {
				for _, c := range n.Content {
					count(c)
				}
			}
		}
		count(&doc)
	}
}

// yamlPieces are what random documents are made of: the indicators, in
// every place they can stand, empty keys, values and entries, anchors,
// aliases, tags, quoted and block scalars, comments and documents.
var yamlPieces = []string{
	"-", "- ", "--- ", "---\n", "...\n", "? ", "?", ": ", ":", "[", "]", "{", "}", ", ", ",",
	"\n", "\n", "\n  ", "\n    ", "  ", " ", "\t",
	"a", "b", "1", "~", "&x ", "*x", "&y", "*y ", "!t ", "!!str ", "<<", "'q'", `"q:,"`,
	"# c\n", " # c", "|\n  text\n", ">-\n  t\n", "\r\n", "\u2028",
}

// randomYAML writes a document of up to n pieces.
func randomYAML(r *rand.Rand, n int) []byte {
	var b strings.Builder
	for range 1 + r.IntN(n) {
		b.WriteString(yamlPieces[r.IntN(len(yamlPieces))])
	}
	return []byte(b.String())
}

// yamlNodeBound's bound is never below the count of nodes of yaml.v3's
// trees: on the fixtures, on documents built of every indicator in every
// place (most do not parse; those that do are the cases where the parser
// adds nodes of its own: empty keys, values and entries, implicit
// mappings in flow sequences, block collections), and on the fuzz
// corpus's seeds.
func TestYAMLNodeBoundIsSound(t *testing.T) {
	check := func(data []byte) bool {
		nodes, ok := yamlNodes(data)
		if !ok {
			return false
		}
		if s := yamlNodeBound(data); s.bound < nodes {
			t.Errorf("%q: bound %d, below its %d nodes", data, s.bound, nodes)
		}
		return true
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !check(data) {
			t.Errorf("%s does not parse", f)
		}
		// A document written as Argo's are is far within the limit's
		// bound: the bound is a few times its count.
		nodes, _ := yamlNodes(data)
		if s := yamlNodeBound(data); s.bound > 4*nodes+8 {
			t.Errorf("%s: bound %d for %d nodes", f, s.bound, nodes)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	parsed := 0
	for range 100_000 {
		if check(randomYAML(r, 12)) {
			parsed++
		}
	}
	if parsed < 10_000 {
		t.Errorf("only %d of the random documents parsed", parsed)
	}
	for _, s := range []string{":", "?", "- :", "[? ]", "[?,?,?]", "{a, b, ? }", "- - - :", "? \n? \n", ":\n :\n  :\n", "[a: , b: ]", "---\n---\n"} {
		check([]byte(s))
	}
}

// FuzzYAMLNodeBound looks for a document with more nodes than the bound.
func FuzzYAMLNodeBound(f *testing.F) {
	for _, s := range []string{":", "?", "- :", "[? ]", "[?,?,?]", "{a, b, ? }", "- - - :", "? \n? \n", ":\n :\n  :\n", "a: &x [*x]", "--- |\n  a\n...\n"} {
		f.Add([]byte(s))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		f.Add(randomYAML(r, 12))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, ok := yamlNodes(data)
		if !ok {
			return
		}
		if s := yamlNodeBound(data); s.bound < nodes {
			t.Fatalf("%q: bound %d, below its %d nodes", data, s.bound, nodes)
		}
	})
}
