package spec

import (
	"fmt"

	"github.com/canaryd/canaryd/api"
)

// yamlBoundFactor is how far above MaxYAMLNodes the pre-scan's bound
// (yamlNodeBound) may be and the document still be parsed and its nodes
// counted exactly. The bound is about three times the true count of a
// document written in the usual way (a line "key: value" is two
// structural bytes and two nodes), so an Argo document of 20,000 nodes is
// parsed and counted; and no document whose bound is beyond it is given
// to the parser, which therefore never builds more than
// yamlBoundFactor × MaxYAMLNodes (80,000) nodes, whatever the body.
const yamlBoundFactor = 4

// yamlScan is what yamlNodeBound finds in a YAML input's bytes.
type yamlScan struct {
	// structural counts the line breaks and flow and block indicators
	// ([ ] { } , : - ?), each wherever it is: in a scalar or a comment as
	// well as in the document's structure.
	structural int
	// bound is an upper bound on the input's YAML nodes (scalars, keys
	// included, sequences, mappings and aliases, in all its documents).
	bound int
	// anchors counts the & and * that could begin an anchor or an
	// alias: those at the start or after a space, a tab or a structural
	// byte. Every anchor and alias is one of them.
	anchors int
}

// isStructural marks the bytes that yamlNodeBound counts: line breaks
// and indicators. NEL, LS and PS (U+0085, U+2028, U+2029), which YAML
// reads as line breaks too, end in 0x85, 0xA8 and 0xA9, marked here and
// counted when the bytes before them complete the rune.
var isStructural = [256]bool{
	'\n': true, '\r': true,
	'[': true, ']': true, '{': true, '}': true, ',': true,
	':': true, '-': true, '?': true,
	0x85: true, 0xA8: true, 0xA9: true,
}

// yamlNodeBound scans data once, allocating nothing, for a bound on the
// YAML nodes that parsing it can build. The bound is 3 × structural + 1.
//
// Why it is never below the true count: charge every node the parser
// (libyaml's, which yaml.v3 is) builds to one structural byte, or to the
// start of the input, and no byte is charged more than three nodes and
// the start no more than one.
//
//   - A node that begins with a token of its own (a scalar, plain,
//     quoted or block, an alias, [ or {, or properties alone: &a !tag) is
//     charged to the last structural byte before that token, or to the
//     start. Two such tokens are never without a structural byte between
//     their starts: in block context each key follows a line break or
//     ?, each value a :, each entry a -; in flow context each entry
//     follows [ { or , and each value a :. Text without one between ("a
//     b", "x # c") is one plain scalar or a comment, and `"a" "b"` or
//     `*a b` do not parse. So a byte is charged one such node at most.
//   - A block sequence or mapping has no token: the scanner starts it at
//     the - (an entry), ? (an explicit key) or : (a value) that is the
//     first at a deeper indentation, and the parser starts an indentless
//     sequence (a key's entries at the key's indentation) at its first
//     -. A flow sequence's entry written "k: v" is a mapping started at
//     its : or ?. One of these per byte.
//   - An empty node (null) stands where a node is left out: after the
//   - of an empty entry; for the key of a ? written alone, or of a :
//     with no key before it; for the value of a : with nothing after it,
//     of a ? with no : (charged to the ?), or of a flow mapping's entry
//     without one (charged to the , or } that ends it); as an empty
//     document, after ---. At most two per byte (a ? or : whose key and
//     value are both left out).
//
// So a - is charged two nodes at most (a sequence and its entry), a ? or
// : three (a mapping and its key and value), a , two and any other byte
// one: the input holds at most 3 × structural + 1 nodes. Bytes in
// scalars and comments only raise the bound. FuzzYAMLNodeBound and
// TestYAMLNodeBoundIsSound check it against yaml.v3's trees.
func yamlNodeBound(data []byte) yamlScan {
	var s yamlScan
	prev := byte('\n') // the start is as after a line break
	for i, c := range data {
		switch {
		case isStructural[c]:
			if c < 0x80 || isLineBreakRune(data, i) {
				s.structural++
			}
		case c == '&' || c == '*':
			if prev == ' ' || prev == '\t' || isStructural[prev] {
				s.anchors++
			}
		}
		prev = c
	}
	s.bound = 3*s.structural + 1
	return s
}

// isLineBreakRune reports whether the byte at i (0x85, 0xA8 or 0xA9)
// ends NEL, LS or PS in UTF-8.
func isLineBreakRune(data []byte, i int) bool {
	switch data[i] {
	case 0x85: // NEL: C2 85
		return i >= 1 && data[i-1] == 0xC2
	default: // LS and PS: E2 80 A8 and E2 80 A9
		return i >= 2 && data[i-2] == 0xE2 && data[i-1] == 0x80
	}
}

// refusal is the refusal, on body, of an input whose bound is beyond
// yamlBoundFactor × maxNodes, before anything parses it.
func (s yamlScan) refusal(maxNodes int) api.FieldError {
	msg := fmt.Sprintf("the document may have more than %d YAML nodes (values, keys, lists and objects), the most canaryd reads: "+
		"its %d line breaks and indicators ([ ] { } , : - ?) could begin up to %d, and canaryd parses none that could hold more than %d; "+
		"an Argo Rollouts document has a few thousand at most",
		maxNodes, s.structural, s.bound, yamlBoundFactor*maxNodes)
	if s.anchors > 0 {
		msg += fmt.Sprintf("; its %d & and * may be YAML anchors and aliases, and %s", s.anchors, anchorAdvice)
	}
	return api.FieldError{Field: bodyField, Message: msg}
}
