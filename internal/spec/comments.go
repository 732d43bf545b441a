package spec

import (
	yamlv3 "go.yaml.in/yaml/v3"
)

// commentHint is added to the problem of a condition that YAML cut short:
// in a plain (unquoted) scalar, " #" starts a comment, so that
// `successCondition: all(result, # >= 0.99)` reaches canaryd as
// `all(result,`.
const commentHint = `; YAML read the rest of the line after " #" as a comment, so the condition ends there: quote it ('…' or "…")`

// CommentHint is what to add to the message of a problem with the field at
// path (relative to the spec, "metrics[0].successCondition") when YAML cut
// that condition short at a comment; "" otherwise.
func (d *Document) CommentHint(path string) string {
	if d.cutByComments[path] {
		return commentHint
	}
	return ""
}

// conditionsCutByComments returns the spec-relative paths of the
// successCondition and failureCondition fields that are plain YAML scalars
// followed by a comment on their line, in the tree of nodes the input
// was read into (readYAML).
func conditionsCutByComments(root *yamlv3.Node) map[string]bool {
	var cut map[string]bool
	var walk func(n *yamlv3.Node, path string, depth int)
	walk = func(n *yamlv3.Node, path string, depth int) {
		if n == nil || depth > maxDepth {
			return
		}
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path, depth+1)
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(c, indexPath(path, i), depth+1)
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, value := n.Content[i], n.Content[i+1]
				field := joinPath(path, key.Value)
				if (key.Value == "successCondition" || key.Value == "failureCondition") &&
					value.Kind == yamlv3.ScalarNode && value.Style == 0 && value.LineComment != "" {
					if cut == nil {
						cut = map[string]bool{}
					}
					cut[specRelative(field)] = true
				}
				walk(value, field, depth+1)
			}
		}
	}
	walk(root, "", 0)
	return cut
}
