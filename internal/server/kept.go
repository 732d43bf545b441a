package server

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/store"
)

// Rounds are kept.
//
// A round (the evaluate endpoints) is answered at once, and then held as
// a finished analysis under the id it answered with, as an analysis that
// has just finished is: GET /v1/analyses/{id} has it, its HTML report
// too, and the list shows it (kind "round", with its series). It counts
// against the same bounds (--max-finished, --max-retained-bytes,
// --retention), and it is evicted by the same rule: never one finished
// less than --min-retention ago. When none can be evicted for it the round
// is answered all the same, without a Location, and not kept: the bounds
// protect what others have not read yet, and a verdict is never refused
// for the history's sake.
//
// With a store the round is written there too, as a finished analysis
// (Create with its final state), by a writer of its own (roundWriter), so
// that a slow or absent store never holds up a verdict: any replica then
// answers for it, and the store's retention removes it with the others.

// maxQueuedRounds bounds the rounds waiting to be written to the store; a
// round beyond it is held here only (and logged).
const maxQueuedRounds = 1024

// keepRound holds the finished round result of plan as a finished
// analysis, and queues it for the store; it reports whether it did.
func (a *Analyses) keepRound(plan *analysis.Plan, so StartOptions, result api.Analysis) bool {
	if result.CompletedAt == nil || result.StartedAt == nil || plan.CheckResume(&result) != nil {
		// Never so for a round; held as it stands it would read Error.
		return false
	}
	led := newLedger(&a.retained, plan, result.ID, so)
	led.completed(&result)
	a.mu.Lock()
	defer a.mu.Unlock()
	// Counted: what is over the bound now may be evicted for it.
	a.pruneLocked()
	now := a.clock.Now()
	if a.retained.Load() > a.opts.MaxRetainedBytes ||
		(len(a.finished) >= a.opts.MaxFinished && now.Sub(a.finished[0].at) < a.opts.MinRetention) {
		led.release()
		a.metrics.roundsNotKept.Inc()
		return false
	}
	// Complete: the engine's run holds it and runs nothing (a completed
	// Resume), so a round kept reads as any finished analysis.
	engineRun := analysis.Start(context.Background(), plan, analysis.Options{ID: result.ID, Clock: a.clock, Template: so.Template,
		Args: so.Args, Kind: so.Kind, Series: so.Series, Resume: &result})
	log := a.log.With(zap.String("analysis_id", result.ID))
	run := &Run{Run: engineRun, ledger: led, hub: analyses.NewHub(a.opts.StreamBuffer, nil, log), streamWriteTimeout: a.streamWriteTimeout,
		maxStreams: int32(min(a.opts.MaxStreams, math.MaxInt32)), sources: so.Sources, template: so.Template, series: so.Series,
		args: so.Args, startedAt: *result.StartedAt}
	a.byID[result.ID] = run
	a.finished = append(a.finished, finishedRun{run: run, at: now, phase: result.Phase})
	a.pruneLocked()
	if a.roundWriter != nil {
		a.roundWriter.enqueue(a.storedRound(so, result))
	}
	return true
}

// storedRound is what the store keeps of a round: its final state, what
// it ran (the template's name; the posted document, unless it holds
// credentials, which a round does not keep) and the arguments the caller
// gave, those that hold secrets left out.
func (a *Analyses) storedRound(so StartOptions, result api.Analysis) store.NewAnalysis {
	n := store.NewAnalysis{ID: result.ID, Template: so.Template, State: result, Owner: a.owner}
	if !so.Credentials {
		n.Document = so.Document
	}
	for name, v := range so.RawArgs {
		if redact.IsSecretName(name) || redact.Userinfo(v) != v {
			continue
		}
		n.Args = append(n.Args, store.Arg{Name: name, Value: v})
	}
	return n
}

// roundWriter writes the rounds kept here to the store, in the order they
// were kept, on a goroutine of its own: a store that is slow or down holds
// up no round. A write the store does not take is tried again with a
// backoff (storeRetryMin to storeRetryMax) while the rounds after it wait,
// at most maxQueuedRounds of them; beyond that a round is held here only.
type roundWriter struct {
	st  store.Store
	log *zap.Logger

	mu      sync.Mutex
	queue   []store.NewAnalysis
	closed  bool
	dropped int
	wake    chan struct{}
	// stop makes the writer give up what it has not written; done is
	// closed when it has ended.
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newRoundWriter(st store.Store, log *zap.Logger) *roundWriter {
	w := &roundWriter{st: st, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	// Ends when close has been called and the queue is written, or when
	// stop is closed (giveUp).
	go w.loop()
	return w
}

// enqueue queues a round to write.
func (w *roundWriter) enqueue(n store.NewAnalysis) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.queue) >= maxQueuedRounds {
		w.dropped++
		return
	}
	w.queue = append(w.queue, n)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop writes the queue until it is closed and empty, or given up.
func (w *roundWriter) loop() {
	defer close(w.done)
	backoff := storeRetryMin
	for {
		w.mu.Lock()
		dropped := w.dropped
		w.dropped = 0
		if len(w.queue) == 0 && w.closed {
			w.mu.Unlock()
			return
		}
		var next *store.NewAnalysis
		if len(w.queue) > 0 {
			next = &w.queue[0]
		}
		w.mu.Unlock()
		if dropped > 0 {
			w.log.Warn("rounds were not written to the store: more were waiting than it keeps while the store does not answer; they are held on this replica only",
				zap.Int("rounds", dropped))
		}
		if next == nil {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
			continue
		}
		err := w.write(*next)
		if err == nil {
			backoff = storeRetryMin
			w.mu.Lock()
			w.queue = w.queue[1:]
			w.mu.Unlock()
			continue
		}
		w.log.Warn("the store did not take a round; it is kept and tried again", zap.String("analysis_id", next.ID), zap.Error(err),
			zap.Duration("retry_in", backoff))
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-w.stop:
			t.Stop()
			return
		}
		backoff = min(2*backoff, storeRetryMax)
	}
}

// write stores one round; nil when it is stored, or never will be.
func (w *roundWriter) write(n store.NewAnalysis) error {
	ctx := context.Background()
	_, err := w.st.Create(ctx, n)
	var se *store.SecretError
	switch {
	case errors.As(err, &se) && n.Document != nil:
		// The document holds what this store keeps only sealed, and it
		// has no key: the round is kept without it (its report then
		// draws it from its results).
		n.Document = nil
		return w.write(n)
	case errors.Is(err, store.ErrExists):
		return nil
	case errors.As(err, &se), errors.Is(err, store.ErrFull), errors.Is(err, store.ErrClosed):
		w.log.Warn("a round could not be written to the store; it is held on this replica only", zap.String("analysis_id", n.ID), zap.Error(err))
		return nil
	}
	return err
}

// close writes what is queued until ctx is done, then gives it up.
func (w *roundWriter) close(ctx context.Context) {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		w.giveUp()
	}
}

// giveUp stops the writer at once and waits for it.
func (w *roundWriter) giveUp() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	n := len(w.queue)
	w.mu.Unlock()
	if n > 0 {
		w.log.Error("rounds not written to the store: it did not take them before the shutdown grace ran out", zap.Int("rounds", n))
	}
}
