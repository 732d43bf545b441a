package report

import (
	"strconv"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/canaryd/canaryd/internal/analysis"
)

// threshold is where a condition that is one comparison of the measured
// value with a number changes: `result[0] >= 0.99` is a threshold at 0.99
// that the value passes at or above. A chart draws it as a line labelled
// "success ≥ 0.99".
type threshold struct {
	Value float64
	// Op is the comparison with the value on its left: ≥, >, ≤ or <.
	Op string
	// Success is true for the successCondition, false for the
	// failureCondition.
	Success bool
	// Text is the number as the condition writes it.
	Text string
}

// Label is what the chart writes beside the line.
func (t threshold) Label() string {
	what := "failure"
	if t.Success {
		what = "success"
	}
	return what + " " + t.Op + " " + t.Text
}

// thresholdsOf reads the metric's conditions for simple comparisons: the
// measured value (result, result[0], or every or any series:
// all(result, # >= 0.99)) against a number, nothing else in the condition.
// A condition of any other form has no threshold, only its shaded regions,
// which are found by evaluating it. The chart keeps a threshold only where
// the compiled conditions change phase across it (thresholdHolds), so that
// a condition whose text is shown redacted cannot draw a wrong line.
func thresholdsOf(m *analysis.Metric) []threshold {
	if m == nil {
		return nil
	}
	var out []threshold
	for _, c := range []struct {
		text    string
		success bool
	}{{m.SuccessCondition, true}, {m.FailureCondition, false}} {
		if c.text == "" {
			continue
		}
		if t, ok := simpleComparison(c.text); ok {
			t.Success = c.success
			out = append(out, t)
		}
	}
	return out
}

var flipped = map[string]string{">=": "≤", ">": "<", "<=": "≥", "<": ">"}
var symbol = map[string]string{">=": "≥", ">": ">", "<=": "≤", "<": "<"}

func simpleComparison(text string) (threshold, bool) {
	tree, err := parser.Parse(text)
	if err != nil {
		return threshold{}, false
	}
	node := tree.Node
	// all(result, # >= 0.99), any(result, # >= 0.99): the comparison of
	// each series.
	series := false
	if b, ok := node.(*ast.BuiltinNode); ok && (b.Name == "all" || b.Name == "any") && len(b.Arguments) == 2 && isResult(b.Arguments[0]) {
		p, ok := b.Arguments[1].(*ast.PredicateNode)
		if !ok {
			return threshold{}, false
		}
		node, series = p.Node, true
	}
	bin, ok := node.(*ast.BinaryNode)
	if !ok || symbol[bin.Operator] == "" {
		return threshold{}, false
	}
	value := func(n ast.Node) bool {
		if series {
			p, ok := n.(*ast.PointerNode)
			return ok && p.Name == ""
		}
		return isResult(n) || isFirst(n)
	}
	switch {
	case value(bin.Left):
		if v, s, ok := number(bin.Right); ok {
			return threshold{Value: v, Op: symbol[bin.Operator], Text: s}, true
		}
	case value(bin.Right):
		if v, s, ok := number(bin.Left); ok {
			return threshold{Value: v, Op: flipped[bin.Operator], Text: s}, true
		}
	}
	return threshold{}, false
}

func isResult(n ast.Node) bool {
	id, ok := n.(*ast.IdentifierNode)
	return ok && id.Value == "result"
}

// isFirst is result[0].
func isFirst(n ast.Node) bool {
	m, ok := n.(*ast.MemberNode)
	if !ok || !isResult(m.Node) {
		return false
	}
	i, ok := m.Property.(*ast.IntegerNode)
	return ok && i.Value == 0
}

func number(n ast.Node) (float64, string, bool) {
	neg := false
	if u, ok := n.(*ast.UnaryNode); ok && (u.Operator == "-" || u.Operator == "+") {
		neg, n = u.Operator == "-", u.Node
	}
	var v float64
	switch x := n.(type) {
	case *ast.IntegerNode:
		v = float64(x.Value)
	case *ast.FloatNode:
		v = x.Value
	default:
		return 0, "", false
	}
	if neg {
		v = -v
	}
	return v, strconv.FormatFloat(v, 'g', -1, 64), true
}
