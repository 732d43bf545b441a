package condition

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// TimeExpr is a compiled time expression, as Argo's Prometheus rangeQuery
// uses for its start and end: `now() - duration("5m")`.
type TimeExpr struct {
	program *vm.Program
}

// timeEnv is the environment of a time expression: Argo gives it isNaN and
// isInf; canaryd adds a now() that reads the measurement's instant, so that
// a backtest evaluates the window as of its own past time.
type timeEnv struct {
	now time.Time
}

func (e *timeEnv) env() map[string]any {
	return map[string]any{
		"isNaN": isNaN,
		"isInf": isInf,
		"now":   func() time.Time { return e.now },
	}
}

// CompileTime compiles a time expression once. It must yield a time.Time.
func CompileTime(expression string) (*TimeExpr, error) {
	env := (&timeEnv{now: time.Now()}).env()
	program, err := expr.Compile(expression, expr.Env(env))
	if err != nil {
		return nil, cleanError(err)
	}
	return &TimeExpr{program: program}, nil
}

// Eval evaluates the expression with now() reading now.
func (t *TimeExpr) Eval(now time.Time) (time.Time, error) {
	out, err := expr.Run(t.program, (&timeEnv{now: now}).env())
	if err != nil {
		return time.Time{}, cleanError(err)
	}
	at, ok := out.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("expected time.Time, but got %T", out)
	}
	return at, nil
}
