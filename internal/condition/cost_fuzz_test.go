package condition

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// cappedResultValues is --max-result-values' default: the largest result a
// condition meets unless the operator raises it.
const cappedResultValues = 10_000

// FuzzCostBound generates conditions from the grammar of what conditions
// do with results (iteration, nesting, ranges, lists, let, membership, map
// literals) and checks the cost bound against the work actually done:
// every condition Compile accepts, evaluated on a result of
// cappedResultValues values, evaluates no more syntax nodes than its bound
// allows. The nodes are counted, not timed: each is wrapped in a call to a
// counting function. A map literal's work is not in its nodes (see
// mapSteps): a condition that builds maps is also measured, in bytes and
// in time (see checkMapCost).
func FuzzCostBound(f *testing.F) {
	for _, seed := range []string{
		"", "\x01", "\x01\x00\x00", "\x01\x01\x02\x00\x00", "\x06\x02\x04\x01\x00\x03",
		"\x01\x03\x00\x01\x00\x00", "\x03\x04\x00\x00\x05", "\x0a\x00\x00\x00\x00",
		"\x01\x02\x04\x01\x02\x04\x00", "\x06\x00\x01\x01\x07\x00\x00\x00",
		// A map built for each value: none(result, {{k0: #}.k0 > #}),
		// and with 2 and with 95 entries (the red team's), refused.
		"\x01\x02\x00\x00\x0d\x00\x00", "\x01\x02\x00\x00\x0d\x00\x01\x00", "\x01\x02\x00\x00\x0d\x00\x06\x00",
		// A map built once: {k0: 0.5, …}.k0 > 0.5, with 57 entries.
		"\x00\x0d\x00\x05\x00",
	} {
		f.Add([]byte(seed))
	}
	result := make([]float64, cappedResultValues)
	for i := range result {
		result[i] = float64(i%100) / 100
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		g := &grammar{b: program}
		cond := g.boolean(4)
		bound, err := validate(cond, 0)
		if err != nil {
			return // refused, or not a condition
		}
		steps, err := countSteps(cond, result)
		if err != nil {
			t.Fatalf("counting %q: %v", cond, err)
		}
		if limit := bound.At(len(result)); float64(steps) > limit {
			t.Fatalf("%q evaluated %d nodes on %d values; its bound is %v (%.0f)", cond, steps, len(result), bound, limit)
		}
		if g.maps > 0 {
			checkMapCost(t, cond, bound, (&grammar{b: program, noMaps: true}).boolean(4), result)
		}
	})
}

// stepTime is the most one step takes in the bound documented in
// docs/templates.md: 10⁷ steps, tens of milliseconds. Measured, a step
// takes 2 to 5 ns without the race detector.
const stepTime = 10 * time.Nanosecond

// checkMapCost holds the maps of cond, accepted with its bound, to what
// they are charged: evaluated on result, cond allocates no more bytes
// than plain, the same condition without its maps, and at most a byte
// more for each step more in its bound (mapSteps); it takes no longer
// than plain and stepTime more for each such step. The bytes are
// counted: the margin, twice the charge and a MiB, is for what else the
// process allocates meanwhile. The time is measured, the best of two
// runs each: its margin is four times the charge and 20 ms (a busy
// machine of two cores), and ten times that with the race detector.
func checkMapCost(t *testing.T, cond string, bound cost, plain string, result []float64) {
	t.Helper()
	if !typeChecks(plain) || !mapsHoldNumbers(cond) {
		// A map's value is of any type: without the map, the condition
		// may not type-check ({k0: #}.k0 where # is a list), and there is
		// nothing to compare with. Nor is there when it does, but a map
		// holds a list: taken out of its map, the list keeps its type,
		// and what is done with it is not the same work (x in result,
		// with x a list, looks at no value of result; with x any value,
		// it looks at each, and boxes it).
		return
	}
	plainBound, err := validate(plain, 0)
	if err != nil {
		t.Fatalf("%q is accepted, but not %q, the same without its maps: %v", cond, plain, err)
	}
	charged := bound.At(len(result)) - plainBound.At(len(result))
	withMaps, without := measure(t, cond, result, 2), measure(t, plain, result, 2)
	extra := float64(withMaps.bytes) - float64(without.bytes)
	if limit := 2*charged + 1<<20; extra > limit {
		t.Fatalf("%q allocated %d bytes on %d values, %.0f more than %q; its maps are charged %.0f steps, a byte a step at most (limit %.0f)",
			cond, withMaps.bytes, len(result), extra, plain, charged, limit)
	}
	margin := 4.0
	if raceDetector {
		margin *= 10
	}
	longer := withMaps.took - without.took
	if limit := time.Duration(margin * (charged*float64(stepTime) + float64(20*time.Millisecond))); longer > limit {
		t.Fatalf("%q took %s on %d values, %s more than %q; its maps are charged %.0f steps, %s a step at most (limit %s)",
			cond, withMaps.took, len(result), longer, plain, charged, stepTime, limit)
	}
}

