package condition

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// The bounds on what one condition may cost, checked when it is compiled.
// A condition is a few hundred bytes of user input that canaryd evaluates on
// every measurement; these make the work and the memory of an evaluation a
// property of the text, proved before anything runs, rather than of the
// values it meets.
const (
	// MaxRangeValues is the most values a range (a..b) may hold. Both ends
	// must be integer literals: a range whose size is not known before the
	// condition runs is refused.
	MaxRangeValues = 1000

	// MaxStepsPerValue and MaxFixedSteps bound a condition's work: for a
	// result of n values, at most MaxStepsPerValue·n + MaxFixedSteps steps,
	// where a step is one operation of expr's machine or one byte of a
	// string built or compared. With --max-result-values at its default of
	// 10,000, that is at most about 10⁷ steps, tens of milliseconds. The
	// bound is linear: a condition that goes over the result once for each
	// of its values (nested iteration) is refused whatever its constants.
	MaxStepsPerValue = 1000
	MaxFixedSteps    = 100_000

	// MemoryBudget is expr's own run-time budget, set explicitly on every
	// evaluation: the most array elements, map entries and range values
	// one evaluation may allocate (expr counts those; strings are bounded
	// by the steps above instead). Beyond it the measurement is an Error,
	// "memory budget exceeded".
	MemoryBudget = 1_000_000

	// ResultStringBytes is what the cost of a condition assumes of a
	// string inside a result: at most this many bytes. Prometheus results
	// hold numbers only; a judge result's strings (classification, reason,
	// warnings) are shorter.
	ResultStringBytes = 256
)

// Steps charged for operations that cost more than one step, per value
// handled.
const (
	// medianSteps per value: median sorts a copy of its values (n·log n,
	// with log₂ n below 32 for any result).
	medianSteps = 32
	// iterationSteps per value a predicate builtin goes over, besides its
	// predicate (the loop's own operations).
	iterationSteps = 4
	// zoneSteps is charged for date() with a time zone name, which loads
	// the zone's rules.
	zoneSteps = 1000
	// mapSteps per map literal ({a: 1, b: 2}) each time it is built,
	// and mapEntrySteps more per entry. expr builds a map into an empty
	// Go map, an insertion an entry, growing it as it goes: Go 1.26
	// allocates about 340 bytes for a map's first eight entries, then up
	// to 165 bytes an entry at each doubling, and an entry takes as long
	// as 30 to 50 steps; an array element is one step and 16 bytes.
	// Charged so, a map is charged a step or more for each byte it
	// allocates, as a string built is, and the steps bound its memory as
	// they bound a string's. Argo's conditions build no maps: the charge
	// is high rather than tuned.
	mapSteps      = 400
	mapEntrySteps = 200
)

// allowedBuiltins are the expr built-ins a condition may call: those Argo
// Rollouts' documented conditions use and their kin (all linear in their
// arguments), plus the time built-ins that rangeQuery expressions use.
// Argo's own helpers (asInt, asFloat, isNaN, isInf, isNil, default) are
// names of the environment, not built-ins, and always allowed. Everything
// else expr offers (string building such as replace, repeat, join, split,
// upper, trim; JSON and base64; sorting, grouping and reduce; …) is refused:
// none is needed to judge a measurement, and several allocate or loop
// without bound.
var allowedBuiltins = map[string]bool{
	"all": true, "any": true, "none": true, "one": true,
	"filter": true, "map": true, "count": true, "sum": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
	"len": true, "first": true, "last": true,
	"max": true, "min": true, "mean": true, "median": true,
	"abs": true, "ceil": true, "floor": true, "round": true, "int": true, "float": true,
	"now": true, "duration": true, "date": true,
}

