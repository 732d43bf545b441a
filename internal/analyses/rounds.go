package analyses

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/limits"
)

// Rounds and gates: work a caller waits for.
//
// A round (the evaluate endpoints) and a gate hold their request open
// while they run, so they are bounded twice: at most MaxRounds at once
// (a gate's analysis counts against --max-analyses as well), and each
// answers by its deadline whatever its measurements and conditions are
// doing. canaryd never waits on the engine without a bound: a round that
// has not come back stopGrace after its deadline is answered as an Error
// round at once, and a run that does not stop within StopTimeout of being
// told to (DELETE, a gate's deadline, shutdown) is answered as it stands.
// The work left behind still counts against its limit until it has
// stopped, so that abandoned work cannot pile up beyond it.

// TimeoutHeader is the request header in which a caller may give its
// deadline, in seconds ("8", "7.5") or as a Go duration ("8s"), as it may
// with the query parameter ?timeout=. It is read by the evaluate and gate
// endpoints. Unprefixed, as RFC 6648 asks of new headers; Argo Rollouts'
// web provider and Spinnaker's webhook stage can both send it.
const TimeoutHeader = "Request-Timeout"

// DefaultMaxRounds is AnalysesOptions.MaxRounds when it is 0: rounds and
// gates answered at once (limits.MaxRounds).
const DefaultMaxRounds = limits.MaxRounds

// ErrTooManyRounds is the error of Analyses.Evaluate and Analyses.AcquireRound
// at the limit of rounds and gates answered at once.
var ErrTooManyRounds = errors.New("too many rounds and gates at once")

// stopGrace is how long after its deadline a round waits for the engine to
// hand over what it has measured. The engine stops at the deadline (its
// sources and conditions honour the context); this bounds the answer
// should one of them not.
const stopGrace = 100 * time.Millisecond

// StopTimeout bounds a wait for a run told to stop (DELETE, a gate's
// deadline, the end of the shutdown grace) to finish: a terminated run
// cancels its queries and is done within milliseconds, and this bounds
// the answer should a measurement or condition not return.
const StopTimeout = 3 * time.Second

// roundSlots counts the rounds and gates under way, up to max.
type roundSlots struct {
	n   atomic.Int64
	max int64
}

// acquire takes a slot, and returns false when every one is taken.
func (s *roundSlots) acquire() (release func(), ok bool) {
	if s.n.Add(1) > s.max {
		s.n.Add(-1)
		return nil, false
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			s.n.Add(-1)
		}
	}, true
}

// AcquireRound takes one of the MaxRounds slots for a gate, which holds
// it until release; it fails with ErrTooManyRounds when every slot is
// taken. Evaluate takes its own.
func (a *Analyses) AcquireRound() (release func(), err error) {
	release, ok := a.rounds.acquire()
	if !ok {
		return nil, ErrTooManyRounds
	}
	return release, nil
}

// Evaluate takes one round of plan now (see analysis.Evaluate) and counts
// its measurements. It fails with ErrDraining while the service shuts
// down, and with ErrTooManyRounds when MaxRounds rounds and gates are
// being answered. It returns at the latest stopGrace after ctx is done,
// whatever the round's measurements and conditions are doing: a round
// not finished by then is an Error round (see evaluateBounded).
//
// The round is kept as a finished analysis under its id, with so.Kind
// KindRound (kept.go): kept says whether it could be within the bounds of
// what is held.
//
// The service writes no log line of a round: a round is one request, and
// the caller's line of it (the HTTP access log) tells its id, phase,
// message, series and whether it was kept, so that a round costs one
// write to the log rather than two.
func (a *Analyses) Evaluate(ctx context.Context, plan *analysis.Plan, so StartOptions) (result api.Analysis, kept bool, err error) {
	if a.Draining() {
		return api.Analysis{}, false, ErrDraining
	}
	release, ok := a.rounds.acquire()
	if !ok {
		return api.Analysis{}, false, ErrTooManyRounds
	}
	// An analysis' id: the round is kept as one, and with memory: its
	// epoch says when a restart took it.
	id := a.epoch + NewID()
	so.Kind = api.KindRound
	so.Args = RedactArgs(so.Args)
	result = evaluateBounded(ctx, plan, analysis.Options{ID: id, Clock: a.clock, Template: so.Template, Args: so.Args,
		Kind: so.Kind, Series: so.Series}, release)
	for _, m := range result.MetricResults {
		for _, ms := range m.Measurements {
			a.metrics.measurements.WithLabelValues(string(ms.Phase)).Inc()
		}
	}
	a.metrics.evaluations.WithLabelValues(string(result.Phase)).Inc()
	kept = a.keepRound(plan, so, result)
	return result, kept, nil
}

// evaluateBounded runs the engine's round on a goroutine of its own and
// waits for it until ctx is done and stopGrace after; then it answers with
// unfinished (every metric an Error saying why) and leaves the engine to
// finish on its own, holding release until it has.
func evaluateBounded(ctx context.Context, plan *analysis.Plan, opts analysis.Options, release func()) api.Analysis {
	done := make(chan api.Analysis, 1)
	// Ends when the engine's round does: its sources and conditions
	// honour ctx, which the caller cancels when it returns.
	go func() {
		defer release()
		done <- analysis.Evaluate(ctx, plan, opts)
	}()
	select {
	case result := <-done:
		return result
	case <-ctx.Done():
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case result := <-done:
		return result
	case <-grace.C:
		return unfinished(plan, opts, ctx.Err())
	}
}

// unfinished is the round of plan as it stands when its deadline passed
// with the engine still at work: every metric an Error with a measurement
// that says so, judged as the engine judges a round (dry-run metrics and
// scoring included), as no measurement came back.
func unfinished(plan *analysis.Plan, opts analysis.Options, cause error) api.Analysis {
	err := errors.New("deadline exceeded: the round had not been evaluated when its deadline passed (set it with ?timeout= or the " +
		TimeoutHeader + " header, below the caller's own timeout)")
	if !errors.Is(cause, context.DeadlineExceeded) {
		err = fmt.Errorf("the round was stopped before it was evaluated: %w", cause)
	}
	p := plan.Copy()
	for i := range p.Metrics {
		p.Metrics[i].Source = analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Err: err}
		})
	}
	// Every source fails at once: the engine judges nothing.
	return analysis.Evaluate(context.Background(), p, opts)
}

// WaitStopped waits for run to finish, at most StopTimeout or until ctx is
// done, and reports whether it has.
func WaitStopped(ctx context.Context, run *Run) bool {
	t := time.NewTimer(StopTimeout)
	defer t.Stop()
	select {
	case <-run.Done():
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-run.Done():
		return true
	default:
		return false
	}
}
