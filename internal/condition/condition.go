package condition

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/expr-lang/expr/vm"

	"github.com/canaryd/canaryd/api"
)

// Field names used in errors; they are the AnalysisTemplate field names so
// that messages read exactly as Argo's.
const (
	successField = "successCondition"
	failureField = "failureCondition"
)

// Conditions is a metric's compiled successCondition and failureCondition.
// It is safe for concurrent use. A nil *Conditions has no conditions, so
// every measurement is Successful, as in Argo.
type Conditions struct {
	success *compiled
	failure *compiled
}

// compiled is one condition. Argo compiles the condition against the
// measured value on every evaluation, and expr types `result` by that
// value's concrete Go type, so the type decides which expressions compile and
// what the errors say. To give the same answers without paying for a compile
// per measurement, programs are kept per concrete type of result.
type compiled struct {
	field string
	text  string
	// programs maps the reflect.Type of the dereferenced result (nil for a
	// nil result) to a *typedProgram. Result types are few (a provider yields
	// one or two shapes), so it never grows large.
	programs sync.Map
	// shared, when set, compiles the programs: other Conditions of the
	// same text share them (see Programs).
	shared *Programs
	// cost bounds an evaluation's work (see checkCost); known is false
	// for conditions that were not validated (tests reproducing Argo).
	cost  cost
	known bool
}

// typedProgram caches the compile error too: a condition that cannot compile
// for a type would otherwise be recompiled on every measurement of that type.
type typedProgram struct {
	program *vm.Program
	err     error
	// compare is program as a comparison (fast.go), nil when it is not
	// one.
	compare *comparison
}

// Compile checks both conditions once, when a spec is validated; the
// programs that evaluate them are compiled lazily, once per Go type of the
// measured value (see Judge). Empty strings mean "not set". It reports every
// problem it can know before any value is measured: syntax errors, unknown
// names and expressions whose type can never be bool. It also refuses what
// canaryd will not run although Argo would: a built-in outside the
// allow-list (AllowedBuiltins), a range that is not a small literal one
// (MaxRangeValues), iteration over the result nested in another, and a
// condition whose work may exceed MaxStepsPerValue steps per result value
// plus MaxFixedSteps. Problems that depend on the measured value's type (for
// example comparing a number with a string) are left to Judge, because Argo
// accepts such a spec and errors only when a measurement has that type.
// Field is "successCondition" or "failureCondition"; the caller prefixes the
// metric's path. On any error the returned *Conditions is nil.
//
// Options bound what a condition may be (MaxLength, MaxNodes); without
// them only expr's own node budget applies.
func Compile(success, failure string, opts ...Option) (*Conditions, []api.FieldError) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var errs []api.FieldError
	var costs [2]cost
	for i, f := range []struct{ field, text string }{
		{successField, success},
		{failureField, failure},
	} {
		if f.text == "" {
			continue
		}
		// The length is checked first: a condition over it is not parsed
		// at all, however it would parse.
		if o.maxLength > 0 && len(f.text) > o.maxLength {
			errs = append(errs, api.FieldError{Field: f.field, Message: fmt.Sprintf(
				"the condition is %d bytes long, longer than the %d this canaryd accepts (--max-condition-length)", len(f.text), o.maxLength)})
			continue
		}
		c, err := o.programs.validate(f.text, o.maxNodes)
		if err != nil {
			errs = append(errs, api.FieldError{Field: f.field, Message: err.Error()})
		}
		costs[i] = c
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c := newConditions(success, failure)
	for i, cc := range []*compiled{c.success, c.failure} {
		if cc != nil {
			cc.shared = o.programs
			cc.cost, cc.known = costs[i], true
		}
	}
	return c, nil
}

// Option bounds the conditions Compile accepts.
type Option func(*options)

type options struct {
	maxLength int
	maxNodes  uint
	programs  *Programs
}

// MaxLength refuses a condition longer than n bytes before it is parsed; 0
// means no bound.
func MaxLength(n int) Option { return func(o *options) { o.maxLength = n } }

// MaxNodes refuses a condition whose syntax tree has more than n nodes (expr's
// node budget, which counts while parsing, so that an expression over it
// costs no more than n nodes' work); 0 keeps expr's own budget of 10,000.
func MaxNodes(n uint) Option { return func(o *options) { o.maxNodes = n } }