// AllowedBuiltins returns the names of the expr built-ins conditions may
// call, sorted.
func AllowedBuiltins() []string {
	names := make([]string, 0, len(allowedBuiltins))
	for name := range allowedBuiltins {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// limitError is a condition refused for what it could cost rather than for
// what it means: Argo would evaluate it.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func limitErrorf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// isLimitError reports whether err refuses a condition for its cost.
func isLimitError(err error) bool {
	var le *limitError
	return errors.As(err, &le)
}

// checkBuiltins refuses calls of built-ins outside the allow-list. It looks
// at the parsed tree only, so that the refusal names the function whatever
// else is wrong with the call.
func checkBuiltins(node ast.Node, kind string) error {
	var refused []string
	ast.Walk(&node, visitorFunc(func(n *ast.Node) {
		if b, ok := (*n).(*ast.BuiltinNode); ok && !allowedBuiltins[b.Name] && !slices.Contains(refused, b.Name+"()") {
			refused = append(refused, b.Name+"()")
		}
	}))
	switch len(refused) {
	case 0:
		return nil
	case 1:
		return limitErrorf("%s is not allowed in a %s; the functions allowed are Argo's (asInt, asFloat, isNaN, isInf, isNil, default) and %s",
			refused[0], kind, strings.Join(AllowedBuiltins(), ", "))
	default:
		return limitErrorf("%s are not allowed in a %s; the functions allowed are Argo's (asInt, asFloat, isNaN, isInf, isNil, default) and %s",
			strings.Join(refused, ", "), kind, strings.Join(AllowedBuiltins(), ", "))
	}
}

type visitorFunc func(*ast.Node)

func (f visitorFunc) Visit(n *ast.Node) { f(n) }

// cost is a bound on an amount (steps, values) as a function of n, the
// number of values in the result: per·n + fixed. why names the first
// operation that made it grow with n, for messages.
type cost struct {
	per, fixed float64
	why        string
}

func constant(c float64) cost { return cost{fixed: c} }

// At is the bound for a result of n values.
func (c cost) At(n int) float64 { return c.per*float64(n) + c.fixed }

func (c cost) plus(d cost) cost {
	out := cost{per: c.per + d.per, fixed: c.fixed + d.fixed, why: c.why}
	if c.per == 0 {
		out.why = d.why
	}
	return out
}

func (c cost) add(k float64) cost { c.fixed += k; return c }

func (c cost) max(d cost) cost {
	out := cost{per: math.Max(c.per, d.per), fixed: math.Max(c.fixed, d.fixed), why: c.why}
	if c.per == 0 {
		out.why = d.why
	}
	return out
}

// times multiplies two bounds that must not both grow with n: the product
// would grow with n², and ok is then false.
func (c cost) times(d cost) (out cost, ok bool) {
	if c.per > 0 && d.per > 0 {
		return cost{per: math.Inf(1), why: d.why}, false
	}
	out = cost{per: c.per*d.fixed + d.per*c.fixed, fixed: c.fixed * d.fixed, why: c.why}
	if c.per == 0 {
		out.why = d.why
	}
	return out, true
}

// shape is what the cost analysis knows of a value: how large it can be.
type shape struct {
	// n bounds how many elements going over it visits (0 for a scalar).
	n cost
	// leaves bounds how many scalars it holds, nested lists flattened (1
	// for a scalar): what max, mean, median, == and in go over.
	leaves cost
	// str bounds its length in bytes, when it is a string.
	str float64
	// elem is the shape of its elements and map values; nil for a scalar.
	elem *shape
	// part marks the result and the parts of it: its leaves are the
	// result's, at most n in all, however it is taken apart.
	part bool
}

var (
	scalarShape = &shape{leaves: constant(1)}
	// resultShape is the result: at most n values, each of them possibly
	// the whole result again as far as the analysis knows (a judge result
	// is an object of lists), and strings of at most ResultStringBytes.
	resultShape = func() *shape {
		s := &shape{n: cost{per: 1, why: "result"}, leaves: cost{per: 1, why: "result"}, str: ResultStringBytes, part: true}
		s.elem = s
		return s
	}()
)

func stringShape(bytes float64) *shape { return &shape{leaves: constant(1), str: bytes} }

// element is what going over s or indexing it yields.
func (s *shape) element() *shape {
	if s.elem != nil {
		return s.elem
	}
	// Indexing a string gives a string of one character, anything else
	// nothing a cost could grow from.
	return &shape{leaves: constant(1), str: math.Min(s.str, 4)}
}

// clone is a copy of s with an identity of its own (see iterate).
func (s *shape) clone() *shape {
	c := *s
	if s.elem == s {
		c.elem = &c
	}
	return &c
}

// join is a shape that bounds both a and b.
func join(a, b *shape) *shape { return joinDepth(a, b, 0) }

func joinDepth(a, b *shape, depth int) *shape {
	switch {
	case a == b:
		return a
	case a == nil:
		return b
	case b == nil:
		return a
	case depth > 32:
		// Deeper than any literal a condition can write: the result's
		// shape bounds what the analysis lets through this far.
		return resultShape
	}
	out := &shape{
		n:      a.n.max(b.n),
		leaves: a.leaves.max(b.leaves),
		str:    math.Max(a.str, b.str),
		part:   a.part && b.part,
	}
	if a.elem != nil || b.elem != nil {
		out.elem = joinDepth(a.elem, b.elem, depth+1)
	}
	return out
}

// maxStr bounds the length of any string inside s.
func maxStr(s *shape) float64 {
	m := 0.0
	for i := 0; s != nil && i < 32; i++ {
		m = math.Max(m, s.str)
		if s.elem == s {
			break
		}
		s = s.elem
	}
	return m
}

// binding is a let variable in scope.
type binding struct {
	name  string
	shape *shape
}

// analyzer bounds the work of a type-checked condition.
type analyzer struct {
	vars []binding
	// frames are the predicates being gone through, innermost last.
	frames []frame
	// kind is "condition" or "time expression", for messages.
	kind string
	err  error
	// maps is set when the condition builds a map, charged mapSteps and
	// mapEntrySteps an entry: a refusal says so.
	maps bool
}

// frame is one predicate built-in being gone through.
type frame struct {
	// elem is the shape # stands for.
	elem *shape
	// amortized counts the comparisons of # (or a part of it) with
	// something else: each costs at most as many steps as # has leaves,
	// and the elements of a part of the result have at most the result's
	// leaves together, so they cost that many steps in all, not that many
	// for each element.
	amortized float64
}

// checkCost bounds the work of a checked tree: it refuses ranges that are
// not small literals, nested iteration over the result, and conditions
// whose work may exceed MaxStepsPerValue·n + MaxFixedSteps. It returns the
// bound.
func checkCost(node ast.Node, kind string) (cost, error) {
	a := &analyzer{kind: kind}
	c, _ := a.visit(node)
	if a.err != nil {
		return cost{}, a.err
	}
	step := "a step is one operation, or one byte of a string built or compared"
	if a.maps {
		step += fmt.Sprintf("; a map literal ({a: 1}) counts %d steps each time it is built, and %d more for each of its entries", mapSteps, mapEntrySteps)
	}
	switch {
	case math.IsInf(c.per, 1):
		return cost{}, limitErrorf("the work of this %s grows faster than the size of the result (%s)", kind, c.why)
	case c.per > MaxStepsPerValue:
		return cost{}, limitErrorf("this %s may take %s steps for each value of the result (through %s), more than the %d canaryd allows; %s",
			kind, formatSteps(c.per), c.why, MaxStepsPerValue, step)
	case c.fixed > MaxFixedSteps:
		whatever := " whatever the result"
		if kind != "condition" {
			whatever = ""
		}
		return cost{}, limitErrorf("this %s may take %s steps%s, more than the %d canaryd allows; %s",
			kind, formatSteps(c.fixed), whatever, MaxFixedSteps, step)
	}
	return c, nil
}

func formatSteps(f float64) string {
	if f >= 1e15 {
		return fmt.Sprintf("%.1e", f)
	}
	return fmt.Sprintf("%.0f", math.Ceil(f))
}

func (a *analyzer) fail(err error) (cost, *shape) {
	if a.err == nil {
		a.err = err
	}
	return constant(1), scalarShape
}

// mayBeString reports whether the checker leaves open that n is a string.
func mayBeString(n ast.Node) bool {
	t := n.Type()
	return t == nil || t.Kind() == reflect.Interface || t.Kind() == reflect.String
}

func (a *analyzer) visit(node ast.Node) (cost, *shape) {
	if a.err != nil || node == nil {
		return constant(1), scalarShape
	}
	switch n := node.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode:
		return constant(1), scalarShape
	case *ast.StringNode:
		return constant(1), stringShape(float64(len(n.Value)))
	case *ast.BytesNode:
		return constant(1), stringShape(float64(len(n.Value)))
	case *ast.ConstantNode:
		return constant(1), shapeOf(reflect.ValueOf(n.Value), 0)
	case *ast.IdentifierNode:
		return constant(1), a.identifier(n.Value)
	case *ast.PointerNode:
		if n.Name == "" && len(a.frames) > 0 {
			return constant(1), a.frames[len(a.frames)-1].elem
		}
		return constant(1), scalarShape
	case *ast.UnaryNode:
		c, _ := a.visit(n.Node)
		return c.add(1), scalarShape
	case *ast.BinaryNode:
		return a.binary(n)
	case *ast.ChainNode:
		return a.visit(n.Node)
	case *ast.MemberNode:
		c, s := a.visit(n.Node)
		pc, ps := a.visit(n.Property)
		// A map lookup hashes the key.
		return c.plus(pc).add(1 + ps.str), s.element()
	case *ast.SliceNode:
		return a.slice(n)
	case *ast.CallNode:
		return a.call(n)
	case *ast.BuiltinNode:
		return a.builtin(n)
	case *ast.PredicateNode:
		return a.visit(n.Node)
	case *ast.ConditionalNode:
		cc, _ := a.visit(n.Cond)
		c1, s1 := a.visit(n.Exp1)
		c2, s2 := a.visit(n.Exp2)
		return cc.plus(c1.max(c2)).add(1), join(s1, s2)
	case *ast.VariableDeclaratorNode:
		vc, vs := a.visit(n.Value)
		a.vars = append(a.vars, binding{n.Name, vs})
		ec, es := a.visit(n.Expr)
		a.vars = a.vars[:len(a.vars)-1]
		return vc.plus(ec).add(1), es
	case *ast.SequenceNode:
		c, s := constant(0), scalarShape
		for _, item := range n.Nodes {
			ic, is := a.visit(item)
			c, s = c.plus(ic).add(1), is
		}
		return c, s
	case *ast.ArrayNode:
		return a.array(n)
	case *ast.MapNode:
		return a.mapLiteral(n)
	default:
		return a.fail(limitErrorf("this %s uses %T, which canaryd cannot bound", a.kind, node))
	}
}

// slice is a slice expression's cost: its operand's, its bounds', and a step.
func (a *analyzer) slice(n *ast.SliceNode) (cost, *shape) {
	c, s := a.visit(n.Node)
	if n.From != nil {
		fc, _ := a.visit(n.From)
		c = c.plus(fc)
	}
	if n.To != nil {
		tc, _ := a.visit(n.To)
		c = c.plus(tc)
	}
	return c.add(1), s
}

// array is an array literal's cost and shape: a step to build it and one
// an element, its elements' costs, and its elements' shapes joined.
func (a *analyzer) array(n *ast.ArrayNode) (cost, *shape) {
	c := constant(1 + float64(len(n.Nodes)))
	out := &shape{n: constant(float64(len(n.Nodes)))}
	for _, item := range n.Nodes {
		ic, is := a.visit(item)
		c = c.plus(ic)
		out.leaves = out.leaves.plus(is.leaves)
		out.elem = join(out.elem, is)
	}
	if out.elem == nil {
		out.elem = scalarShape
	}
	return c, out
}

// mapLiteral is a map literal's cost and shape: mapSteps to build it and
// mapEntrySteps an entry, its keys' and values' costs, and its values'
// shapes joined.
func (a *analyzer) mapLiteral(n *ast.MapNode) (cost, *shape) {
	a.maps = true
	c := constant(1 + mapSteps + mapEntrySteps*float64(len(n.Pairs)))
	out := &shape{n: constant(float64(len(n.Pairs)))}
	for _, p := range n.Pairs {
		pair, ok := p.(*ast.PairNode)
		if !ok {
			return a.fail(limitErrorf("unexpected map entry %T", p))
		}
		kc, _ := a.visit(pair.Key)
		vc, vs := a.visit(pair.Value)
		c = c.plus(kc).plus(vc)
		out.leaves = out.leaves.plus(vs.leaves)
		out.elem = join(out.elem, vs)
	}
	if out.elem == nil {
		out.elem = scalarShape
	}
	return c, out
}

func (a *analyzer) identifier(name string) *shape {
	for i := len(a.vars) - 1; i >= 0; i-- {
		if a.vars[i].name == name {
			return a.vars[i].shape
		}
	}
	switch name {
	case "result", "$env":
		// $env holds result besides the helpers.
		return resultShape
	}
	return scalarShape
}

func (a *analyzer) binary(n *ast.BinaryNode) (cost, *shape) {
	if n.Operator == ".." {
		return a.rangeNode(n)
	}
	lc, ls := a.visit(n.Left)
	rc, rs := a.visit(n.Right)
	c := lc.plus(rc).add(1)
	bothStrings := mayBeString(n.Left) && mayBeString(n.Right)
	switch n.Operator {
	case "+":
		if bothStrings {
			// Concatenation copies both sides.
			bytes := ls.str + rs.str
			return c.add(bytes), stringShape(bytes)
		}
		return c, scalarShape
	case "in":
		// Each element is compared with the left side.
		each := 1.0
		if mayBeString(n.Left) {
			each += math.Min(ls.str, maxStr(rs.elem))
		}
		return c.plus(a.overLeaves("in", rs.leaves, each)), scalarShape
	case "contains", "startsWith", "endsWith":
		return c.add(ls.str + rs.str), scalarShape
	case "matches":
		pattern, ok := n.Right.(*ast.StringNode)
		if !ok {
			return a.fail(limitErrorf("matches needs a literal pattern in a %s (\"a\" matches \"^a\"), so that its cost is known before it runs", a.kind))
		}
		size := regexpSize(pattern.Value)
		// Matching goes over the subject once, following at most every
		// instruction of the pattern at each byte.
		return c.add((ls.str + 1) * size), scalarShape
	case "==", "!=", "<", ">", "<=", ">=":
		// Lists and maps compare element by element, strings byte by byte.
		switch {
		case n.Operator != "==" && n.Operator != "!=":
			// Only equality goes into lists and maps; an order of
			// anything but numbers, strings and times is an error.
		case a.isCurrentPart(ls) || a.isCurrentPart(rs):
			a.frames[len(a.frames)-1].amortized++
		default:
			c = c.plus(a.overLeaves(n.Operator, minCost(ls.leaves, rs.leaves), 1))
		}
		if bothStrings {
			c = c.add(math.Min(maxStr(ls), maxStr(rs)))
		}
		return c, scalarShape
	case "??":
		return c, join(ls, rs)
	}
	return c, scalarShape
}

// isCurrentPart reports whether s is what # stands for in the innermost
// predicate, or a part of it, and a part of the result.
func (a *analyzer) isCurrentPart(s *shape) bool {
	return len(a.frames) > 0 && s == a.frames[len(a.frames)-1].elem && s.part
}

// overLeaves is the cost of op going over leaves values, each costing
// each steps. A list whose leaves grow faster than the result is refused
// here, where something would go over them.
func (a *analyzer) overLeaves(op string, leaves cost, each float64) cost {
	if math.IsInf(leaves.per, 1) {
		a.fail(limitErrorf("%s goes over %s, so its work grows with the square of the result's size", op, leaves.why))
		return constant(1)
	}
	c := cost{per: leaves.per * each, fixed: leaves.fixed * each}
	if c.per > 0 {
		c.why = op
	}
	return c
}

// minCost is a bound on the smaller of two amounts.
func minCost(a, b cost) cost {
	switch {
	case a.per == 0 && b.per == 0:
		return constant(math.Min(a.fixed, b.fixed))
	case a.per == 0:
		return a
	case b.per == 0:
		return b
	}
	return a.max(b)
}

// rangeNode admits a range only between integer literals, of at most
// MaxRangeValues values.
func (a *analyzer) rangeNode(n *ast.BinaryNode) (cost, *shape) {
	from, ok1 := integerLiteral(n.Left)
	to, ok2 := integerLiteral(n.Right)
	if !ok1 || !ok2 {
		return a.fail(limitErrorf("a range in a %s must have integer literals at both ends (1..10), so that its size is known before it runs", a.kind))
	}
	size := float64(to) - float64(from) + 1
	if size < 0 {
		size = 0
	}
	if size > MaxRangeValues {
		return a.fail(limitErrorf("the range %d..%d has %s values, more than the %d a range in a %s may have",
			from, to, formatSteps(size), MaxRangeValues, a.kind))
	}
	// The two ends, the operation, and one step a value made.
	return constant(3 + size), &shape{n: constant(size), leaves: constant(size), elem: scalarShape}
}

func integerLiteral(n ast.Node) (int, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		return v.Value, true
	case *ast.UnaryNode:
		if i, ok := v.Node.(*ast.IntegerNode); ok {
			switch v.Operator {
			case "-":
				return -i.Value, true
			case "+":
				return i.Value, true
			}
		}
	}
	return 0, false
}

