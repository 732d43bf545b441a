package condition

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// newEnv builds the environment Argo gives a condition. raw is the value as
// the provider returned it (isNil and default look at it), value is raw after
// valueFromPointer (what `result` is).
//
// Programs are compiled against newEnv too: expr types each name by the
// type of the value under it, so compiling against anything else could
// accept or reject different conditions than Argo does.
func newEnv(raw, value any) map[string]any {
	return map[string]any{
		"result":  value,
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   isNaN,
		"isInf":   isInf,
		"isNil":   isNilFunc(raw),
		"default": defaultFunc(raw),
	}
}

// runner is what one evaluation needs besides the program. Argo builds a
// fresh map and two closures per evaluation; here they are pooled, with the
// closures reading the result through the runner, so that a cached
// evaluation allocates next to nothing. The map has the same names and
// value types as newEnv's, which is all a compiled program relies on.
type runner struct {
	raw  any
	vars map[string]any
	vm   vm.VM
}

var runners = sync.Pool{New: func() any {
	r := new(runner)
	r.vars = map[string]any{
		"result":  nil,
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   isNaN,
		"isInf":   isInf,
		"isNil":   func(any) bool { return isNil(r.raw) },
		"default": func(_, fallback any) any {
			if isNil(r.raw) {
				return fallback
			}
			return valueFromPointer(r.raw)
		},
	}
	return r
}}

// release drops the references to the result before the runner goes back to
// the pool, so that a pooled runner does not keep a large result alive.
// (The VM's internal scope pool may still hold one until the next run.)
func (r *runner) release() {
	r.raw = nil
	r.vars["result"] = nil
	clear(r.vm.Stack[:cap(r.vm.Stack)])
	clear(r.vm.Scopes[:cap(r.vm.Scopes)])
	clear(r.vm.Variables)
	runners.Put(r)
}

// validationEnv is the environment for checking a condition before anything
// is measured: result is `any`, so expr accepts every use of it and only
// reports what is wrong whatever the measurement turns out to be. The
// function fields have exactly the types newEnv's functions have, so calls
// are checked the same way.
type validationEnv struct {
	Result  any                `expr:"result"`
	AsInt   func(any) int64    `expr:"asInt"`
	AsFloat func(any) float64  `expr:"asFloat"`
	IsNaN   func(float64) bool `expr:"isNaN"`
	IsInf   func(float64) bool `expr:"isInf"`
	IsNil   func(any) bool     `expr:"isNil"`
	Default func(any, any) any `expr:"default"`
}

// validate reports syntax errors, unknown names and conditions whose type is
// known not to be bool, with the messages a measurement would get; and it
// refuses what canaryd will not run: a built-in outside the allow-list
// (checkBuiltins) and a condition whose work it cannot bound (checkCost). It
// returns the bound. maxNodes, when not 0, is the node budget (see MaxNodes).
//
// It is expr.Compile taken apart, so that the tree can be looked at between
// its steps: parsed (the built-ins are refused before anything else is said
// about their calls), type-checked (the cost needs to know which + may join
// strings), then optimized and compiled exactly as expr.Compile does.
func validate(condition string, maxNodes uint) (c cost, err error) {
	defer recoverInto(&err)
	config := conf.CreateNew()
	config.WithEnv(validationEnv{})
	if maxNodes > 0 {
		config.MaxNodes = maxNodes
	}
	tree, err := parser.ParseWithConfig(condition, config)
	if err != nil {
		if maxNodes > 0 && strings.Contains(err.Error(), "exceeds maximum allowed nodes") {
			return cost{}, fmt.Errorf("the condition is too complex: it has more than %d syntax nodes, the most this canaryd accepts", maxNodes)
		}
		return cost{}, cleanError(err)
	}
	if err := checkBuiltins(tree.Node, "condition"); err != nil {
		return cost{}, err
	}
	if _, err := checker.Check(tree, config); err != nil {
		return cost{}, cleanError(err)
	}
	if c, err = checkCost(tree.Node, "condition"); err != nil {
		return cost{}, err
	}
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		return cost{}, cleanError(err)
	}
	program, err := compiler.Compile(tree, config)
	if err != nil {
		return cost{}, cleanError(err)
	}
	// expr.AsBool would also reject non-bool conditions, but with its own
	// wording ("but got unknown" for nil); Argo's is the %T of the output.
	nt := program.Node().Nature()
	switch {
	case nt.Nil:
		return cost{}, fmt.Errorf("expected bool, but got %T", nil)
	case nt.Type != nil && nt.Kind != reflect.Interface && nt.Kind != reflect.Bool:
		return cost{}, fmt.Errorf("expected bool, but got %s", nt.Type)
	}
	return c, nil
}

// compileTyped compiles condition for results of value's type, the way Argo
// compiles it for each evaluation.
func compileTyped(condition string, value any) (program *vm.Program, err error) {
	defer recoverInto(&err)
	checked := value
	if _, ok := value.(Doubles); ok {
		checked = []any(nil)
	}
	program, err = expr.Compile(condition, expr.Env(newEnv(checked, checked)))
	if err != nil {
		return nil, cleanError(err)
	}
	return program, nil
}

// run evaluates a program compiled by compileTyped for value's type.
func run(program *vm.Program, raw, value any) (ok bool, err error) {
	defer recoverInto(&err)
	r := runners.Get().(*runner)
	defer r.release()
	r.raw = raw
	r.vars["result"] = value
	r.vm.MemoryBudget = MemoryBudget
	out, err := r.vm.Run(program, r.vars)
	if err != nil {
		return false, cleanError(err)
	}
	b, isBool := out.(bool)
	if !isBool {
		return false, fmt.Errorf("expected bool, but got %T", out)
	}
	return b, nil
}

// recoverInto turns a panic into an error. expr's VM already recovers panics
// raised while running (that is how asInt's failures become errors), but the
// compiler has no such guard, and a condition is user input: a bug in expr
// must cost one measurement, not the process.
func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%v", r)
	}
}