// mapsHoldNumbers reports whether every map literal of condition, parsed
// and type-checked as validate does, has a number (or a value of any
// type) as its first value, which is what the grammar's maps hold unless
// # is a list there.
func mapsHoldNumbers(condition string) bool {
	config := conf.CreateNew()
	config.WithEnv(validationEnv{})
	tree, err := parser.ParseWithConfig(condition, config)
	if err != nil {
		return false
	}
	if _, err := checker.Check(tree, config); err != nil {
		return false
	}
	numbers := true
	ast.Find(tree.Node, func(n ast.Node) bool {
		if m, ok := n.(*ast.MapNode); ok && len(m.Pairs) > 0 {
			if p, ok := m.Pairs[0].(*ast.PairNode); ok {
				// A value of any type (an element of result) may be a
				// number, and keeps that type without its map too.
				switch t := p.Value.Type(); {
				case t == nil:
					numbers = false
				default:
					switch t.Kind() {
					case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
						reflect.Float32, reflect.Float64, reflect.Interface:
					default:
						numbers = false
					}
				}
			}
		}
		return false
	})
	return numbers
}

// typeChecks reports whether condition parses and type-checks as
// validate's first steps do.
func typeChecks(condition string) bool {
	config := conf.CreateNew()
	config.WithEnv(validationEnv{})
	tree, err := parser.ParseWithConfig(condition, config)
	if err != nil {
		return false
	}
	_, err = checker.Check(tree, config)
	return err == nil
}

// TestCostBoundHolds runs FuzzCostBound's check on conditions written out,
// heavy ones among them.
func TestCostBoundHolds(t *testing.T) {
	result := make([]float64, 2000)
	for i := range result {
		result[i] = float64(i%100) / 100
	}
	for _, cond := range []string{
		"all(result, {# >= 0})",
		"all(result, {any(1..100, {# > 0})})",
		"len(filter(result, {# > 0.5})) > 0 && sum(map(result, {# * 2})) > 0",
		"median(result) > 0 && max(result) > 0 && mean(result) >= 0",
		"let r = 1..100; all(r, {all(r, {# > 0})})",
		"all([1, 2, 3], {all(result, {# >= 0})})",
		"count(result, {# in [0.1, 0.2, 0.3]}) >= 0",
		"len(map(result, {[#, #]})) > 0",
		"all(result, {# + # >= 0})",
		"findLastIndex(result, {# > 2}) == -1",
		"none(filter(map(result, {# * 2}), {# > 1}), {# > 3})",
	} {
		bound, err := validate(cond, 0)
		if err != nil {
			t.Errorf("validate(%q): %v", cond, err)
			continue
		}
		steps, err := countSteps(cond, result)
		if err != nil {
			t.Errorf("counting %q: %v", cond, err)
			continue
		}
		if limit := bound.At(len(result)); float64(steps) > limit {
			t.Errorf("%q evaluated %d nodes on %d values; its bound is %v (%.0f)", cond, steps, len(result), bound, limit)
		}
		if steps == 0 {
			t.Errorf("%q: no node counted (does it type-check for []float64?)", cond)
		}
	}
}

// countSteps evaluates cond on result with every node counted.
func countSteps(cond string, result []float64) (int, error) {
	steps := 0
	env := map[string]any{
		"result":  result,
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   isNaN,
		"isInf":   isInf,
		"isNil":   isNilFunc(result),
		"default": defaultFunc(result),
		"tick":    func() bool { steps++; return true },
	}
	config := conf.CreateNew()
	config.WithEnv(env)
	config.MaxNodes = 0
	tree, err := parser.ParseWithConfig(cond, config)
	if err != nil {
		return 0, err
	}
	instrument(&tree.Node)
	if _, err := checker.Check(tree, config); err != nil {
		// Wrong for a []float64 result, as the measurement would say:
		// nothing is evaluated.
		return 0, nil
	}
	program, err := compiler.Compile(tree, config)
	if err != nil {
		return 0, err
	}
	machine := vm.VM{MemoryBudget: MemoryBudget}
	// A run-time error (an index out of range, a type mismatch) ends the
	// evaluation early: the count so far is still bounded.
	_, _ = machine.Run(program, env)
	return steps, nil
}

