package condition

import (
	"context"
	"fmt"
	"reflect"
	"runtime"

	"github.com/canaryd/canaryd/api"
)

// InlineSteps is the most steps (see MaxStepsPerValue) an evaluation may be
// bounded by to run on its caller's goroutine. Almost every evaluation is
// far below it: a condition over a vector of a few series takes tens of
// steps, a microsecond or less, and handing it to another goroutine would
// cost more than it does.
const InlineSteps = 10_000

// evaluators bounds the evaluations that run on a goroutine of their own:
// as many at once as the process has processors, for the whole process. The
// cost bound already makes every evaluation cheap; the pool is defence in
// depth, so that no number of measurements judged at once can take more
// than the processors' worth of CPU for conditions.
var evaluators = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// beforeEvaluation is called on the evaluating goroutine before it
// evaluates; tests make it block.
var beforeEvaluation = func() {}

// JudgeContext is Judge, waited for with ctx: an evaluation whose bound for
// this result is above InlineSteps runs on the process' bounded pool of
// evaluators, and JudgeContext returns when it is done or when ctx is,
// whichever comes first, so that a measurement stopped or past its deadline
// answers at once whatever its conditions are doing. An evaluation left
// behind goes on to its end, within its bound, holding its place in the
// pool; it changes nothing once its caller has gone. When ctx ends first
// the phase is Error and the error wraps ctx.Err().
func (c *Conditions) JudgeContext(ctx context.Context, result any) (api.Phase, error) {
	if c == nil {
		return api.PhaseSuccessful, nil
	}
	if err := ctx.Err(); err != nil {
		return api.PhaseError, fmt.Errorf("the conditions were not evaluated: the measurement was stopped (%w)", err)
	}
	if c.inline(result) {
		return c.Judge(result)
	}
	select {
	case evaluators <- struct{}{}:
	case <-ctx.Done():
		return api.PhaseError, fmt.Errorf("the conditions were not evaluated: the measurement was stopped while it waited for an evaluator (%w)", ctx.Err())
	}
	type judged struct {
		phase api.Phase
		err   error
	}
	done := make(chan judged, 1)
	go func() {
		defer func() { <-evaluators }()
		beforeEvaluation()
		phase, err := c.Judge(result)
		done <- judged{phase, err}
	}()
	select {
	case j := <-done:
		return j.phase, j.err
	case <-ctx.Done():
		return api.PhaseError, fmt.Errorf("the measurement was stopped while its conditions were evaluated (%w)", ctx.Err())
	}
}

// inline reports whether both conditions are bounded, for a result of
// result's length, by InlineSteps together.
func (c *Conditions) inline(result any) bool {
	n := resultLength(result)
	steps := 0.0
	for _, cc := range []*compiled{c.success, c.failure} {
		if cc == nil {
			continue
		}
		if !cc.known {
			return false
		}
		steps += cc.cost.At(n)
	}
	return steps <= InlineSteps
}

// resultLength is the n of the cost bound for a result: its length when it
// is a list or an object, 1 otherwise.
func resultLength(result any) int {
	if v, ok := result.([]float64); ok && v != nil {
		// The Prometheus provider's vectors, without reflection.
		return len(v)
	}
	v := reflect.ValueOf(valueFromPointer(result))
	switch v.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return v.Len()
	}
	return 1
}