// regexpSize is the number of instructions of a pattern's program: what
// matching one byte may cost at most. A pattern that does not compile
// costs nothing here: the checker refuses it.
func regexpSize(pattern string) float64 {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return float64(len(prog.Inst))
}

func (a *analyzer) call(n *ast.CallNode) (cost, *shape) {
	var c cost
	var out *shape = scalarShape
	argBytes := 0.0
	args := make([]*shape, len(n.Arguments))
	for i, arg := range n.Arguments {
		ac, as := a.visit(arg)
		c = c.plus(ac)
		args[i] = as
		argBytes += maxStr(as)
	}
	c = c.add(1)
	switch callee := n.Callee.(type) {
	case *ast.IdentifierNode:
		switch callee.Value {
		case "asInt", "asFloat":
			// Parsing a string reads it.
			return c.add(argBytes), scalarShape
		case "isNaN", "isInf", "isNil":
			return c, scalarShape
		case "default":
			if len(args) == 2 {
				out = join(resultShape, args[1])
			} else {
				out = resultShape
			}
			return c, out
		}
	case *ast.MemberNode:
		// A method: conditions have them on time values only (a time's
		// Format, a duration's Hours). The object is evaluated too.
		oc, _ := a.visit(callee.Node)
		c = c.plus(oc)
	}
	// Anything else returns at most a formatted string a few times longer
	// than its arguments, or the result itself.
	return c.add(argBytes), join(resultShape, stringShape(64+8*argBytes))
}

