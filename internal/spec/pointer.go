package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
)

// bodyPointer is the JSON Pointer of the input as a whole.
const bodyPointer = ""

// documentFields are the fields of an Argo document outside its spec.
// Parse names the fields of the spec relative to it ("metrics[0].count"),
// and these from the top ("metadata.name").
var documentFields = []string{"apiVersion", "kind", "metadata", "spec", "status"}

// Locate gives each of errs, the problems of the input (Parse's,
// Resolve's, Validate's, with their fields named as these name them), the
// RFC 6901 JSON Pointer of its field in the input, where it is in the
// input (see documentPointer), found in the value Parse decoded the input
// into: the input is not decoded again. A problem on "body" points at the
// input as a whole. The errors are changed in place when every one is on
// "body", and copied otherwise.
func (in *Input) Locate(errs []api.FieldError) []api.FieldError {
	// Only an input that Parse decoded has fields to locate; one that it
	// refused as a whole ("body") has no value to look in.
	if !slices.ContainsFunc(errs, func(e api.FieldError) bool { return e.Field != bodyField }) {
		for i := range errs {
			errs[i].Pointer = ptr(bodyPointer)
		}
		return errs
	}
	tree := in.Value()
	out := make([]api.FieldError, len(errs))
	for i, e := range errs {
		if p, ok := documentPointer(tree, e.Field); ok {
			e.Pointer = &p
		}
		out[i] = e
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// documentPointer returns the pointer of a problem's field in an input
// decoded as tree: a bare spec's fields from the top, an Argo document's
// under /spec but for documentFields (an unknown field is looked for in
// both). A field that is not in the input (an argument given in an HTTP
// request's query, "args.NAME") has none; "body" not naming a field of
// that name is the input as a whole.
func documentPointer(tree any, field string) (string, bool) {
	type place struct {
		prefix string
		node   any
	}
	places := []place{{"", tree}}
	root, _ := tree.(map[string]any)
	document := false
	for _, k := range []string{"apiVersion", "kind", "spec"} {
		if _, ok := root[k]; ok {
			document = true
		}
	}
	first := field
	if i := strings.IndexAny(field, ".["); i >= 0 {
		first = field[:i]
	}
	if document && !slices.Contains(documentFields, first) {
		places = []place{{"/spec", root["spec"]}, {"", tree}}
	}
	for _, pl := range places {
		if p, exact, _ := FieldPointer(pl.node, field); exact {
			return pl.prefix + p, true
		}
	}
	if field == bodyField {
		return bodyPointer, true
	}
	if p, _, ok := FieldPointer(places[0].node, field); ok {
		return places[0].prefix + p, true
	}
	return "", false
}

// FieldPointer returns the RFC 6901 JSON Pointer of field within tree, a
// decoded JSON value (maps, slices and scalars as encoding/json decodes
// them into an any, or as Input.Value holds them), and whether the field
// is within it: a value of tree, or a member missing from one of its
// objects (a required field left out). field is a path as canaryd's
// errors spell it: keys joined by ".", indices in brackets
// ("metrics[0].provider.prometheus.query"). Keys are matched against
// tree's own, longest first, so that a key with a "." or "[" of its own is
// found ("metadata.app.kubernetes.io/name" is the key
// "app.kubernetes.io/name" of metadata: "/metadata/app.kubernetes.io~1name").
// exact reports that the field is a value of tree, not a missing member.
func FieldPointer(tree any, field string) (pointer string, exact, ok bool) {
	var b strings.Builder
	node, rest := tree, field
	for rest != "" {
		child, step, after, ok := fieldStep(node, rest)
		if !ok {
			// A member missing from an object, if it is the last step of
			// the path.
			if _, isObject := node.(map[string]any); !isObject || strings.ContainsAny(rest, ".[") {
				return "", false, false
			}
			b.WriteString("/" + escapePointer(rest))
			return b.String(), false, true
		}
		b.WriteString("/" + escapePointer(step))
		node, rest = child, after
	}
	return b.String(), true, true
}

// escapePointer escapes a key as a JSON Pointer's reference token (RFC
// 6901 section 3): "~" as "~0", "/" as "~1".
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// PointerLine is the line of the document whose tree of nodes is root
// (NodeTree, Input.Tree) that an RFC 6901 pointer names: the line of the
// key of a mapping's entry, of a sequence's item, or, for a field left
// out, of the deepest part of the path that is there.
func PointerLine(root *yamlv3.Node, pointer string) int {
	node := root
	line := node.Line
	if pointer == "" {
		return line
	}
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		for node.Kind == yamlv3.AliasNode && node.Alias != nil {
			node = node.Alias
		}
		next := (*yamlv3.Node)(nil)
		switch node.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == seg {
					line, next = node.Content[i].Line, node.Content[i+1]
					break
				}
			}
		case yamlv3.SequenceNode:
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(node.Content) {
				next = node.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		node = next
	}
	return line
}

// CheckJSON reports the first syntax error of a JSON text with its line
// and column, before anything decodes it.
func CheckJSON(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		line, col := ByteLine(data, syntax.Offset)
		return fmt.Errorf("invalid JSON: line %d, column %d: %v", line, col, syntax)
	}
	if err == nil {
		err = errors.New("not a JSON value")
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

// ByteLine is the line and column of the n-th byte of data, counted from
// 1 (a json.SyntaxError's Offset counts the bytes read up to the one in
// error, that one included); a newline counts as column 1 of the line
// after it.
func ByteLine(data []byte, n int64) (line, col int) {
	n = min(max(n, 0), int64(len(data)))
	before := data[:n]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(n) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}
