package condition

import (
	"fmt"
	"reflect"
	"time"

	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// TimeExpr is a compiled time expression, as Argo's Prometheus rangeQuery
// uses for its start and end: `now() - duration("5m")`. It is safe for
// concurrent use.
type TimeExpr struct {
	program *vm.Program
}

// timeEnv is the environment of a time expression: Argo gives it isNaN and
// isInf; canaryd adds a now() that reads the measurement's instant, so that
// a backtest evaluates the window as of its own past time. (An env entry
// named now takes precedence over expr's built-in now().)
func timeEnv(now time.Time) map[string]any {
	return map[string]any{
		"isNaN": isNaN,
		"isInf": isInf,
		"now":   func() time.Time { return now },
	}
}

var timeType = reflect.TypeFor[time.Time]()

// CompileTime compiles a time expression once. It must yield a time.Time.
// An expression whose type is known not to be time.Time is rejected here,
// with the message Argo gives when it evaluates one, so that a spec can be
// refused before anything runs.
func CompileTime(expression string) (*TimeExpr, error) {
	program, err := compileTime(expression)
	if err != nil {
		return nil, err
	}
	return &TimeExpr{program: program}, nil
}

func compileTime(expression string) (_ *vm.Program, err error) {
	defer recoverInto(&err)
	// As validate does for conditions, with the same allow-list and cost
	// bound: a time expression is as much the caller's text as a condition,
	// and it is evaluated on every measurement.
	config := conf.CreateNew()
	config.WithEnv(timeEnv(time.Time{}))
	tree, err := parser.ParseWithConfig(expression, config)
	if err != nil {
		return nil, cleanError(err)
	}
	if err := checkBuiltins(tree.Node, "time expression"); err != nil {
		return nil, err
	}
	if _, err := checker.Check(tree, config); err != nil {
		return nil, cleanError(err)
	}
	if _, err := checkCost(tree.Node, "time expression"); err != nil {
		return nil, err
	}
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		return nil, cleanError(err)
	}
	program, err := compiler.Compile(tree, config)
	if err != nil {
		return nil, cleanError(err)
	}
	nt := program.Node().Nature()
	switch {
	case nt.Nil:
		return nil, fmt.Errorf("expected time.Time, but got %T", nil)
	case nt.Type != nil && nt.Kind != reflect.Interface && nt.Type != timeType:
		return nil, fmt.Errorf("expected time.Time, but got %s", nt.Type)
	}
	return program, nil
}

// Eval evaluates the expression with now() reading now.
func (t *TimeExpr) Eval(now time.Time) (time.Time, error) {
	return evalTimeProgram(t.program, now)
}

func evalTimeProgram(program *vm.Program, now time.Time) (_ time.Time, err error) {
	defer recoverInto(&err)
	machine := vm.VM{MemoryBudget: MemoryBudget}
	out, err := machine.Run(program, timeEnv(now))
	if err != nil {
		return time.Time{}, cleanError(err)
	}
	at, ok := out.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("expected time.Time, but got %T", out)
	}
	return at, nil
}
