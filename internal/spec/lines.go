package spec

import (
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Line is the line of the input that a problem's field is on ("metrics[0]
// .provider.prometheus.query", relative to an Argo document's spec as
// Parse, Resolve and Validate name fields, or "metadata.name"): the line
// of the key of the deepest part of the path that is in the input (a
// field left out is on the line of the object it is missing from). 0
// when the input has no tree (see Tree) or the field is not in it at all.
func (in *Input) Line(field string) int {
	return FieldLine(in.Tree(), field)
}

// FieldLine is Input.Line for the tree of nodes of one document (see
// NodeTree).
func FieldLine(root *yamlv3.Node, field string) int {
	if root == nil || field == "" || field == bodyField {
		return 0
	}
	node := root
	if node.Kind == yamlv3.DocumentNode && len(node.Content) > 0 {
		node = node.Content[0]
	}
	if node.Kind != yamlv3.MappingNode {
		return 0
	}
	first := field
	if i := strings.IndexAny(field, ".["); i >= 0 {
		first = field[:i]
	}
	// An Argo document's fields are under spec, but for its own.
	if key, spec := mappingEntry(node, "spec"); spec != nil && (mappingValue(node, "apiVersion") != nil || mappingValue(node, "kind") != nil) &&
		!slices.Contains(documentFields, first) {
		if line := pathLine(spec, field); line > 0 {
			return line
		}
		return key.Line
	}
	return pathLine(node, field)
}

// pathLine follows field from node, keys longest first (a key may hold a
// "."), and returns the line of the deepest part found; 0 when not even
// the first is.
func pathLine(node *yamlv3.Node, field string) int {
	line, rest := 0, field
	for rest != "" {
		switch node.Kind {
		case yamlv3.MappingNode:
			var key, value *yamlv3.Node
			for i := 0; i+1 < len(node.Content); i += 2 {
				k := node.Content[i].Value
				if k != "" && (key == nil || len(k) > len(key.Value)) && strings.HasPrefix(rest, k) &&
					(len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[') {
					key, value = node.Content[i], node.Content[i+1]
				}
			}
			if key == nil {
				return line
			}
			line, node, rest = key.Line, value, strings.TrimPrefix(rest[len(key.Value):], ".")
		case yamlv3.SequenceNode:
			end := strings.IndexByte(rest, ']')
			if !strings.HasPrefix(rest, "[") || end < 0 {
				return line
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 || i >= len(node.Content) {
				return line
			}
			node = node.Content[i]
			line, rest = node.Line, strings.TrimPrefix(rest[end+1:], ".")
		default:
			return line
		}
	}
	return line
}

func mappingValue(node *yamlv3.Node, key string) *yamlv3.Node {
	_, v := mappingEntry(node, key)
	return v
}

// mappingEntry is the key node and the value node of a mapping's entry.
func mappingEntry(node *yamlv3.Node, key string) (k, v *yamlv3.Node) {
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i], node.Content[i+1]
		}
	}
	return nil, nil
}
