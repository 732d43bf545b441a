package durable

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// The writer of a run. Every analysis a replica runs is kept in the store
// as it runs: Create before the run starts (what was asked for, and the
// lease of this replica), then each step in one transaction
// (store.Store.Commit): the webhook events it now owes, the measurements
// that finished, the state they led to, and the webhook events done, up to
// the final state. canaryd serve's store groups the steps of all the runs
// of a replica into one transaction per short interval (store.Grouped): a
// writer's Commit waits, on the writer's own goroutine, for its batch, and
// is told its own step's outcome. Every write carries the run's lease,
// which the Keeper's renew loop extends every LeaseTTL/3.
//
// The writes are made by a Writer per run, never on the run's goroutine: a
// store that is slow or down does not hold the analysis up. What the
// writer could not write yet stays in memory, at most
// MaxUnsavedMeasurements measurements a run (the newest; the state saved
// holds the run's retained measurements whatever), and is written when the
// store answers again, retried with a backoff from RetryMin to RetryMax. A
// write refused with store.ErrLeaseLost (another replica claimed the
// analysis), or a renewal that no longer returns the lease, stops the run
// here at once: nothing more is written, sent or shown from this replica,
// the store's copy is the analysis.

// Bounds of a run's writes to a store.
const (
	// MaxUnsavedMeasurements bounds the measurements a run keeps to
	// write while the store does not answer.
	MaxUnsavedMeasurements = 1000
	// StoreTimeout is the longest one call to the store takes: the
	// store a Keeper is given bounds each (store.Metered, which canaryd
	// serve wraps it in), and the waits for its last writes at shutdown
	// allow it.
	StoreTimeout = store.DefaultOperationTimeout
)

// LeaseLostMessage ends a run this replica no longer holds, locally: the
// replica that claimed it goes on with it.
const LeaseLostMessage = "this replica lost the analysis' lease: another replica runs it now"

// Run is what a writer needs of the run it writes: the engine's run, as
// the service holds it.
type Run interface {
	ID() string
	// Snapshot is the analysis as it stands.
	Snapshot() api.Analysis
	// Abort ends the run in Error with message; Terminate ends it as
	// asked; Suspend stops it without ending the analysis.
	Abort(message string)
	Terminate()
	Suspend(message string)
}

// State is where a run's writer stands. It starts Running; a hand-over
// (Keeper.HandOver) makes it HandingOver, and the run's end then
// HandedOver; the final state written makes it Final; and from any state,
// a lease another replica claimed (or one handed back) makes it Lost.
type State int

const (
	// Running: the writer writes what the run measures, and its end.
	Running State = iota
	// HandingOver: the run is being stopped to be handed over; its end
	// here is not the analysis', which goes on where it stood.
	HandingOver
	// HandedOver: the run has stopped to be handed over; what it
	// measured is written, then its lease released.
	HandedOver
	// Lost: another replica holds the analysis, or this one handed its
	// lease back before running it; nothing more is written or sent.
	Lost
	// Final: the analysis' final state is written; the writer ends once
	// its webhook has.
	Final
)

// handing says the run is being, or has been, stopped to be handed over.
func (s State) handing() bool { return s == HandingOver || s == HandedOver }

// String names the state, for logs and tests.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case HandingOver:
		return "handing over"
	case HandedOver:
		return "handed over"
	case Lost:
		return "lost"
	case Final:
		return "final"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Writer writes one run's measurements, state and webhook deliveries to
// the store, under the run's lease. It is the outbox of the run's webhook
// stream (webhook.Outbox: Owe, Recorded, Done).
type Writer struct {
	k     *Keeper
	log   *zap.Logger
	run   Run // set before the run's first event can be handled
	ready chan struct{}

	mu sync.Mutex
	// state is where the writer stands.
	state   State
	lease   store.Lease
	pending []store.Measurement
	dropped int
	dirty   bool
	final   *api.Analysis
	counts  map[string]int
	wake    chan struct{}
	done    chan struct{}
	// stored is closed once the writer has no more to do for the run's
	// end: its final state is written, or the run is no longer this
	// replica's, or the writer gave up (Stored).
	stored   chan struct{}
	settled  bool
	stopping bool
	// The webhook's deliveries: those to record as owed, those done, the
	// ids recorded and the deliveries waiting for theirs to be
	// (Recorded), and whether the webhook's stream is still delivering.
	owed       []store.Delivery
	marks      []string
	recorded   map[string]bool
	waiters    map[string]chan struct{}
	hookOpen   bool
	terminated bool
}

