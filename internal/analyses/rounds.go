package analyses

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	if !s.take() {
		return nil, false
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			s.give()
		}
	}, true
}

// take takes a slot, and reports false when every one is taken; the
// caller gives it back once (give). A round does, where a gate holds
// acquire's release.
func (s *roundSlots) take() bool {
	if s.n.Add(1) > s.max {
		s.n.Add(-1)
		return false
	}
	return true
}

func (s *roundSlots) give() { s.n.Add(-1) }

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

// Evaluate takes one round of plan now (see analysis.Evaluate), counts
// its measurements, keeps it, and answers with it: it calls answer once,
// with the round and whether it was kept. It fails with ErrDraining while
// the service shuts down, and with ErrTooManyRounds when MaxRounds rounds
// and gates are being answered, and then calls nothing.
//
// The engine runs on the calling goroutine: a round's one measurement
// costs no goroutine of its own. Its answer still comes by the deadline
// whatever the round's measurements and conditions are doing: when the
// engine has not come back stopGrace after ctx is done, answer is called
// at once on another goroutine, with an Error round (unfinished) and late
// set, while the caller goes on waiting for the engine, which holds its
// round's slot until it comes back (watchRound). Evaluate returns once
// answer has returned and the engine has come back; answer must then not
// wait for Evaluate's caller.
//
// The round is kept as a finished analysis under its id, with so.Kind
// KindRound (kept.go): kept says whether it could be within the bounds of
// what is held.
//
// The service writes no log line of a round: a round is one request, and
// the caller's line of it (the HTTP access log) tells its id, phase,
// message, series and whether it was kept, so that a round costs one
// write to the log rather than two.
func (a *Analyses) Evaluate(ctx context.Context, plan *analysis.Plan, so StartOptions, answer func(result api.Analysis, kept, late bool)) error {
	if a.Draining() {
		return ErrDraining
	}
	if !a.rounds.take() {
		return ErrTooManyRounds
	}
	// An analysis' id: the round is kept as one, and with memory: its
	// epoch says when a restart took it.
	so.Kind = api.KindRound
	so.Args = RedactArgs(so.Args)
	w := &roundWatch{a: a, ctx: ctx, plan: plan, so: so, answer: answer}
	w.opts = analysis.Options{ID: newID(a.epoch), Clock: a.clock, Template: so.Template, Args: so.Args, Kind: so.Kind, Series: so.Series}
	watcher, watches := ctx.(DoneWatcher)
	var stop func() bool
	if watches {
		watcher.AfterDone(w.watch)
	} else {
		stop = context.AfterFunc(ctx, w.watch)
	}
	result := analysis.Evaluate(ctx, plan, w.opts)
	a.rounds.give()
	stopped := watches && watcher.StopAfterDone() || !watches && stop()
	if !stopped && !w.engineBack() {
		return nil // answered by the watch
	}
	a.answerRound(plan, so, result, answer, false)
	return nil
}

// DoneWatcher is a context that calls a function once it is done, as
// context.AfterFunc does, without a context of its own for it: a round's
// context may be one (internal/server's is), which Evaluate's watch then
// uses. AfterDone has f called on a goroutine of its own once the context
// is done, at once if it is; StopAfterDone stops that call, and reports
// whether it did before the call began. Each is called once.
type DoneWatcher interface {
	context.Context
	AfterDone(f func())
	StopAfterDone() bool
}

// answerRound counts the measurements of a round's result, keeps it, and
// calls answer with it.
func (a *Analyses) answerRound(plan *analysis.Plan, so StartOptions, result api.Analysis, answer func(api.Analysis, bool, bool), late bool) {
	for _, m := range result.MetricResults {
		for _, ms := range m.Measurements {
			a.metrics.measurements.inc(ms.Phase)
		}
	}
	a.metrics.evaluations.inc(result.Phase)
	answer(result, a.keepRound(plan, so, result), late)
}

// roundWatch decides who answers a round whose context is done: the
// engine, if it comes back within stopGrace, or the watch. It is made for
// every round, but only a round whose context ends before its engine comes
// back (its deadline, or its caller gone) starts a watch, on a goroutine of
// context.AfterFunc's.
type roundWatch struct {
	mu       sync.Mutex
	answered bool
	// back ends the watch's wait when the engine comes back first.
	back chan struct{}

	// The round, as the watch answers it.
	a      *Analyses
	ctx    context.Context
	plan   *analysis.Plan
	so     StartOptions
	opts   analysis.Options
	answer func(result api.Analysis, kept, late bool)
}

// watch is called once the round's context has ended: it answers the
// round as it stands unless the engine comes back within stopGrace.
func (w *roundWatch) watch() {
	if w.wait() {
		w.a.answerRound(w.plan, w.so, unfinished(w.plan, w.opts, w.ctx.Err()), w.answer, true)
		w.mu.Unlock()
	}
}

// wait waits stopGrace for the engine, and reports whether it has not
// come back: the watch answers then, and holds mu until it has.
func (w *roundWatch) wait() bool {
	w.mu.Lock()
	if w.answered {
		w.mu.Unlock()
		return false
	}
	w.back = make(chan struct{})
	w.mu.Unlock()
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-w.back:
		return false
	case <-grace.C:
	}
	w.mu.Lock()
	if w.answered {
		w.mu.Unlock()
		return false
	}
	w.answered = true
	return true
}

// engineBack reports whether the engine, back after its context ended,
// answers: false when the watch has answered already (engineBack then
// returns once it has).
func (w *roundWatch) engineBack() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.answered {
		return false
	}
	w.answered = true
	if w.back != nil {
		close(w.back)
	}
	return true
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
