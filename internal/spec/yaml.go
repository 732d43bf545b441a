package spec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
)

// MaxYAMLNodes is the most nodes (scalars, keys included, sequences,
// mappings and aliases) a YAML input may have (limits.MaxYAMLNodes). An
// input whose bytes could hold more than yamlBoundFactor times as many is
// refused before it is parsed (yamlNodeBound); any other is parsed, and
// refused when its tree has more: the tree, the JSON and the time they
// take are bounded by it rather than by the body's size (a megabyte of
// "[1,1,1,…" is half a million nodes).
const MaxYAMLNodes = limits.MaxYAMLNodes

// yamlInput is what one read of a YAML input gives: its tree of nodes,
// which keeps every node's line and comments, and its JSON.
type yamlInput struct {
	// root is the document's root node; nil for an empty document.
	root *yamlv3.Node
	text []byte
}

// readYAML reads one YAML document: its bytes are scanned for a bound on
// its nodes (yamlNodeBound), and an input that could hold more than
// yamlBoundFactor × maxNodes is refused on body unparsed. Any other is
// parsed once by yaml.v3 into its tree of nodes, where an alias is a node
// that points at its anchor's and nothing is copied, and the tree is
// walked in the order it was written, refusing
//
//   - an anchor or alias (one error each, on its field, up to
//     maxAnchorErrors, and then one more on body): a decoder copies every
//     alias in full where it is used, so that half a megabyte of aliases
//     to one large value becomes gigabytes. Argo Rollouts documents never
//     need anchors (kubectl never prints them); a value that is needed
//     twice can be written twice;
//   - the node after the first maxNodes, on body;
//   - nesting deeper than maxDepth, and a second document (sigs.k8s.io/yaml
//     would silently drop it), as err.
//
// The JSON is written from the tree. Scalars are resolved as YAML 1.1
// (go.yaml.in/yaml/v2, which sigs.k8s.io/yaml and so Kubernetes read
// documents with): yes and off are booleans, 0x1F and 1_000 numbers. A
// duplicate key is an error, worded as yaml.v2's strict decoding words
// it.
func readYAML(data []byte, maxNodes int) (in yamlInput, refused []api.FieldError, err error) {
	if s := yamlNodeBound(data); s.bound > yamlBoundFactor*maxNodes {
		return yamlInput{}, []api.FieldError{s.refusal(maxNodes)}, nil
	}
	return parseYAML(data, maxNodes)
}

// parseYAML is readYAML once the input's bound is known to be within
// yamlBoundFactor × maxNodes.
func parseYAML(data []byte, maxNodes int) (in yamlInput, refused []api.FieldError, err error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc yamlv3.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		if name, ok := unknownAnchor(err); ok {
			// An alias of no anchor: refused as any alias is.
			return yamlInput{}, []api.FieldError{{Field: bodyField, Message: "YAML alias *" + clip(name) + ": " + anchorAdvice}}, nil
		}
		return yamlInput{}, nil, err
	}
	var root *yamlv3.Node
	if len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if root != nil {
		w := &treeWalker{maxNodes: maxNodes}
		w.walk(root, 0)
		if len(w.refused) > 0 {
			return yamlInput{}, w.refused, nil
		}
		if w.err != nil {
			return yamlInput{}, nil, w.err
		}
	}
	// The documents after the first may only be empty.
	for {
		var next yamlv3.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return yamlInput{}, nil, err
		}
		if len(next.Content) > 0 && !isNull(next.Content[0]) {
			return yamlInput{}, nil, errors.New("more than one YAML document (separated by ---); send one document per request")
		}
	}

	in.root = root
	if root == nil {
		in.text = []byte("null")
		return in, nil, nil
	}
	c := &jsonWriter{}
	c.node(root)
	if len(c.errs) > 0 {
		return yamlInput{}, nil, errors.New("yaml: unmarshal errors:\n  " + strings.Join(c.errs, "\n  "))
	}
	if c.err != nil {
		return yamlInput{}, nil, c.err
	}
	in.text = c.buf
	return in, nil, nil
}

