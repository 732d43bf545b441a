package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

func TestParseRefusesAnchorsAndAliases(t *testing.T) {
	const advice = "canaryd does not accept YAML anchors and aliases (an Argo Rollouts document never needs them, " +
		"and each alias would be copied in full where it is used): write the value out where it is needed"
	tests := []struct {
		name  string
		input string
		want  []api.FieldError
	}{
		{
			name: "an alias in a map, of a value anchored in a map",
			input: "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nspec:\n  metrics:\n  - name: a\n    provider:\n      prometheus:\n" +
				"        query: &q up\n  - name: b\n    provider:\n      prometheus:\n        query: *q\n",
			want: []api.FieldError{
				fe("metrics[0].provider.prometheus.query", "line 8, column 16: YAML anchor &q: "+advice),
				fe("metrics[1].provider.prometheus.query", "line 12, column 16: YAML alias *q: "+advice),
			},
		},
		{
			name:  "aliases in a sequence",
			input: "metrics:\n- &m {name: a, provider: {prometheus: {query: up}}}\n- *m\n",
			want: []api.FieldError{
				fe("metrics[0]", "line 2, column 3: YAML anchor &m: "+advice),
				fe("metrics[1]", "line 3, column 3: YAML alias *m: "+advice),
			},
		},
		{
			name:  "a merge key",
			input: "x: &base {interval: 1m}\nmetrics:\n- <<: *base\n  name: a\n",
			want: []api.FieldError{
				fe("x", "line 1, column 4: YAML anchor &base: "+advice),
				fe("metrics[0].<<", "line 3, column 7: YAML alias *base: "+advice),
			},
		},
		{
			name:  "an anchor that nothing uses",
			input: "metrics: &m []\n",
			want:  []api.FieldError{fe("metrics", "line 1, column 10: YAML anchor &m: "+advice)},
		},
		{
			name:  "an anchor on the whole document",
			input: "&doc {metrics: []}\n",
			want:  []api.FieldError{fe("body", "line 1, column 1: YAML anchor &doc: "+advice)},
		},
		{
			name:  "a YAML flow mapping, which starts like JSON",
			input: "{metrics: [{name: &n a}], args: [{name: *n}]}",
			want: []api.FieldError{
				fe("metrics[0].name", "line 1, column 19: YAML anchor &n: "+advice),
				fe("args[0].name", "line 1, column 41: YAML alias *n: "+advice),
			},
		},
		{
			name:  "an alias of itself",
			input: "a: &x [*x]\n",
			want: []api.FieldError{
				fe("a", "line 1, column 4: YAML anchor &x: "+advice),
				fe("a[0]", "line 1, column 8: YAML alias *x: "+advice),
			},
		},
		{
			name:  "an alias of no anchor",
			input: "metrics: [*m]\n",
			want:  []api.FieldError{fe("body", "YAML alias *m: "+advice)},
		},
		{
			name:  "a long anchor name is cut",
			input: "a: &" + strings.Repeat("n", 100) + " 1\n",
			want:  []api.FieldError{fe("a", "line 1, column 4: YAML anchor &"+strings.Repeat("n", 64)+"…: "+advice)},
		},
	}
	for _, tt := range tests {
		doc, errs := Parse([]byte(tt.input))
		if doc != nil {
			t.Errorf("%s: got a document", tt.name)
		}
		checkErrors(t, tt.name, errs, tt.want)
	}

	// Text that only looks like an anchor or an alias is text.
	for _, input := range []string{
		"metrics: [{name: a, provider: {prometheus: {query: \"x * 2 & y\"}}}]\n",
		"metrics:\n- name: a\n  provider:\n    prometheus:\n      query: |\n        sum(x)\n        * 100\n        &y\n",
		`{"metrics": [{"name": "a", "provider": {"prometheus": {"query": "*a &b"}}}]}`,
	} {
		if _, errs := Parse([]byte(input)); len(errs) > 0 {
			t.Errorf("Parse(%q): %s", input, formatErrors(errs))
		}
	}
}

