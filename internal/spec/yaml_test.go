package spec

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// flowBomb is a megabyte of a flow sequence of ones: half a million
// nodes, some 120 MB as a tree.
func flowBomb() []byte {
	var b strings.Builder
	b.WriteString("metrics: [")
	for b.Len() < 1<<20-16 {
		b.WriteString("1,")
	}
	b.WriteString("1]\n")
	return []byte(b.String())
}

// A megabyte of "[1,1,1,…" is refused on body, naming the limit, from
// its bytes alone: it never reaches the parser, and refusing it
// allocates the message and little else.
func TestParseRefusesMoreThanMaxYAMLNodes(t *testing.T) {
	input := flowBomb()
	doc, errs := Parse(input)
	if doc != nil || len(errs) != 1 || errs[0].Field != "body" ||
		!strings.Contains(errs[0].Message, fmt.Sprintf("more than %d YAML nodes", MaxYAMLNodes)) {
		t.Fatalf("Parse of %d bytes of [1,1,…]: got %v, want one error on body naming %d nodes", len(input), errs, MaxYAMLNodes)
	}
	if _, err := YAMLToJSON(input); err == nil || !strings.Contains(err.Error(), "YAML nodes") {
		t.Errorf("YAMLToJSON: %v, want the refusal", err)
	}
	if s := yamlNodeBound(input); s.bound <= yamlBoundFactor*MaxYAMLNodes {
		t.Fatalf("bound %d: want it beyond %d", s.bound, yamlBoundFactor*MaxYAMLNodes)
	}
	// Parsed, half a million nodes would take some 120 MB.
	allocs := testing.AllocsPerRun(5, func() { Parse(input) })
	allocated := allocatedBy(func() { Parse(input) })
	t.Logf("%d bytes: Parse made %.0f allocations, %d bytes", len(input), allocs, allocated)
	if allocs > 20 || allocated > 64<<10 {
		t.Errorf("Parse made %.0f allocations, %d KiB; the input was parsed", allocs, allocated>>10)
	}
}

// A document whose bytes are within the pre-scan's bound but that has
// more than MaxYAMLNodes nodes is parsed once, its nodes counted in the
// tree, and refused on body: what it costs is bounded by the bound.
func TestParseRefusesMoreThanMaxYAMLNodesUnderTheBound(t *testing.T) {
	// The bound of "metrics: [1,…,1]\n" with k commas is 3(k+4)+1.
	k := (yamlBoundFactor*MaxYAMLNodes-1)/3 - 4
	input := []byte("metrics: [" + strings.Repeat("1,", k) + "1]\n")
	if s := yamlNodeBound(input); s.bound > yamlBoundFactor*MaxYAMLNodes || s.bound < yamlBoundFactor*MaxYAMLNodes-3 {
		t.Fatalf("bound %d, want just within %d", s.bound, yamlBoundFactor*MaxYAMLNodes)
	}
	nodes := k + 4 // the ones, the list, the map and its key
	if nodes <= MaxYAMLNodes {
		t.Fatalf("%d nodes: want more than %d", nodes, MaxYAMLNodes)
	}
	doc, errs := Parse(input)
	want := errTooManyNodes(MaxYAMLNodes)
	if doc != nil || len(errs) != 1 || errs[0] != want {
		t.Fatalf("Parse of %d nodes: got %v, want %v", nodes, errs, want)
	}
	// Some 26,000 nodes of yaml.v3 take a few megabytes; the bound allows
	// three times as many at most.
	allocated := allocatedBy(func() { Parse(input) })
	t.Logf("%d bytes, %d nodes: Parse allocated %d KiB", len(input), nodes, allocated>>10)
	if allocated > 32<<20 {
		t.Errorf("Parse allocated %d MiB", allocated>>20)
	}
}

// allocatedBy is how many bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The limit is on nodes, whatever their kind, counted in the tree, and a
// document of exactly the limit is read.
func TestReadYAMLNodeLimit(t *testing.T) {
	for _, tt := range []struct {
		input string
		nodes int // keys, values, sequences and mappings
	}{
		{"a: 1\n", 3},
		{"[1, [2, {b: c}]]", 7},
		{"- a\n- b\n- {c: d}\n", 6},
	} {
		if _, refused, err := parseYAML([]byte(tt.input), tt.nodes); err != nil || len(refused) > 0 {
			t.Errorf("%q within %d nodes: %v %v", tt.input, tt.nodes, refused, err)
		}
		_, refused, _ := parseYAML([]byte(tt.input), tt.nodes-1)
		if len(refused) != 1 || refused[0] != errTooManyNodes(tt.nodes-1) {
			t.Errorf("%q within %d nodes: got %v, want the limit's refusal", tt.input, tt.nodes-1, refused)
		}
	}
}

// readYAML reads scalars as sigs.k8s.io/yaml (yaml.v2, YAML 1.1) does,
// which Kubernetes and canaryd before it read documents with.
func TestReadYAMLResolvesAsSigsYAML(t *testing.T) {
	for _, input := range []string{
		"a: yes\nb: off\nc: Y\nd: true\ne: ~\nf: null\ng:\nh: ''\n",
		"a: 1\nb: -2\nc: 0x1F\nd: 0777\ne: 1_000\nf: 0b101\ng: -0b11\nh: +7\n",
		"a: 1.5\nb: .5\nc: 1e3\nd: 1.0\ne: -1.25e-3\nf: 18446744073709551615\ng: 9223372036854775808\n",
		"a: 2024-01-02\nb: 2024-01-02T03:04:05Z\nc: 1.2.3\nd: 5m\ne: \"5\"\nf: '0x10'\ng: |\n  multi\n  line\nh: >\n  folded\n  text\n",
		"a: !!str 5\nb: !!int \"7\"\nc: !!float 3\nd: !!binary aGVsbG8=\ne: !custom x\n",
		"1: a\n2.5: b\ntrue: c\nz: d\n",
		"{metrics: [{name: a, count: 1}], args: [{name: x, value: \"y\"}]}",
		"metrics:\n- name: a # a comment\n  successCondition: result[0] >= 0.99\n  provider: {prometheus: {query: 'sum(x{a=\"b\"})'}}\n",
		"a: <html> & \"quotes\" \\ \u00e9\n",
		"a:\n  b:\n    c: [1, 2, {d: [e, f]}]\n",
		"# only a comment\n",
		"---\na: 1\n...\n",
		"a: 1\n---\n",
	} {
		want, wantErr := yaml.YAMLToJSONStrict([]byte(input))
		in, refused, err := readYAML([]byte(input), MaxYAMLNodes)
		if len(refused) > 0 || (err != nil) != (wantErr != nil) || string(in.text) != string(want) {
			t.Errorf("%q:\n got  %s %v %v\n want %s %v", input, in.text, refused, err, want, wantErr)
		}
	}
	for _, input := range []string{
		"a: 1\na: 2\n",
		"a: .nan\n",
		"a: !!int x\n",
		"? [a]\n: b\n",
		"a: [\n",
	} {
		if _, wantErr := yaml.YAMLToJSONStrict([]byte(input)); wantErr == nil {
			t.Fatalf("%q: sigs.k8s.io/yaml accepts it", input)
		}
		if _, _, err := readYAML([]byte(input), MaxYAMLNodes); err == nil {
			t.Errorf("%q: readYAML accepts what sigs.k8s.io/yaml refuses", input)
		}
	}
}
