package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
)

// maxAnchorErrors bounds the anchors and aliases reported one by one; the
// rest are counted in one more error. A hostile body holds hundreds of
// thousands of them, and one is enough to say what to change.
const maxAnchorErrors = 5

// errAnchors marks the error of yamlToJSON when the input has anchors or
// aliases; refuseAnchors holds the field errors.
var errAnchors = errors.New("YAML anchors and aliases are not accepted")

// refuseAnchors parses YAML into nodes, where an alias stays a reference to
// its anchor and is never copied, and returns an error for every anchor
// (&name) and alias (*name, including a merge key's <<: *name) it holds,
// up to maxAnchorErrors and then a count. It runs before anything decodes
// the input into values: a decoder copies every alias in full where it is
// used, so that half a megabyte of aliases to one large value becomes
// gigabytes. Argo Rollouts documents never need anchors (kubectl never
// prints them); a value that is needed twice can be written twice.
//
// parseErr is the YAML parser's error when the input is not YAML: it is
// returned rather than decoding the input another way, since that decoder
// would expand aliases that this check did not see.
func refuseAnchors(data []byte) (errs []api.FieldError, parseErr error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	w := &anchorWalker{}
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		w.walk(&doc, "", 0)
	}
	if n := w.found - len(w.errs); n > 0 {
		w.errs = append(w.errs, api.FieldError{Field: bodyField, Message: fmt.Sprintf(
			"%d more YAML anchors or aliases; %s", n, anchorAdvice)})
	}
	return w.errs, nil
}

// anchorAdvice says why anchors are refused and what to do instead.
const anchorAdvice = "canaryd does not accept YAML anchors and aliases (an Argo Rollouts document never needs them, " +
	"and each alias would be copied in full where it is used): write the value out where it is needed"

type anchorWalker struct {
	found int
	errs  []api.FieldError
}

func (w *anchorWalker) walk(n *yamlv3.Node, path string, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch {
	case n.Kind == yamlv3.AliasNode:
		w.add(path, n, "alias *"+clip(n.Value))
		return // an alias is never followed: it is what would be copied
	case n.Anchor != "":
		w.add(path, n, "anchor &"+clip(n.Anchor))
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			w.walk(c, path, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			w.walk(c, indexPath(path, i), depth+1)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			w.walk(key, path, depth+1)
			w.walk(value, joinPath(path, key.Value), depth+1)
		}
	}
}

func (w *anchorWalker) add(path string, n *yamlv3.Node, what string) {
	w.found++
	if len(w.errs) >= maxAnchorErrors {
		return
	}
	field := specRelative(path)
	if field == "" {
		field = bodyField
	}
	w.errs = append(w.errs, api.FieldError{Field: field, Message: fmt.Sprintf(
		"line %d, column %d: YAML %s: %s", n.Line, n.Column, what, anchorAdvice)})
}

// clipLength is the most of a caller's text that a message quotes.
const clipLength = 64

// clip shortens s for a message, at a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= clipLength {
		return s
	}
	cut := clipLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