func newWriter(k *Keeper, lease store.Lease, log *zap.Logger) *Writer {
	return &Writer{k: k, log: log, lease: lease, counts: map[string]int{},
		ready: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}), stored: make(chan struct{}),
		recorded: map[string]bool{}, waiters: map[string]chan struct{}{}}
}

// State is where the writer stands.
func (w *Writer) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// Stored is closed once the writer has no more to do for the run's end:
// its final state is written, or the run is no longer this replica's, or
// the writer gave up.
func (w *Writer) Stored() <-chan struct{} { return w.stored }

// HookOpen says the run has a webhook stream, whose end the writer waits
// for (HookEnded) before it ends; call it before the run starts.
func (w *Writer) HookOpen() {
	w.mu.Lock()
	w.hookOpen = true
	w.mu.Unlock()
}

// MarkRecorded says the events of these webhook ids are recorded as owed
// already (a resumed run's).
func (w *Writer) MarkRecorded(webhookIDs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range webhookIDs {
		w.recorded[id] = true
	}
}

// start begins writing for run.
func (w *Writer) start(run Run) {
	w.run = run
	close(w.ready)
}

// Observe takes an event of the run, on the run's goroutine: it only
// queues. It reports false when the run is no longer this replica's, so
// that the event goes nowhere else either.
func (w *Writer) Observe(ev api.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == Lost {
		return false
	}
	switch ev.Type {
	case api.EventMeasurement:
		i := w.counts[ev.Metric]
		w.counts[ev.Metric] = i + 1
		if len(w.pending) == MaxUnsavedMeasurements {
			w.pending = w.pending[1:]
			w.dropped++
		}
		w.pending = append(w.pending, store.Measurement{Metric: ev.Metric, Index: i, Measurement: *ev.Measurement})
		w.dirty = true
	case api.EventCompleted:
		if w.state.handing() {
			// Stopped to be handed over: what it measured is
			// written, its end here is not.
			w.state = HandedOver
			w.signalLocked()
			return false
		}
		final := *ev.Analysis
		w.final = &final
		w.dirty = true
	}
	w.signalLocked()
	return true
}

// loseLease stops the run here: nothing more is written or sent.
func (w *Writer) loseLease() {
	w.mu.Lock()
	if w.state == Lost {
		w.mu.Unlock()
		return
	}
	w.state = Lost
	w.settleLocked()
	w.pending, w.owed, w.marks = nil, nil, nil
	for id, c := range w.waiters {
		close(c)
		delete(w.waiters, id)
	}
	w.mu.Unlock()
	if f := w.k.opts.OnLeaseLost; f != nil {
		f()
	}
	w.log.Warn("analysis stopped here: " + LeaseLostMessage)
	<-w.ready
	w.run.Abort(LeaseLostMessage)
	w.signal()
}

// NotStarted records in the store that the analysis created there did not
// start after all (err says why), so that no replica adopts it.
func (w *Writer) NotStarted(err error) {
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	now := w.k.opts.Clock.Now()
	state := api.Analysis{ID: lease.ID, Phase: api.PhaseError, StartedAt: &now, CompletedAt: &now, Message: "not started: " + err.Error(),
		MetricResults: []api.MetricResult{}}
	go func() {
		ctx := context.Background()
		if err := w.k.st.SaveState(ctx, lease, state); err != nil {
			w.log.Warn("could not record in the store that the analysis did not start", zap.Error(err))
		}
	}()
}

// terminate terminates the run, once: a replica asked for it through the
// store.
func (w *Writer) terminate() {
	w.mu.Lock()
	asked := w.terminated
	w.terminated = true
	w.mu.Unlock()
	if asked {
		return
	}
	<-w.ready
	w.log.Info("analysis terminated by request to another replica")
	w.run.Terminate()
}

// renewed updates the lease's expiry after a renewal.
func (w *Writer) renewed(l store.Lease) {
	w.mu.Lock()
	if l.Token == w.lease.Token {
		w.lease = l
	}
	w.mu.Unlock()
}

// currentLease is the lease the writer writes under.
func (w *Writer) currentLease() store.Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lease
}