// instrument wraps every node that is evaluated as a value in a sequence
// that first calls tick: (tick(); node).
func instrument(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.UnaryNode:
		instrument(&n.Node)
	case *ast.BinaryNode:
		instrument(&n.Left)
		instrument(&n.Right)
	case *ast.MemberNode:
		instrument(&n.Node)
	case *ast.SliceNode:
		instrument(&n.Node)
		if n.From != nil {
			instrument(&n.From)
		}
		if n.To != nil {
			instrument(&n.To)
		}
	case *ast.CallNode:
		for i := range n.Arguments {
			instrument(&n.Arguments[i])
		}
	case *ast.BuiltinNode:
		for i := range n.Arguments {
			if p, ok := n.Arguments[i].(*ast.PredicateNode); ok {
				instrument(&p.Node)
				continue
			}
			instrument(&n.Arguments[i])
		}
	case *ast.ConditionalNode:
		instrument(&n.Cond)
		instrument(&n.Exp1)
		instrument(&n.Exp2)
	case *ast.VariableDeclaratorNode:
		instrument(&n.Value)
		instrument(&n.Expr)
	case *ast.SequenceNode:
		for i := range n.Nodes {
			instrument(&n.Nodes[i])
		}
	case *ast.ArrayNode:
		for i := range n.Nodes {
			instrument(&n.Nodes[i])
		}
	case *ast.MapNode:
		for _, p := range n.Pairs {
			instrument(&p.(*ast.PairNode).Value)
		}
	case *ast.ChainNode, *ast.PredicateNode:
		return
	}
	*node = &ast.SequenceNode{Nodes: []ast.Node{
		&ast.CallNode{Callee: &ast.IdentifierNode{Value: "tick"}},
		*node,
	}}
}

// grammar writes a condition from fuzz input, one choice a byte.
type grammar struct {
	b      []byte
	i      int
	inPred int
	vars   int
	// maps counts the map literals written.
	maps int
	// noMaps writes the same condition with each map literal left out:
	// the number taken from it instead.
	noMaps bool
}

func (g *grammar) pick(n int) int {
	if g.i >= len(g.b) {
		return 0
	}
	v := int(g.b[g.i]) % n
	g.i++
	return v
}

var rangeEnds = []int{0, 3, 10, 100, 999, 1000, 1200}

func (g *grammar) list(d int) string {
	if d <= 0 {
		return "result"
	}
	switch g.pick(9) {
	case 1:
		return fmt.Sprintf("[%s, %s]", g.number(d-1), g.number(d-1))
	case 2:
		return fmt.Sprintf("1..%d", rangeEnds[g.pick(len(rangeEnds))])
	case 3:
		return fmt.Sprintf("filter(%s, {%s})", g.list(d-1), g.pred(func() string { return g.boolean(d - 1) }))
	case 4:
		return fmt.Sprintf("map(%s, {%s})", g.list(d-1), g.pred(func() string { return g.number(d - 1) }))
	case 5:
		return "result[1:]"
	case 6:
		if g.vars > 0 {
			return fmt.Sprintf("v%d", g.pick(g.vars))
		}
		return "result"
	case 7:
		return fmt.Sprintf("map(%s, {[#]})", g.list(d-1))
	case 8:
		return "$env.result"
	}
	return "result"
}

// mapSizes are the entries of the map literals the grammar writes, up to
// the red team's 95 built for each value.
var mapSizes = []int{1, 2, 8, 9, 30, 57, 95}

// mapEntry writes a number taken from a map literal built there,
// {k0: …, k1: …}.k0, its first value a number of depth d and the others
// the simplest; with noMaps, the number alone.
func (g *grammar) mapEntry(d int) string {
	g.maps++
	first := g.number(d)
	size := mapSizes[g.pick(len(mapSizes))]
	if g.noMaps {
		return "(" + first + ")"
	}
	var b strings.Builder
	b.WriteString("{k0: " + first)
	for i := 1; i < size; i++ {
		fmt.Fprintf(&b, ", k%d: %s", i, g.number(0))
	}
	b.WriteString("}.k0")
	return b.String()
}

func (g *grammar) pred(body func() string) string {
	g.inPred++
	defer func() { g.inPred-- }()
	return body()
}

