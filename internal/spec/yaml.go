package spec

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/yamlevent"
)

// MaxYAMLNodes is the most nodes (scalars, keys included, sequences,
// mappings and aliases) a YAML input may have (limits.MaxYAMLNodes). They
// are counted as the input is read, and reading stops at the first node
// beyond it: the tree, the JSON and the time it takes are bounded by it
// rather than by the body's size (a megabyte of "[1,1,1,…" is half a
// million nodes).
const MaxYAMLNodes = limits.MaxYAMLNodes

// yamlInput is what one read of a YAML input gives: its tree of nodes,
// which keeps every node's line and comments, and its JSON.
type yamlInput struct {
	// root is the document's root node; nil for an empty document.
	root *yamlv3.Node
	text []byte
}

// readYAML reads one YAML document once, event by event (see
// internal/yamlevent), into a tree of yaml.v3 nodes and from the tree
// into JSON. While it reads it refuses, each as soon as it is seen,
// before anything is built from the rest:
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
// Scalars are resolved as YAML 1.1 (go.yaml.in/yaml/v2, which
// sigs.k8s.io/yaml and so Kubernetes read documents with): yes and off are
// booleans, 0x1F and 1_000 numbers. A duplicate key is an error, worded
// as yaml.v2's strict decoding words it.
func readYAML(data []byte, maxNodes int) (in yamlInput, refused []api.FieldError, err error) {
	r := &yamlReader{p: yamlevent.NewParser(data), maxNodes: maxNodes}
	root, refused, err := r.read()
	if err != nil || len(refused) > 0 {
		return yamlInput{}, refused, err
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

// errTooManyNodes is the refusal of an input beyond maxNodes nodes.
func errTooManyNodes(maxNodes int) api.FieldError {
	return api.FieldError{Field: bodyField, Message: fmt.Sprintf(
		"the document has more than %d YAML nodes (values, keys, lists and objects), the most canaryd reads; "+
			"an Argo Rollouts document has a few thousand at most", maxNodes)}
}

// yamlReader builds the tree of one document from the parser's events.
type yamlReader struct {
	p        *yamlevent.Parser
	maxNodes int
	// nodes counts the nodes read so far.
	nodes int
	// anchors are the anchors' and aliases' errors; found counts them.
	anchors []api.FieldError
	found   int
}

// frame is a sequence or mapping being read, with its field's path.
type frame struct {
	node *yamlv3.Node
	path string
}

func (r *yamlReader) read() (*yamlv3.Node, []api.FieldError, error) {
	var root *yamlv3.Node
	var stack []frame
	docs := 0
	for {
		e, err := r.p.Next()
		if err != nil {
			if len(r.anchors) > 0 {
				return nil, r.anchors, nil
			}
			return nil, nil, err
		}
		switch e.Kind {
		case yamlevent.StreamEnd:
			if len(r.anchors) > 0 {
				return nil, r.anchors, nil
			}
			return root, nil, nil
		case yamlevent.DocumentStart:
			docs++
			continue
		case yamlevent.DocumentEnd:
			continue
		case yamlevent.SequenceEnd, yamlevent.MappingEnd:
			stack = stack[:len(stack)-1]
			continue
		}

		r.nodes++
		if r.nodes > r.maxNodes {
			return nil, append(r.anchors, errTooManyNodes(r.maxNodes)), nil
		}
		n := &yamlv3.Node{Line: e.Line, Column: e.Column, Anchor: e.Anchor, Value: e.Value, LineComment: e.LineComment}
		switch e.Kind {
		case yamlevent.Scalar:
			n.Kind = yamlv3.ScalarNode
			n.Tag = e.Tag
			if !e.Plain {
				n.Style = yamlv3.DoubleQuotedStyle // not plain: never resolved
			}
		case yamlevent.Alias:
			n.Kind = yamlv3.AliasNode
		case yamlevent.SequenceStart:
			n.Kind, n.Tag = yamlv3.SequenceNode, e.Tag
		case yamlevent.MappingStart:
			n.Kind, n.Tag = yamlv3.MappingNode, e.Tag
		}

		// The node's field, for its errors.
		path := ""
		if len(stack) > 0 {
			parent := stack[len(stack)-1]
			switch parent.node.Kind {
			case yamlv3.SequenceNode:
				path = indexPath(parent.path, len(parent.node.Content))
			case yamlv3.MappingNode:
				path = parent.path
				if k := len(parent.node.Content); k%2 == 1 {
					path = joinPath(parent.path, parent.node.Content[k-1].Value)
				}
			}
			parent.node.Content = append(parent.node.Content, n)
		} else if docs > 1 {
			if !isNull(n) || n.Kind != yamlv3.ScalarNode {
				return nil, nil, errors.New("more than one YAML document (separated by ---); send one document per request")
			}
			continue
		} else {
			root = n
		}

		switch {
		case e.Kind == yamlevent.Alias:
			if r.anchor(path, n, "alias *"+clip(e.Anchor)) {
				return nil, r.anchors, nil
			}
		case e.Anchor != "":
			if r.anchor(path, n, "anchor &"+clip(e.Anchor)) {
				return nil, r.anchors, nil
			}
		}
		if n.Kind == yamlv3.SequenceNode || n.Kind == yamlv3.MappingNode {
			if len(stack) >= maxDepth {
				return nil, nil, fmt.Errorf("yaml: line %d: nested more than %d levels deep", e.Line, maxDepth)
			}
			stack = append(stack, frame{node: n, path: path})
		}
	}
}

// anchor adds the error of an anchor or alias, and reports whether
// reading should stop: after maxAnchorErrors, one more is enough to say
// there are more, and the rest is not read.
func (r *yamlReader) anchor(path string, n *yamlv3.Node, what string) (stop bool) {
	r.found++
	if r.found > maxAnchorErrors {
		r.anchors = append(r.anchors, api.FieldError{Field: bodyField, Message: "more YAML anchors or aliases follow; " + anchorAdvice})
		return true
	}
	field := specRelative(path)
	if field == "" {
		field = bodyField
	}
	r.anchors = append(r.anchors, api.FieldError{Field: field, Message: fmt.Sprintf(
		"line %d, column %d: YAML %s: %s", n.Line, n.Column, what, anchorAdvice)})
	return false
}

// Tags of YAML 1.1's types, in full as the parser gives them.
const (
	tagPrefix = "tag:yaml.org,2002:"
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
		if n.Tag != "" && n.Tag != tagSeq {
			w.fail(fmt.Errorf("yaml: line %d: cannot decode a sequence tagged %s", n.Line, n.Tag))
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
		if n.Tag != "" && n.Tag != tagMap {
			w.fail(fmt.Errorf("yaml: line %d: cannot decode a mapping tagged %s", n.Line, n.Tag))
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
	if n.Style == 0 && n.Tag == "" && n.Value == "<<" {
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
	in, tag := n.Value, n.Tag
	if n.Style != 0 && tag == "" {
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
	return nil, fmt.Errorf("yaml: line %d: cannot decode %s `%s` as a %s", n.Line, shortTag(rtag), in, shortTag(tag))
}

func shortTag(tag string) string {
	if rest, ok := strings.CutPrefix(tag, tagPrefix); ok {
		return "!!" + rest
	}
	return tag
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