func (a *analyzer) builtin(n *ast.BuiltinNode) (cost, *shape) {
	switch n.Name {
	case "all", "any", "none", "one", "filter", "map", "count", "sum",
		"find", "findIndex", "findLast", "findLastIndex":
		return a.iterate(n)
	}
	var c cost
	args := make([]*shape, len(n.Arguments))
	for i, arg := range n.Arguments {
		ac, as := a.visit(arg)
		c = c.plus(ac)
		args[i] = as
	}
	c = c.add(1)
	switch n.Name {
	case "len":
		// A string's length is counted in runes.
		for _, s := range args {
			c = c.add(s.str)
		}
		return c, scalarShape
	case "abs", "ceil", "floor", "round", "now":
		return c, scalarShape
	case "first", "last":
		if len(args) == 0 {
			return c, scalarShape
		}
		return c, args[0].element()
	case "int", "float", "duration":
		for _, s := range args {
			c = c.add(s.str)
		}
		return c, scalarShape
	case "date":
		// Without a layout, date() tries seven.
		per := 1.0
		if len(args) == 1 {
			per = 7
		}
		for _, s := range args {
			c = c.add(per * s.str)
		}
		if len(args) == 3 {
			c = c.add(zoneSteps)
		}
		return c, scalarShape
	case "max", "min", "mean", "median":
		per := 1.0
		if n.Name == "median" {
			per = medianSteps
		}
		str := 0.0
		for _, s := range args {
			c = c.plus(a.overLeaves(n.Name+"()", s.leaves, per))
			str = math.Max(str, maxStr(s))
		}
		if n.Name == "max" || n.Name == "min" {
			return c, stringShape(str)
		}
		return c, scalarShape
	}
	return a.fail(limitErrorf("%s() is not allowed in a %s", n.Name, a.kind))
}