// Half a megabyte of aliases to a 4 KiB value would be 600 MB once
// expanded, and more than MaxYAMLNodes nodes unexpanded: it is refused on
// body from its bytes alone, before any parser reads it, saying that it
// may hold aliases.
func TestParseRefusesAnAliasBombWithoutParsingIt(t *testing.T) {
	var b strings.Builder
	b.WriteString("big: &a \"" + strings.Repeat("x", 4096) + "\"\nmetrics:\n")
	for b.Len() < 600<<10 {
		b.WriteString("- *a\n")
	}
	input := []byte(b.String())

	doc, errs := Parse(input)
	if doc != nil {
		t.Fatal("got a document")
	}
	if len(errs) != 1 || errs[0].Field != "body" || !strings.Contains(errs[0].Message, "more than 20000 YAML nodes") ||
		!strings.Contains(errs[0].Message, "may be YAML anchors and aliases") {
		t.Fatalf("got %v, want one error on body naming the nodes and the aliases", errs)
	}
	allocs := testing.AllocsPerRun(5, func() { Parse(input) })
	allocated := allocatedBy(func() { Parse(input) })
	t.Logf("%d bytes: Parse made %.0f allocations, %d bytes", len(input), allocs, allocated)
	if allocs > 20 || allocated > 64<<10 {
		t.Errorf("Parse made %.0f allocations, %d KiB; the input was parsed", allocs, allocated>>10)
	}
}

// The billion laughs, ten aliases to the level below nine levels deep, is
// a few hundred bytes that a decoder expands to a billion strings. In
// yaml.v3's tree an alias is a node that points at its anchor, and
// nothing is copied: it is refused with a few errors, each on its field,
// having allocated little.
func TestParseRefusesTheBillionLaughs(t *testing.T) {
	var b strings.Builder
	b.WriteString("lol0: &l0 [" + strings.Repeat("lol,", 9) + "lol]\n")
	for i := 1; i <= 9; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ",")
		fmt.Fprintf(&b, "lol%d: &l%d [%s]\n", i, i, refs)
	}
	b.WriteString("metrics: []\n")
	input := []byte(b.String())

	doc, errs := Parse(input)
	if doc != nil {
		t.Fatal("got a document")
	}
	if len(errs) != maxAnchorErrors+1 {
		t.Fatalf("got %d errors, want %d:\n%s", len(errs), maxAnchorErrors+1, formatErrors(errs))
	}
	if errs[0].Field != "lol0" || errs[1].Field != "lol1" || errs[2].Field != "lol1[0]" {
		t.Errorf("the first errors are on %q, %q and %q, want lol0, lol1 and lol1[0]", errs[0].Field, errs[1].Field, errs[2].Field)
	}
	last := errs[len(errs)-1]
	if last.Field != "body" || !strings.HasPrefix(last.Message, "more YAML anchors or aliases follow") {
		t.Errorf("last error: %v, want more on body", last)
	}
	allocated := allocatedBy(func() { Parse(input) })
	t.Logf("%d bytes: Parse allocated %d KiB", len(input), allocated>>10)
	if allocated > 1<<20 {
		t.Errorf("Parse allocated %d KiB; an alias was expanded", allocated>>10)
	}
}

func TestYAMLToJSON(t *testing.T) {
	text, err := YAMLToJSON([]byte("args: {namespace: echo}\n"))
	if err != nil || string(text) != `{"args":{"namespace":"echo"}}` {
		t.Errorf("YAMLToJSON: %s, %v", text, err)
	}
	_, err = YAMLToJSON([]byte("x: &a 1\nargs: {namespace: *a}\n"))
	var anchors *AnchorError
	if !errors.As(err, &anchors) || len(anchors.Errors) != 2 || anchors.Errors[1].Field != "args.namespace" ||
		!strings.HasPrefix(err.Error(), "x: line 1, column 4: YAML anchor &a: ") || !strings.HasSuffix(err.Error(), " (and 1 more)") {
		t.Errorf("YAMLToJSON of aliases: %v, want two errors, the second on args.namespace", err)
	}
	if _, err := YAMLToJSON([]byte("a: 1\n---\nb: 2\n")); err == nil || errors.As(err, &anchors) {
		t.Errorf("YAMLToJSON of two documents: %v, want an error", err)
	}
}