// unknownAnchor is the name in yaml.v3's error for an alias whose anchor
// is not before it.
func unknownAnchor(err error) (string, bool) {
	m := unknownAnchorError.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

var unknownAnchorError = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// errTooManyNodes is the refusal of an input beyond maxNodes nodes.
func errTooManyNodes(maxNodes int) api.FieldError {
	return api.FieldError{Field: bodyField, Message: fmt.Sprintf(
		"the document has more than %d YAML nodes (values, keys, lists and objects), the most canaryd reads; "+
			"an Argo Rollouts document has a few thousand at most", maxNodes)}
}

// treeWalker checks a document's tree in the order it was written.
type treeWalker struct {
	maxNodes int
	// nodes counts the nodes walked so far.
	nodes int
	// found counts the anchors and aliases.
	found int
	// refused are the anchors' and aliases' errors, and the error of too
	// many nodes; done says no more is walked.
	refused []api.FieldError
	done    bool
	// err is nesting beyond maxDepth.
	err error
	// path is the walked node's place: keys and indices, from the root.
	path []step
}

// step is one step of a path: a mapping's key, or a sequence's index
// (key unset).
type step struct {
	key   *string
	index int
}

// field is the walked node's path, as errors name fields.
func (w *treeWalker) field() string {
	path := ""
	for _, s := range w.path {
		if s.key != nil {
			path = joinPath(path, *s.key)
		} else {
			path = indexPath(path, s.index)
		}
	}
	return path
}

// walk checks n, at depth collections below the root, and what it holds.
func (w *treeWalker) walk(n *yamlv3.Node, depth int) {
	if w.done || w.err != nil {
		return
	}
	w.nodes++
	if w.nodes > w.maxNodes {
		w.refused = append(w.refused, errTooManyNodes(w.maxNodes))
		w.done = true
		return
	}
	switch {
	case n.Kind == yamlv3.AliasNode:
		w.anchor(n, "alias *"+clip(n.Value))
		return // never followed: it is what a decoder would copy
	case n.Anchor != "":
		w.anchor(n, "anchor &"+clip(n.Anchor))
	}
	switch n.Kind {
	case yamlv3.SequenceNode:
		if w.deep(n, depth) {
			return
		}
		for i, c := range n.Content {
			w.path = append(w.path, step{index: i})
			w.walk(c, depth+1)
			w.path = w.path[:len(w.path)-1]
		}
	case yamlv3.MappingNode:
		if w.deep(n, depth) {
			return
		}
		for i := 0; i < len(n.Content); i += 2 {
			key := n.Content[i]
			w.walk(key, depth+1) // a key's field is its mapping's
			if i+1 < len(n.Content) {
				w.path = append(w.path, step{key: &key.Value})
				w.walk(n.Content[i+1], depth+1)
				w.path = w.path[:len(w.path)-1]
			}
		}
	}
}

// deep reports, as err, a collection nested more than maxDepth deep.
func (w *treeWalker) deep(n *yamlv3.Node, depth int) bool {
	if depth >= maxDepth {
		w.err = fmt.Errorf("yaml: line %d: nested more than %d levels deep", n.Line, maxDepth)
		return true
	}
	return false
}

// anchor adds the error of an anchor or alias: after maxAnchorErrors, one
// more says there are more, and the rest is not walked.
func (w *treeWalker) anchor(n *yamlv3.Node, what string) {
	w.found++
	if w.found > maxAnchorErrors {
		w.refused = append(w.refused, api.FieldError{Field: bodyField, Message: "more YAML anchors or aliases follow; " + anchorAdvice})
		w.done = true
		return
	}
	field := specRelative(w.field())
	if field == "" {
		field = bodyField
	}
	w.refused = append(w.refused, api.FieldError{Field: field, Message: fmt.Sprintf(
		"line %d, column %d: YAML %s: %s", n.Line, n.Column, what, anchorAdvice)})
}

// Tags of YAML 1.1's types, as yaml.v3 writes them in a node.
const (
	tagPrefix = "!!"
	tagStr    = tagPrefix + "str"
	tagNull   = tagPrefix + "null"
	tagBool   = tagPrefix + "bool"
	tagInt    = tagPrefix + "int"
	tagFloat  = tagPrefix + "float"
	tagBinary = tagPrefix + "binary"
	tagTime   = tagPrefix + "timestamp"
	tagMap    = tagPrefix + "map"
	tagSeq    = tagPrefix + "seq"
)

// writtenTag is the tag a node was written with (!!int, !custom), "" for
// none: yaml.v3 resolves an untagged node's tag itself, as YAML 1.2 does,
// and marks a written one with TaggedStyle.
func writtenTag(n *yamlv3.Node) string {
	if n.Style&yamlv3.TaggedStyle != 0 {
		return n.Tag
	}
	return ""
}

// isPlain reports whether a scalar is written plain: neither quoted nor a
// block scalar.
func isPlain(n *yamlv3.Node) bool {
	return n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) == 0
}

// isNull reports whether a scalar resolves to null.
func isNull(n *yamlv3.Node) bool {
	if n.Kind != yamlv3.ScalarNode {
		return false
	}
	v, err := resolveScalar(n)
	return err == nil && v == nil
}

// jsonWriter writes a tree as JSON, as sigs.k8s.io/yaml's
// YAMLToJSONStrict would have.
type jsonWriter struct {
	buf []byte
	// errs are the duplicate keys, as yaml.v2 words them; err the first
	// other problem.
	errs []string
	err  error
}