// iterate bounds a predicate built-in: its collection, and its predicate
// once for each element.
func (a *analyzer) iterate(n *ast.BuiltinNode) (cost, *shape) {
	if len(n.Arguments) == 0 {
		return a.fail(limitErrorf("%s() needs arguments", n.Name))
	}
	cc, cs := a.visit(n.Arguments[0])
	// # gets a shape of its own, so that a predicate returning # or a
	// part of it (map(result, {#})) can be told from one returning
	// another value of the same shape (map(result, {result[0]})).
	elem := cs.element().clone()
	body, bodyShape := constant(0), elem
	var fr frame
	if len(n.Arguments) > 1 {
		a.frames = append(a.frames, frame{elem: elem})
		body, bodyShape = a.visit(n.Arguments[1])
		fr = a.frames[len(a.frames)-1]
		a.frames = a.frames[:len(a.frames)-1]
	}
	if a.err != nil {
		return constant(1), scalarShape
	}
	count := cs.n
	if count.per > 0 {
		count.why = n.Name + "()"
	}
	loop, ok := count.times(body.add(iterationSteps))
	if !ok {
		return a.fail(limitErrorf("%s inside %s() goes over the result once for each value %s() goes over, so its work grows with the square of the result's size; nested iteration is allowed over a literal list or a range of at most %d values only",
			body.why, n.Name, n.Name, MaxRangeValues))
	}
	if fr.amortized > 0 {
		loop = loop.plus(a.overLeaves(n.Name+"()", cs.leaves, fr.amortized))
	}
	c := cc.plus(loop).add(2)
	switch n.Name {
	case "filter":
		return c, &shape{n: cs.n, leaves: cs.leaves, str: cs.str, elem: elem, part: cs.part}
	case "map":
		out := &shape{n: cs.n, elem: bodyShape}
		if cs.part && bodyShape == elem {
			out.leaves, out.part = cs.leaves, true
		} else if leaves, ok := cs.n.times(bodyShape.leaves); ok {
			out.leaves = leaves
		} else {
			out.leaves = cost{per: math.Inf(1), why: "map()'s list, which holds a list as large as the result for each value of the result"}
		}
		return c, out
	case "find", "findLast":
		return c, elem
	}
	return c, scalarShape
}

// shapeOf bounds a constant the optimizer folded.
func shapeOf(v reflect.Value, depth int) *shape {
	if !v.IsValid() || depth > 32 {
		return scalarShape
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return scalarShape
		}
		return shapeOf(v.Elem(), depth+1)
	case reflect.String:
		return stringShape(float64(v.Len()))
	case reflect.Slice, reflect.Array, reflect.Map:
		out := &shape{n: constant(float64(v.Len()))}
		var values []reflect.Value
		if v.Kind() == reflect.Map {
			it := v.MapRange()
			for it.Next() {
				values = append(values, it.Value())
			}
		} else {
			for i := range v.Len() {
				values = append(values, v.Index(i))
			}
		}
		for _, e := range values {
			es := shapeOf(e, depth+1)
			out.leaves = out.leaves.plus(es.leaves)
			out.elem = join(out.elem, es)
		}
		if out.elem == nil {
			out.elem = scalarShape
		}
		return out
	}
	return scalarShape
}
