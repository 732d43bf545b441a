package durable

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/store"
)

// Bounds of the writes to a store.
const (
	// RetryMin and RetryMax bound the wait between two tries of a write
	// the store did not take.
	RetryMin = 100 * time.Millisecond
	RetryMax = 5 * time.Second
	// MaxQueuedRounds bounds the rounds waiting to be written to the
	// store; a round beyond it is held by its replica only (and logged).
	MaxQueuedRounds = 1024
)

// RoundWriter writes the rounds a replica keeps to the store, in the order
// they were kept, on a goroutine of its own: a store that is slow or down
// holds up no round. A write the store does not take is tried again with a
// backoff (RetryMin to RetryMax) while the rounds after it wait, at most
// MaxQueuedRounds of them; beyond that a round is held by its replica only.
type RoundWriter struct {
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

// NewRoundWriter starts the writer of rounds to st; Close or GiveUp ends
// it.
func NewRoundWriter(st store.Store, log *zap.Logger) *RoundWriter {
	w := &RoundWriter{st: st, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	// Ends when close has been called and the queue is written, or when
	// stop is closed (GiveUp).
	go w.loop()
	return w
}

// Enqueue queues a round to write.
func (w *RoundWriter) Enqueue(n store.NewAnalysis) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.queue) >= MaxQueuedRounds {
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
func (w *RoundWriter) loop() {
	defer close(w.done)
	backoff := RetryMin
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
			backoff = RetryMin
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
		backoff = min(2*backoff, RetryMax)
	}
}

// write stores one round; nil when it is stored, or never will be.
func (w *RoundWriter) write(n store.NewAnalysis) error {
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

// Close writes what is queued until ctx is done, then gives it up.
func (w *RoundWriter) Close(ctx context.Context) {
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
		w.GiveUp()
	}
}

// GiveUp stops the writer at once and waits for it.
func (w *RoundWriter) GiveUp() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	n := len(w.queue)
	w.mu.Unlock()
	if n > 0 {
		w.log.Error("rounds not written to the store: it did not take them before the shutdown grace ran out", zap.Int("rounds", n))
	}
}
