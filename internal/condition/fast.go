package condition

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// comparison is a condition that compares one number of the result with
// a number written in it, the shape most conditions have
// (result[0] >= 0.99, result < 500, 0.95 <= result[-1]): it is evaluated
// as expr's machine evaluates it (runtime.Fetch, then runtime.Less and the
// others of two numbers, the integer converted to float64), without the
// machine, for a result of the type it was compiled for. Any other result,
// an index out of its range above all, is the machine's, with its error.
type comparison struct {
	op string
	// index is result's element compared (negative from its end, as
	// runtime.Fetch takes it); scalar says result itself is.
	index  int
	scalar bool
	// number is the number written, on the right of op when resultLeft.
	number     float64
	resultLeft bool
}

var (
	typeFloat64  = reflect.TypeFor[float64]()
	typeFloat64s = reflect.TypeFor[[]float64]()
)

// comparisonOf returns program as a comparison when it is one, for
// results of typ (the Go type it was compiled for), and nil otherwise.
func comparisonOf(program *vm.Program, typ reflect.Type) *comparison {
	if program == nil || typ != typeFloat64 && typ != typeFloat64s {
		return nil
	}
	b, ok := program.Node().(*ast.BinaryNode)
	if !ok {
		return nil
	}
	switch b.Operator {
	case "<", "<=", ">", ">=", "==", "!=":
	default:
		return nil
	}
	c := &comparison{op: b.Operator, resultLeft: true}
	side, lit := b.Left, b.Right
	if number, ok := literal(b.Left); ok {
		side, lit, c.resultLeft = b.Right, nil, false
		c.number = number
	} else if c.number, ok = literal(lit); !ok {
		return nil
	}
	switch n := side.(type) {
	case *ast.IdentifierNode:
		if n.Value != "result" || typ != typeFloat64 {
			return nil
		}
		c.scalar = true
	case *ast.MemberNode:
		id, isID := n.Node.(*ast.IdentifierNode)
		index, isIndex := n.Property.(*ast.IntegerNode)
		if !isID || id.Value != "result" || !isIndex || n.Optional || n.Method || typ != typeFloat64s {
			return nil
		}
		c.index = index.Value
	default:
		return nil
	}
	return c
}

// literal is the number a literal node writes.
func literal(n ast.Node) (float64, bool) {
	switch n := n.(type) {
	case *ast.FloatNode:
		return n.Value, true
	case *ast.IntegerNode:
		return float64(n.Value), true
	}
	return 0, false
}

// eval evaluates the comparison on value, and reports false for done
// when it is the machine's to evaluate.
func (c *comparison) eval(value any) (result, done bool) {
	var x float64
	switch v := value.(type) {
	case float64:
		if !c.scalar {
			return false, false
		}
		x = v
	case []float64:
		i := c.index
		if i < 0 {
			i += len(v)
		}
		if c.scalar || i < 0 || i >= len(v) {
			return false, false
		}
		x = v[i]
	default:
		return false, false
	}
	a, b := x, c.number
	if !c.resultLeft {
		a, b = b, a
	}
	switch c.op {
	case "<":
		return a < b, true
	case "<=":
		return a <= b, true
	case ">":
		return a > b, true
	case ">=":
		return a >= b, true
	case "==":
		return a == b, true
	case "!=":
		return a != b, true
	}
	return false, false
}