// loop writes what is queued until the run's final state is written, the
// lease is lost, or stop gives up.
func (w *Writer) loop() {
	defer close(w.done)
	defer func() {
		w.mu.Lock()
		w.settleLocked()
		w.mu.Unlock()
	}()
	backoff := RetryMin
	for {
		<-w.wake
		for {
			finished, err := w.flush()
			if finished {
				return
			}
			if err == nil {
				backoff = RetryMin
				break
			}
			w.log.Warn("the store did not take the analysis' writes; they are kept and tried again", zap.Error(err), zap.Duration("retry_in", backoff))
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-w.wake:
				t.Stop()
			}
			w.mu.Lock()
			stopping := w.stopping
			w.mu.Unlock()
			if stopping {
				w.log.Error("the analysis' last writes were given up: the store did not take them before the shutdown grace ran out")
				return
			}
			backoff = min(2*backoff, RetryMax)
		}
	}
}

// flush writes what is queued. finished says the loop is over: the final
// state is written, or the lease was lost.
func (w *Writer) flush() (finished bool, err error) {
	w.mu.Lock()
	if w.state == Lost {
		w.mu.Unlock()
		return true, nil
	}
	if !w.dirty {
		defer w.mu.Unlock()
		return w.endedLocked(), nil
	}
	lease, pending, final, dropped := w.lease, w.pending, w.final, w.dropped
	owed, marks, handing := w.owed, w.marks, w.state.handing()
	w.dirty, w.dropped = false, 0
	w.mu.Unlock()
	if dropped > 0 {
		w.log.Warn("measurements were not stored: the store did not answer for longer than the run keeps them", zap.Int("dropped", dropped))
	}

	state := final
	if state == nil {
		s := w.run.Snapshot()
		if handing && s.CompletedAt != nil {
			// Stopped here to be handed over: its end here is not
			// the analysis', which goes on where it stood.
			s.Phase, s.Message, s.CompletedAt = api.PhaseRunning, "", nil
		}
		state = &s
	}
	enqueued, written, marked, err := w.write(lease, batch{owed: owed, pending: pending, state: state, final: final != nil, marks: marks})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.settleWrittenLocked(enqueued, marked)
	if err == nil && final != nil && w.state == Running {
		w.state = Final
		w.settleLocked()
	}
	// What was written leaves the queue; what came since stays.
	if written > 0 {
		w.pending = dropWritten(w.pending, pending[:written])
	}
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		go w.loseLease()
		return true, nil
	case err != nil:
		w.dirty = true
		return false, err
	}
	return w.endedLocked(), nil
}

// settleWrittenLocked takes the first enqueued owed events and marked
// events done off their queues, which were only appended to meanwhile, and
// lets the deliveries waiting for the events recorded go. w.mu is held.
func (w *Writer) settleWrittenLocked(enqueued, marked int) {
	if w.state == Lost {
		return
	}
	for _, d := range w.owed[:enqueued] {
		w.recorded[d.WebhookID] = true
		if c, ok := w.waiters[d.WebhookID]; ok {
			close(c)
			delete(w.waiters, d.WebhookID)
		}
	}
	w.owed = w.owed[enqueued:]
	for _, id := range w.marks[:marked] {
		delete(w.recorded, id)
	}
	w.marks = w.marks[marked:]
}

// batch is what one flush writes: the webhook events owed, the
// measurements, the state they led to (final when it is the analysis'
// end), and the webhook events done.
type batch struct {
	owed    []store.Delivery
	pending []store.Measurement
	state   *api.Analysis
	final   bool
	marks   []string
}

// write commits b under lease, in one transaction (store.Store.Commit):
// an event is recorded as owed at the latest with its measurement and the
// state it led to, so that a replica that resumes the analysis delivers
// it. It says how many of b's owed events, measurements and marks were
// written: all of them, or none.
func (w *Writer) write(lease store.Lease, b batch) (enqueued, written, marked int, err error) {
	m := store.Mutation{Owed: b.owed, Measurements: b.pending, Delivered: b.marks}
	// The state goes with the measurements it counts, at the end, or
	// alone; events done alone leave it as it is.
	if len(b.pending) > 0 || b.final || (len(b.owed) == 0 && len(b.marks) == 0) {
		m.State = b.state
	}
	ctx := context.Background()
	if err := w.k.st.Commit(ctx, lease, m); err != nil {
		return 0, 0, 0, err
	}
	return len(b.owed), len(b.pending), len(b.marks), nil
}

// settleLocked closes stored, once. w.mu is held.
func (w *Writer) settleLocked() {
	if !w.settled {
		w.settled = true
		close(w.stored)
	}
}