func (w *jsonWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *jsonWriter) node(n *yamlv3.Node) {
	if w.err != nil {
		return
	}
	switch n.Kind {
	case yamlv3.ScalarNode:
		v, err := resolveScalar(n)
		if err != nil {
			w.fail(err)
			return
		}
		w.value(v)
	case yamlv3.SequenceNode:
		if tag := writtenTag(n); tag != "" && tag != tagSeq {
			w.fail(fmt.Errorf("yaml: line %d: cannot decode a sequence tagged %s", n.Line, tag))
			return
		}
		w.buf = append(w.buf, '[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.node(c)
		}
		w.buf = append(w.buf, ']')
	case yamlv3.MappingNode:
		if tag := writtenTag(n); tag != "" && tag != tagMap {
			w.fail(fmt.Errorf("yaml: line %d: cannot decode a mapping tagged %s", n.Line, tag))
			return
		}
		// Members in the order of their names, as encoding/json writes
		// a map's: a provider's configuration is kept as this text.
		type member struct {
			name  string
			value *yamlv3.Node
		}
		members := make([]member, 0, len(n.Content)/2)
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			name, err := mapKey(key)
			if err != nil {
				w.fail(err)
				return
			}
			if seen[name] {
				w.errs = append(w.errs, fmt.Sprintf("line %d: key %q already set in map", key.Line, name))
				continue
			}
			seen[name] = true
			members = append(members, member{name, n.Content[i+1]})
		}
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
		w.buf = append(w.buf, '{')
		for i, m := range members {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.value(m.name)
			w.buf = append(w.buf, ':')
			w.node(m.value)
		}
		w.buf = append(w.buf, '}')
	default:
		w.fail(fmt.Errorf("yaml: line %d: unexpected node", n.Line))
	}
}

func (w *jsonWriter) value(v any) {
	text, err := json.Marshal(v)
	if err != nil {
		w.fail(err)
		return
	}
	w.buf = append(w.buf, text...)
}

// mapKey is a mapping's key as a JSON object's member name, as
// sigs.k8s.io/yaml names it: a number or boolean as it is written out.
func mapKey(n *yamlv3.Node) (string, error) {
	if n.Kind != yamlv3.ScalarNode {
		return "", fmt.Errorf("yaml: line %d: a key must be a string, not a list or object", n.Line)
	}
	if isPlain(n) && writtenTag(n) == "" && n.Value == "<<" {
		return "", fmt.Errorf("yaml: line %d: YAML merge keys (<<) are not accepted: write the fields out", n.Line)
	}
	v, err := resolveScalar(n)
	if err != nil {
		return "", err
	}
	switch k := v.(type) {
	case string:
		return k, nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case uint64:
		return strconv.FormatUint(k, 10), nil
	case float64:
		s := strconv.FormatFloat(k, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(k), nil
	}
	return "", fmt.Errorf("yaml: line %d: a key must not be null", n.Line)
}

// yamlFloat is a number in YAML 1.1's float syntax.
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolveScalar is a scalar's value as go.yaml.in/yaml/v2 decodes it into
// an interface{}: nil, a bool, an int64 or uint64, a float64 or a string
// (a timestamp stays a string).
func resolveScalar(n *yamlv3.Node) (any, error) {
	in, tag := n.Value, writtenTag(n)
	if !isPlain(n) && tag == "" {
		return in, nil // quoted or a block scalar: a string
	}
	switch tag {
	case "", tagNull, tagBool, tagInt, tagFloat, tagTime:
	case tagStr:
		return in, nil
	case tagBinary:
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in), ""))
		if err != nil {
			return nil, fmt.Errorf("yaml: line %d: !!binary value contains invalid base64 data", n.Line)
		}
		return string(b), nil
	default:
		return in, nil // a tag of the document's own: its value as written
	}
	v, rtag := resolvePlain(in)
	if tag == "" || tag == rtag || (tag == tagTime && rtag == tagStr) {
		return v, nil
	}
	if tag == tagFloat && rtag == tagInt {
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case uint64:
			return float64(x), nil
		}
	}
	return nil, fmt.Errorf("yaml: line %d: cannot decode %s `%s` as a %s", n.Line, rtag, in, tag)
}

// resolvePlain resolves a plain scalar as YAML 1.1 does (yaml.v2's
// resolve), a timestamp being left a string.
func resolvePlain(in string) (any, string) {
	switch in {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, tagBool
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, tagBool
	case "", "~", "null", "Null", "NULL":
		return nil, tagNull
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), tagFloat
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), tagFloat
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), tagFloat
	}
	switch c := in[0]; {
	case c == '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f, tagFloat
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, tagInt
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, tagInt
		}
		if yamlFloat.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, tagFloat
			}
		}
		if rest, ok := strings.CutPrefix(plain, "0b"); ok {
			if i, err := strconv.ParseInt(rest, 2, 64); err == nil {
				return i, tagInt
			}
			if u, err := strconv.ParseUint(rest, 2, 64); err == nil {
				return u, tagInt
			}
		} else if rest, ok := strings.CutPrefix(plain, "-0b"); ok {
			if i, err := strconv.ParseInt("-"+rest, 2, 64); err == nil {
				return i, tagInt
			}
		}
	}
	return in, tagStr
}