// newConditions skips validation. Argo itself validates nothing, so tests use
// it to reproduce Argo's answers for conditions that Compile would reject.
func newConditions(success, failure string) *Conditions {
	var c Conditions
	if success != "" {
		c.success = &compiled{field: successField, text: success}
	}
	if failure != "" {
		c.failure = &compiled{field: failureField, text: failure}
	}
	return &c
}

// Success returns the successCondition text, "" when it is not set.
func (c *Conditions) Success() string {
	if c == nil || c.success == nil {
		return ""
	}
	return c.success.text
}

// Failure returns the failureCondition text, "" when it is not set.
func (c *Conditions) Failure() string {
	if c == nil || c.failure == nil {
		return ""
	}
	return c.failure.text
}

// Judge evaluates the conditions against one measured value and returns the
// measurement's phase, following Argo's EvaluateResult. Each condition is
// compiled the first time it meets a result of a given Go type and the
// program is reused for later results of that type. The phase is:
//
//   - neither condition set: Successful;
//   - only successCondition: Successful when true, else Failed;
//   - only failureCondition: Failed when true, else Successful;
//   - both: Failed when failureCondition is true (even if successCondition
//     is too), Successful when only successCondition is true, else
//     Inconclusive.
//
// successCondition is evaluated first and its error stops the evaluation.
// Any error gives api.PhaseError and an error worded as Argo v1.10 words it.
func (c *Conditions) Judge(result any) (api.Phase, error) {
	if c == nil {
		return api.PhaseSuccessful, nil
	}
	var succeeded, failed bool
	if c.success != nil {
		ok, err := c.success.eval(result)
		if err != nil {
			return api.PhaseError, c.success.wrap(err, result)
		}
		succeeded = ok
	}
	if c.failure != nil {
		ok, err := c.failure.eval(result)
		if err != nil {
			return api.PhaseError, c.failure.wrap(err, result)
		}
		failed = ok
	}
	switch {
	case c.success == nil && c.failure == nil:
		return api.PhaseSuccessful, nil
	case c.failure == nil:
		failed = !succeeded
	case c.success == nil:
		succeeded = !failed
	}
	switch {
	case failed:
		return api.PhaseFailed, nil
	case succeeded:
		return api.PhaseSuccessful, nil
	default:
		return api.PhaseInconclusive, nil
	}
}

// Eval compiles condition against result and evaluates it, as Argo's
// EvalCondition does: errors are expr's bare messages, without the
// "could not evaluate" wrapping Judge adds. It compiles on every call, so it
// is meant for tests and tools, not for measurements.
func Eval(condition string, result any) (bool, error) {
	value := valueFromPointer(result)
	program, err := compileTyped(condition, value)
	if err != nil {
		return false, err
	}
	return run(program, result, value)
}

func (c *compiled) eval(result any) (bool, error) {
	value := valueFromPointer(result)
	key := reflect.TypeOf(value)
	p, ok := c.programs.Load(key)
	if !ok {
		// Two goroutines may both compile here; that is harmless and cheaper
		// than holding a lock across a compile. LoadOrStore keeps one.
		p, _ = c.programs.LoadOrStore(key, c.shared.program(c.text, key, value))
	}
	tp := p.(*typedProgram)
	if tp.err != nil {
		return false, tp.err
	}
	if tp.compare != nil {
		if ok, done := tp.compare.eval(value); done {
			return ok, nil
		}
	}
	return run(tp.program, result, value)
}

// wrap words an evaluation error as Argo v1.10 does (with "%s", not %q, so
// quotes inside the condition are not escaped). When there was no data
// Argo replaces the error, whatever it was, with the "nil or empty" text:
// that is what users search for, so it is kept even though it hides the
// original error.
func (c *compiled) wrap(err error, result any) error {
	if isNilOrEmpty(result) {
		return fmt.Errorf("could not evaluate %s \"%s\": metric result is nil or empty: no data returned from the metric provider", c.field, c.text)
	}
	return fmt.Errorf("could not evaluate %s \"%s\": %w", c.field, c.text, err)
}
