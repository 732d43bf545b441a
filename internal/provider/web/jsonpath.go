package web

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// jsonPath is a parsed jsonPath: the subset of Kubernetes' JSONPath
// (k8s.io/client-go/util/jsonpath, which Argo uses) that selects a value,
// written inside one pair of braces:
//
//	{$}  {.}                  the whole document (the default)
//	{$.a.b}  {.a.b}           fields; names may hold any character but . [ ] { } and spaces
//	{$['a b']}  {$["a"]}      a field by a quoted name
//	{$.items[0]}  {$.x[-1]}   an element of a list; negative counts from the end
//	{$.items[*].v}  {$.m.*}   every element or field (fields in key order)
//
// As in Argo, when the path selects several values the first is the
// result. Kubernetes' other forms (filters, slices, unions, recursive
// descent, range and text outside the braces) are refused when the metric
// is checked, rather than run differently.
type jsonPath struct {
	steps []step
}

type step struct {
	kind  stepKind
	name  string
	index int
}

type stepKind uint8

const (
	field stepKind = iota
	index
	wildcard
)

// errNotSupported says which JSONPath canaryd runs.
var errNotSupported = errors.New(`canaryd runs the JSONPath forms that select one value: {$}, {$.a.b}, {$['a b']}, {$.list[0]}, {$.list[-1]}, {$.list[*].v}, {$.map.*}`)

// maxJSONPathSteps bounds a path's length in steps; a field's length is
// bounded by the spec's field limit.
const maxJSONPathSteps = 64

func parseJSONPath(s string) (*jsonPath, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return &jsonPath{}, nil
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") || strings.Count(s, "{") != 1 || strings.Count(s, "}") != 1 {
		return nil, fmt.Errorf("jsonPath must be one expression in braces, such as {$.data.value}: %w", errNotSupported)
	}
	expr := strings.TrimSpace(s[1 : len(s)-1])
	expr = strings.TrimPrefix(expr, "$")
	if expr == "." {
		expr = ""
	}
	jp := &jsonPath{}
	for expr != "" {
		if len(jp.steps) == maxJSONPathSteps {
			return nil, fmt.Errorf("jsonPath has more than %d steps", maxJSONPathSteps)
		}
		switch {
		case strings.HasPrefix(expr, ".."):
			return nil, fmt.Errorf("jsonPath: recursive descent (..) is not supported: %w", errNotSupported)
		case strings.HasPrefix(expr, ".*"):
			jp.steps = append(jp.steps, step{kind: wildcard})
			expr = expr[2:]
		case strings.HasPrefix(expr, "."):
			end := strings.IndexAny(expr[1:], ".[]{}() \t\n'\"")
			if end < 0 {
				end = len(expr) - 1
			}
			name := expr[1 : 1+end]
			if name == "" {
				return nil, fmt.Errorf("jsonPath: a field name is missing after %q: %w", ".", errNotSupported)
			}
			jp.steps = append(jp.steps, step{kind: field, name: name})
			expr = expr[1+end:]
		case strings.HasPrefix(expr, "["):
			end := strings.IndexByte(expr, ']')
			if end < 0 {
				return nil, fmt.Errorf("jsonPath: %q is not closed by %q", "[", "]")
			}
			inner := strings.TrimSpace(expr[1:end])
			switch {
			case inner == "*":
				jp.steps = append(jp.steps, step{kind: wildcard})
			case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] &&
				!strings.ContainsAny(inner[1:len(inner)-1], `'"`):
				jp.steps = append(jp.steps, step{kind: field, name: inner[1 : len(inner)-1]})
			default:
				n, err := strconv.Atoi(inner)
				if err != nil {
					return nil, fmt.Errorf("jsonPath: [%s] is not supported: %w", truncate(inner), errNotSupported)
				}
				jp.steps = append(jp.steps, step{kind: index, index: n})
			}
			expr = expr[end+1:]
		default:
			return nil, fmt.Errorf("jsonPath: unexpected %q: %w", truncate(expr), errNotSupported)
		}
	}
	return jp, nil
}

// notFound starts Argo's error for a path that names what is not there.
const notFound = "Could not find JSONPath in body: "

// errNoValue is Argo's error when a path selects nothing (a wildcard over
// an empty list or object).
var errNoValue = errors.New("result of web metric produced no value")

// find applies the path to a decoded JSON document and returns the first
// value it selects. A field or index that is not there is an error in
// Argo's words ("Could not find JSONPath in body: missing is not found").
func (jp *jsonPath) find(doc any) (any, error) {
	nodes := []any{doc}
	for _, st := range jp.steps {
		var next []any
		for _, n := range nodes {
			switch st.kind {
			case field:
				obj, ok := n.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s%s is not found", notFound, st.name)
				}
				v, ok := obj[st.name]
				if !ok {
					return nil, fmt.Errorf("%s%s is not found", notFound, st.name)
				}
				next = append(next, v)
			case index:
				list, ok := n.([]any)
				if !ok {
					return nil, fmt.Errorf("%s[%d] is not a list index of %s", notFound, st.index, kindOf(n))
				}
				i := st.index
				if i < 0 {
					i += len(list)
				}
				if i < 0 || i >= len(list) {
					return nil, fmt.Errorf("%sarray index out of bounds: index %d, length %d", notFound, st.index, len(list))
				}
				next = append(next, list[i])
			case wildcard:
				switch x := n.(type) {
				case []any:
					next = append(next, x...)
				case map[string]any:
					keys := make([]string, 0, len(x))
					for k := range x {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					for _, k := range keys {
						next = append(next, x[k])
					}
				}
			}
		}
		nodes = next
	}
	if len(nodes) == 0 {
		return nil, errNoValue
	}
	return nodes[0], nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "a value"
}