func (g *grammar) number(d int) string {
	if d <= 0 {
		if g.inPred > 0 {
			return "#"
		}
		return "0.5"
	}
	switch g.pick(14) {
	case 1:
		return fmt.Sprint(g.pick(7))
	case 2:
		return "len(" + g.list(d-1) + ")"
	case 3:
		return "sum(" + g.list(d-1) + ")"
	case 4:
		return "max(" + g.list(d-1) + ")"
	case 5:
		return "median(" + g.list(d-1) + ")"
	case 6:
		return g.number(d-1) + " + " + g.number(d-1)
	case 7:
		return fmt.Sprintf("count(%s, {%s})", g.list(d-1), g.pred(func() string { return g.boolean(d - 1) }))
	case 8:
		return "first(" + g.list(d-1) + ")"
	case 9:
		return "abs(" + g.number(d-1) + ")"
	case 10:
		return "mean(" + g.list(d-1) + ")"
	case 11:
		return fmt.Sprintf("findIndex(%s, {%s})", g.list(d-1), g.pred(func() string { return g.boolean(d - 1) }))
	case 12:
		return "result[0]"
	case 13:
		return g.mapEntry(d - 1)
	}
	if g.inPred > 0 {
		return "#"
	}
	return "0.5"
}

func (g *grammar) boolean(d int) string {
	if d <= 0 {
		return g.number(0) + " > 0.5"
	}
	builtins := []string{"all", "any", "none", "one"}
	switch g.pick(11) {
	case 1, 2, 7, 8:
		return fmt.Sprintf("%s(%s, {%s})", builtins[g.pick(4)], g.list(d-1), g.pred(func() string { return g.boolean(d - 1) }))
	case 3:
		return g.number(d-1) + " in " + g.list(d-1)
	case 4:
		return "(" + g.boolean(d-1) + " && " + g.boolean(d-1) + ")"
	case 5:
		return "!(" + g.boolean(d-1) + ")"
	case 6:
		v := g.list(d - 1)
		name := fmt.Sprintf("v%d", g.vars)
		g.vars++
		body := g.boolean(d - 1)
		g.vars--
		return "(let " + name + " = " + v + "; " + body + ")"
	case 9:
		return "isNaN(" + g.number(d-1) + ")"
	case 10:
		return g.list(d-1) + " == " + g.list(d-1)
	}
	return g.number(d-1) + " > " + g.number(d-1)
}

// TestGrammarWritesConditions keeps the fuzz target honest: its grammar
// writes conditions that parse, and some that Compile accepts.
func TestGrammarWritesConditions(t *testing.T) {
	accepted := 0
	for i := range 200 {
		b := []byte(strings.Repeat(string(rune(i%256)), 3) + fmt.Sprint(i*7919))
		g := &grammar{b: b}
		cond := g.boolean(4)
		if _, err := parser.Parse(cond); err != nil {
			t.Fatalf("the grammar wrote %q, which does not parse: %v", cond, err)
		}
		if _, err := validate(cond, 0); err == nil {
			accepted++
		}
	}
	if accepted == 0 {
		t.Errorf("none of the grammar's conditions was accepted")
	}
}

// evaluation is what evaluating a condition took, at best of a few runs.
type evaluation struct {
	bytes uint64
	took  time.Duration
}

// measure evaluates cond as a measurement would, once to compile its
// program for result's type and then runs times, and returns the fewest
// bytes allocated and the shortest time of those runs.
func measure(t *testing.T, cond string, result []float64, runs int) evaluation {
	t.Helper()
	c, errs := Compile(cond, "")
	if errs != nil {
		t.Fatalf("Compile(%q): %v", cond, errs)
	}
	c.Judge(result)
	best := evaluation{bytes: math.MaxUint64, took: math.MaxInt64}
	var ms runtime.MemStats
	for range runs {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		start := time.Now()
		c.Judge(result)
		took := time.Since(start)
		runtime.ReadMemStats(&ms)
		best.bytes = min(best.bytes, ms.TotalAlloc-before)
		best.took = min(best.took, took)
	}
	return best
}

// TestMapsHoldNumbers: checkMapCost compares a condition with its maps
// taken out only when its maps hold numbers.
func TestMapsHoldNumbers(t *testing.T) {
	for cond, want := range map[string]bool{
		"none(result, {{k0: #}.k0 > #})":                  true,
		"{k0: 0.5, k1: 0.5}.k0 > 0.5":                     true,
		"any(1..100, {{k0: #}.k0 in result})":             true,
		"any(map(1..100, {[#]}), {{k0: #}.k0 in result})": false,
	} {
		if got := mapsHoldNumbers(cond); got != want {
			t.Errorf("mapsHoldNumbers(%q) = %v, want %v", cond, got, want)
		}
	}
}