// endedLocked says whether the writer has nothing left to do: the run
// was handed over, or its final state is written and its webhook has
// ended; and nothing is queued.
func (w *Writer) endedLocked() bool {
	if w.dirty || len(w.pending) > 0 || len(w.owed) > 0 || len(w.marks) > 0 {
		return false
	}
	return w.state == HandedOver || (w.state == Final && !w.hookOpen)
}

// Owe records that the event whose body is body (as the webhook's stream
// sends it: a replica that sends it again sends the same bytes) is owed
// to the webhook as webhookID. The stream's Send calls it on the run's
// goroutine, in the order of the events: it only queues, and the event is
// committed with the step that led to it at the latest.
func (w *Writer) Owe(webhookID string, body []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == Lost {
		return
	}
	w.owed = append(w.owed, store.Delivery{WebhookID: webhookID, Seq: seqOf(webhookID), Event: body})
	w.dirty = true
	w.signalLocked()
}

// seqOf is the number that ends a webhook-id, "<analysisID>.<n>".
func seqOf(webhookID string) int64 {
	n, _ := strconv.ParseInt(webhookID[strings.LastIndexByte(webhookID, '.')+1:], 10, 64)
	return n
}

// Recorded waits, on the webhook stream's goroutine, until the event
// is recorded as owed, and says whether the stream may send it: not when
// this replica lost the analysis (the replica that has it now sends what
// it owes), nor when ctx ends first (the shutdown). It waits as long as the
// store takes: an event sent before it is recorded could be made again by
// the replica that takes the analysis over, under its webhook-id, with
// another body (the end of a run that replica finished itself).
func (w *Writer) Recorded(ctx context.Context, webhookID string) bool {
	w.mu.Lock()
	if w.state == Lost || w.recorded[webhookID] {
		defer w.mu.Unlock()
		return w.state != Lost
	}
	c, ok := w.waiters[webhookID]
	if !ok {
		c = make(chan struct{})
		w.waiters[webhookID] = c
	}
	w.mu.Unlock()
	select {
	case <-c:
	case <-ctx.Done():
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state != Lost
}

// Done records that a webhook event is done; it only queues.
func (w *Writer) Done(webhookID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == Lost {
		return
	}
	w.marks = append(w.marks, webhookID)
	w.dirty = true
	w.signalLocked()
}

// HookEnded says the webhook's stream has ended.
func (w *Writer) HookEnded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hookOpen = false
	w.signalLocked()
}

func (w *Writer) signalLocked() { w.signal() }

// signal wakes the writer's loop, if it is not awake already.
func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// handOver makes the run's end here a hand-over: call it before stopping
// the run. The writer then writes what was measured, and ends. It says
// whether the run was running (not ended, nor ending, here).
func (w *Writer) handOver() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != Running || w.final != nil {
		return false
	}
	w.state = HandingOver
	return true
}

// handedOver reports whether the writer ended by a hand-over with
// everything written, its lease still held.
func (w *Writer) handedOver() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == HandedOver && len(w.pending) == 0 && !w.dirty
}

// dropWritten removes from q the measurements in written.
func dropWritten(q, written []store.Measurement) []store.Measurement {
	type key struct {
		metric string
		index  int
	}
	done := make(map[key]bool, len(written))
	for _, m := range written {
		done[key{m.Metric, m.Index}] = true
	}
	out := q[:0]
	for _, m := range q {
		if !done[key{m.Metric, m.Index}] {
			out = append(out, m)
		}
	}
	return out
}

// stop makes the writer give up retrying once the store fails again; it
// still writes what it can.
func (w *Writer) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.signal()
}

// release hands the writer's lease back; it writes nothing more.
func (w *Writer) release() {
	w.mu.Lock()
	w.state = Lost
	lease := w.lease
	w.mu.Unlock()
	w.k.releaseLease(lease)
}

// endUnresumable ends a claimed analysis that cannot be resumed in Error.
func (w *Writer) endUnresumable(state api.Analysis, message string) {
	now := w.k.opts.Clock.Now()
	state.Phase, state.Message, state.CompletedAt = api.PhaseError, message, &now
	if state.MetricResults == nil {
		state.MetricResults = []api.MetricResult{}
	}
	lease := w.currentLease()
	ctx := context.Background()
	if err := w.k.st.SaveState(ctx, lease, state); err != nil {
		w.log.Warn("could not end the analysis in the store", zap.Error(err))
	}
}

// pendingCount is how many measurements the writer has yet to write.
func (w *Writer) pendingCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
