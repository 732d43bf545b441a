package analyses

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses/durable"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/webhook"
)

// With a store (AnalysesOptions.Store), every analysis this replica starts
// is kept there as it runs: Create before the run starts (what was asked
// for, and the lease of this replica), then each step in one transaction
// (store.Store.Commit): the webhook events it now owes, the measurements
// that finished, the state they led to, and the webhook events done, up to
// the final state. canaryd serve's store groups the steps of all the runs
// of this replica into one transaction per short interval (store.Grouped):
// a writer's Commit waits, on the writer's own goroutine, for its batch,
// and is told its own step's outcome. Every write carries the run's
// lease, and the renew loop extends the leases this replica holds every
// LeaseTTL/3.
//
// The writes are made by a writer per run (persister), never on the run's
// goroutine: a store that is slow or down does not hold the analysis up.
// What the writer could not write yet stays in memory, at most
// maxUnsavedMeasurements measurements a run (the newest; the state saved
// holds the run's retained measurements whatever), and is written when the
// store answers again, retried with a backoff from storeRetryMin to
// storeRetryMax. A write refused with store.ErrLeaseLost (another replica
// claimed the analysis), or a renewal that no longer returns the lease,
// stops the run here at once: nothing more is written, sent or shown from
// this replica, the store's copy is the analysis.

// Bounds of the writes to a store.
const (
	// maxUnsavedMeasurements bounds the measurements a run keeps to
	// write while the store does not answer.
	maxUnsavedMeasurements = 1000
	// storeRetryMin and storeRetryMax bound the wait between two tries
	// of a write the store did not take.
	storeRetryMin = durable.RetryMin
	storeRetryMax = durable.RetryMax
	// StoreTimeout is the longest one call to the store takes: the
	// store the service is given bounds each (store.Metered, which canaryd
	// serve wraps it in), and the waits for its last writes at shutdown
	// allow it.
	StoreTimeout = store.DefaultOperationTimeout
)

// leaseLostMessage ends a run this replica no longer holds, locally: the
// replica that claimed it goes on with it.
const leaseLostMessage = "this replica lost the analysis' lease: another replica runs it now"

// persister writes one run's measurements and state to the store.
type persister struct {
	a     *Analyses
	st    store.Store
	log   *zap.Logger
	run   *Run // set before the run's first event can be handled
	ready chan struct{}

	mu sync.Mutex
	// state is where the writer stands (writerState).
	state   writerState
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
	// replica's, or the writer gave up (Run.AwaitStored).
	stored   chan struct{}
	settled  bool
	stopping bool
	// The webhook's deliveries (the writer is its stream's outbox):
	// those to record as owed, those done, the ids recorded and the
	// deliveries waiting for theirs to be (Recorded), and whether the
	// webhook's stream is still delivering.
	owed       []store.Delivery
	marks      []string
	recorded   map[string]bool
	waiters    map[string]chan struct{}
	hookOpen   bool
	terminated bool
}

// writerState is where a run's writer stands. It starts running; Drain
// makes it handing over, and the run's end then handed over; the final
// state written makes it final; and from any state, a lease another
// replica claimed (or one handed back) makes it lost.
type writerState int

const (
	// writerRunning writes what the run measures, and its end.
	writerRunning writerState = iota
	// writerHandingOver: the run is being stopped to be handed over
	// (Drain); its end here is not the analysis', which goes on where it
	// stood.
	writerHandingOver
	// writerHandedOver: the run has stopped to be handed over; what it
	// measured is written, then its lease released.
	writerHandedOver
	// writerLost: another replica holds the analysis, or this one handed
	// its lease back before running it; nothing more is written or sent.
	writerLost
	// writerFinal: the analysis' final state is written; the writer ends
	// once its webhook has.
	writerFinal
)

// handing says the run is being, or has been, stopped to be handed over.
func (s writerState) handing() bool { return s == writerHandingOver || s == writerHandedOver }

func newPersister(a *Analyses, lease store.Lease, log *zap.Logger) *persister {
	return &persister{a: a, st: a.opts.Store, log: log, lease: lease, counts: map[string]int{},
		ready: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{}), stored: make(chan struct{}),
		recorded: map[string]bool{}, waiters: map[string]chan struct{}{}}
}

// start begins writing for run.
func (p *persister) start(run *Run) {
	p.run = run
	close(p.ready)
	go func() {
		p.loop()
		p.a.mu.Lock()
		delete(p.a.writers, run.ID())
		p.a.mu.Unlock()
	}()
}

// observe takes an event of the run, on the run's goroutine: it only
// queues. It reports false when the run is no longer this replica's, so
// that the event goes nowhere else either.
func (p *persister) observe(ev api.Event) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == writerLost {
		return false
	}
	switch ev.Type {
	case api.EventMeasurement:
		i := p.counts[ev.Metric]
		p.counts[ev.Metric] = i + 1
		if len(p.pending) == maxUnsavedMeasurements {
			p.pending = p.pending[1:]
			p.dropped++
		}
		p.pending = append(p.pending, store.Measurement{Metric: ev.Metric, Index: i, Measurement: *ev.Measurement})
		p.dirty = true
	case api.EventCompleted:
		if p.state.handing() {
			// Stopped to be handed over: what it measured is
			// written, its end here is not.
			p.state = writerHandedOver
			p.signalLocked()
			return false
		}
		final := *ev.Analysis
		p.final = &final
		p.dirty = true
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// loseLease stops the run here: nothing more is written or sent.
func (p *persister) loseLease() {
	p.mu.Lock()
	if p.state == writerLost {
		p.mu.Unlock()
		return
	}
	p.state = writerLost
	p.settleLocked()
	p.pending, p.owed, p.marks = nil, nil, nil
	for id, w := range p.waiters {
		close(w)
		delete(p.waiters, id)
	}
	p.mu.Unlock()
	if c := p.a.metrics.leaseLosses; c != nil {
		c.Inc()
	}
	p.log.Warn("analysis stopped here: " + leaseLostMessage)
	<-p.ready
	p.run.Abort(leaseLostMessage)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// notStarted records in the store that the analysis created there did not
// start after all (err says why), so that no replica adopts it.
func (p *persister) notStarted(err error) {
	p.mu.Lock()
	lease := p.lease
	p.mu.Unlock()
	now := p.a.clock.Now()
	state := api.Analysis{ID: lease.ID, Phase: api.PhaseError, StartedAt: &now, CompletedAt: &now, Message: "not started: " + err.Error(),
		MetricResults: []api.MetricResult{}}
	go func() {
		ctx := context.Background()
		if err := p.st.SaveState(ctx, lease, state); err != nil {
			p.log.Warn("could not record in the store that the analysis did not start", zap.Error(err))
		}
	}()
}

// terminate terminates the run, once: a replica asked for it through the
// store.
func (p *persister) terminate() {
	p.mu.Lock()
	asked := p.terminated
	p.terminated = true
	p.mu.Unlock()
	if asked {
		return
	}
	<-p.ready
	p.log.Info("analysis terminated by request to another replica")
	p.run.Terminate()
}

// leaseTaken says whether the lease of a writer that a renewal did not
// return was taken by another replica. A renewal leaves out the analyses
// that have completed and owe nothing too: the state a writer stores may
// show the end before the writer has written all that led to it.
func (a *Analyses) leaseTaken(p *persister) bool {
	p.mu.Lock()
	lease := p.lease
	p.mu.Unlock()
	ctx := context.Background()
	st, err := a.opts.Store.Get(ctx, lease.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		// Asked again at the next renewal.
		return false
	}
	return st.Lease.Token != lease.Token
}

// renewed updates the lease's expiry after a renewal.
func (p *persister) renewed(l store.Lease) {
	p.mu.Lock()
	if l.Token == p.lease.Token {
		p.lease = l
	}
	p.mu.Unlock()
}

// loop writes what is queued until the run's final state is written, the
// lease is lost, or stop gives up.
func (p *persister) loop() {
	defer close(p.done)
	defer func() {
		p.mu.Lock()
		p.settleLocked()
		p.mu.Unlock()
	}()
	backoff := storeRetryMin
	for {
		<-p.wake
		for {
			finished, err := p.flush()
			if finished {
				return
			}
			if err == nil {
				backoff = storeRetryMin
				break
			}
			p.log.Warn("the store did not take the analysis' writes; they are kept and tried again", zap.Error(err), zap.Duration("retry_in", backoff))
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-p.wake:
				t.Stop()
			}
			p.mu.Lock()
			stopping := p.stopping
			p.mu.Unlock()
			if stopping {
				p.log.Error("the analysis' last writes were given up: the store did not take them before the shutdown grace ran out")
				return
			}
			backoff = min(2*backoff, storeRetryMax)
		}
	}
}

// flush writes what is queued. finished says the loop is over: the final
// state is written, or the lease was lost.
func (p *persister) flush() (finished bool, err error) {
	p.mu.Lock()
	if p.state == writerLost {
		p.mu.Unlock()
		return true, nil
	}
	if !p.dirty {
		defer p.mu.Unlock()
		return p.endedLocked(), nil
	}
	lease, pending, final, dropped := p.lease, p.pending, p.final, p.dropped
	owed, marks, handing := p.owed, p.marks, p.state.handing()
	p.dirty, p.dropped = false, 0
	p.mu.Unlock()
	if dropped > 0 {
		p.log.Warn("measurements were not stored: the store did not answer for longer than the run keeps them", zap.Int("dropped", dropped))
	}

	state := final
	if state == nil {
		s := p.run.Snapshot()
		if handing && s.CompletedAt != nil {
			// Stopped here to be handed over: its end here is not
			// the analysis', which goes on where it stood.
			s.Phase, s.Message, s.CompletedAt = api.PhaseRunning, "", nil
		}
		state = &s
	}
	enqueued, written, marked, err := p.write(lease, batch{owed: owed, pending: pending, state: state, final: final != nil, marks: marks})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != writerLost {
		// Only appended to meanwhile: what was written is their start.
		for _, d := range p.owed[:enqueued] {
			p.recorded[d.WebhookID] = true
			if w, ok := p.waiters[d.WebhookID]; ok {
				close(w)
				delete(p.waiters, d.WebhookID)
			}
		}
		p.owed = p.owed[enqueued:]
		for _, id := range p.marks[:marked] {
			delete(p.recorded, id)
		}
		p.marks = p.marks[marked:]
	}
	if err == nil && final != nil && p.state == writerRunning {
		p.state = writerFinal
		p.settleLocked()
	}
	// What was written leaves the queue; what came since stays.
	if written > 0 {
		p.pending = dropWritten(p.pending, pending[:written])
	}
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		go p.loseLease()
		return true, nil
	case err != nil:
		p.dirty = true
		return false, err
	}
	return p.endedLocked(), nil
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
func (p *persister) write(lease store.Lease, b batch) (enqueued, written, marked int, err error) {
	m := store.Mutation{Owed: b.owed, Measurements: b.pending, Delivered: b.marks}
	// The state goes with the measurements it counts, at the end, or
	// alone; events done alone leave it as it is.
	if len(b.pending) > 0 || b.final || (len(b.owed) == 0 && len(b.marks) == 0) {
		m.State = b.state
	}
	ctx := context.Background()
	if err := p.st.Commit(ctx, lease, m); err != nil {
		return 0, 0, 0, err
	}
	return len(b.owed), len(b.pending), len(b.marks), nil
}

// settleLocked closes stored, once. p.mu is held.
func (p *persister) settleLocked() {
	if !p.settled {
		p.settled = true
		close(p.stored)
	}
}

// endedLocked says whether the writer has nothing left to do: the run
// was handed over, or its final state is written and its webhook has
// ended; and nothing is queued.
func (p *persister) endedLocked() bool {
	if p.dirty || len(p.pending) > 0 || len(p.owed) > 0 || len(p.marks) > 0 {
		return false
	}
	return p.state == writerHandedOver || (p.state == writerFinal && !p.hookOpen)
}

// streamOptions are the options of the run's webhook stream: the writer is
// its outbox (webhook.Outbox), each event owed committed with the step
// that led to it, waited for before its first attempt, and marked once
// done. resumed, when set, says which events were sent before.
func (p *persister) streamOptions(resumed *resumption) webhook.StreamOptions {
	h := webhook.StreamOptions{Outbox: p}
	if resumed != nil {
		h.FirstSeq = resumed.firstSeq
		p.mu.Lock()
		for _, d := range resumed.owed {
			p.recorded[d.WebhookID] = true
		}
		p.mu.Unlock()
	}
	return h
}

// Owe records that the event whose body is body (as the webhook's stream
// sends it: a replica that sends it again sends the same bytes) is owed
// to the webhook as webhookID. The stream's Send calls it on the run's
// goroutine, in the order of the events: it only queues, and the event is
// committed with the step that led to it at the latest.
func (p *persister) Owe(webhookID string, body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == writerLost {
		return
	}
	p.owed = append(p.owed, store.Delivery{WebhookID: webhookID, Seq: seqOf(webhookID), Event: body})
	p.dirty = true
	p.signalLocked()
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
func (p *persister) Recorded(ctx context.Context, webhookID string) bool {
	p.mu.Lock()
	if p.state == writerLost || p.recorded[webhookID] {
		defer p.mu.Unlock()
		return p.state != writerLost
	}
	w, ok := p.waiters[webhookID]
	if !ok {
		w = make(chan struct{})
		p.waiters[webhookID] = w
	}
	p.mu.Unlock()
	select {
	case <-w:
	case <-ctx.Done():
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state != writerLost
}

// Done records that a webhook event is done; it only queues.
func (p *persister) Done(webhookID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == writerLost {
		return
	}
	p.marks = append(p.marks, webhookID)
	p.dirty = true
	p.signalLocked()
}

// hookEnded says the webhook's stream has ended.
func (p *persister) hookEnded() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hookOpen = false
	p.signalLocked()
}

func (p *persister) signalLocked() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// handOver makes the run's end here a hand-over: call it before stopping
// the run. The writer then writes what was measured, and ends.
func (p *persister) handOver() {
	p.mu.Lock()
	if p.state == writerRunning {
		p.state = writerHandingOver
	}
	p.mu.Unlock()
}

// handedOver reports whether the writer ended by a hand-over with
// everything written, its lease still held.
func (p *persister) handedOver() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == writerHandedOver && len(p.pending) == 0 && !p.dirty
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
func (p *persister) stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// pendingMeasurements counts the measurements the writers have yet to
// write, for canaryd_store_measurements_pending.
func (a *Analyses) pendingMeasurements() float64 {
	a.mu.Lock()
	writers := make([]*persister, 0, len(a.writers))
	for _, p := range a.writers {
		writers = append(writers, p)
	}
	a.mu.Unlock()
	n := 0
	for _, p := range writers {
		p.mu.Lock()
		n += len(p.pending)
		p.mu.Unlock()
	}
	return float64(n)
}

// claimInterval is how often, at most, a replica on a store looks for
// analyses whose lease has expired (their replica died): an analysis is
// adopted at most this long after its lease expires, that is at most
// LeaseTTL + claimInterval after its replica died. A look is one indexed
// query.
const claimInterval = time.Second

// renewLoop renews this replica's leases every LeaseTTL/3 until stop is
// closed, and stops the runs whose lease was not renewed; in between, it
// claims the expired leases of other replicas every claimInterval (every
// LeaseTTL/3 when that is shorter).
func (a *Analyses) renewLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(a.leaseTTL / 3)
	defer t.Stop()
	c := time.NewTicker(min(claimInterval, a.leaseTTL/3))
	defer c.Stop()
	for {
		select {
		case <-stop:
			return
		case <-c.C:
			a.claim()
			continue
		case <-t.C:
		}
		// The writers before the renewal: one created since holds a
		// lease the renewal may not have seen.
		a.mu.Lock()
		writers := make(map[string]*persister, len(a.writers))
		for id, p := range a.writers {
			writers[id] = p
		}
		a.mu.Unlock()
		leases, err := a.opts.Store.Renew(context.Background(), a.owner)
		if err != nil {
			a.log.Warn("could not renew this replica's leases", zap.Error(err))
			continue
		}
		held := make(map[string]store.Lease, len(leases))
		for _, l := range leases {
			held[l.ID] = l
		}
		for id, p := range writers {
			if l, ok := held[id]; ok {
				p.renewed(l)
				if l.Terminate {
					p.terminate()
				}
				continue
			}
			select {
			case <-p.done:
				// Its final state is written: the lease is the store's.
			default:
				if a.leaseTaken(p) {
					p.loseLease()
				}
			}
		}
		a.claim()
		a.deleteExpired()
	}
}

// deleteInterval is how often a replica removes from the store the
// analyses finished longer than --retention ago.
const deleteInterval = time.Minute

// deleteExpired removes the analyses finished longer ago than Retention,
// at most every deleteInterval.
func (a *Analyses) deleteExpired() {
	now := a.clock.Now()
	if now.Sub(a.lastDelete) < deleteInterval {
		return
	}
	a.lastDelete = now
	ctx := context.Background()
	if _, err := a.opts.Store.DeleteCompleted(ctx, now.Add(-a.opts.Retention)); err != nil {
		a.log.Warn("could not remove the analyses past their retention from the store", zap.Error(err))
	}
}

// createStored stores a new analysis before it starts: what was asked for
// and this replica's lease.
func (a *Analyses) createStored(id string, so StartOptions, state api.Analysis) (store.Lease, error) {
	na := store.NewAnalysis{ID: id, Template: so.Template, State: state, Owner: a.owner, Credentials: so.Credentials}
	// A posted template keeps its name too, for the list's ?template=;
	// the document, when there is one, is what a replica resumes.
	na.Document = so.Document
	for name, v := range so.RawArgs {
		na.Args = append(na.Args, store.Arg{Name: name, Value: v})
	}
	if so.Webhook != nil {
		na.Webhook = &store.Webhook{URL: so.Webhook.URL, Events: so.Webhook.Events}
	}
	ctx := context.Background()
	l, err := a.opts.Store.Create(ctx, na)
	if err != nil {
		return l, &StoreError{err: err}
	}
	return l, nil
}

// StoreError is an error of the store behind a call of the service: the
// HTTP layer answers it as the store's problem, not the caller's.
type StoreError struct{ err error }

func (e *StoreError) Error() string { return e.err.Error() }
func (e *StoreError) Unwrap() error { return e.err }

// Close stops the renewal of this replica's leases and hands over those
// it still holds (analyses whose webhook deliveries WaitWebhooks
// abandoned), for another replica to finish at once; call it after Drain
// and WaitWebhooks. It does nothing without a store.
func (a *Analyses) Close() {
	a.closeOnce.Do(func() {
		if a.renewStop == nil {
			return
		}
		close(a.renewStop)
		<-a.renewDone
		// Drain wrote the rounds it could; Close does not wait.
		a.roundWriter.GiveUp()
		ctx := context.Background()
		leases, err := a.opts.Store.Renew(ctx, a.owner)
		if err == nil && len(leases) > 0 {
			err = a.opts.Store.Release(ctx, leases...)
		}
		if err != nil {
			a.log.Warn("could not hand over the leases left at shutdown; other replicas take them when they expire", zap.Error(err))
		}
	})
}

// flushWrites waits until every run's writer has written its final state,
// or ctx is done; then the writers give up retrying.
func (a *Analyses) flushWrites(ctx context.Context) {
	a.mu.Lock()
	writers := make([]*persister, 0, len(a.writers))
	for _, p := range a.writers {
		writers = append(writers, p)
	}
	a.mu.Unlock()
	for _, p := range writers {
		select {
		case <-p.done:
		case <-ctx.Done():
			p.stop()
		}
	}
	last := time.NewTimer(StoreTimeout)
	defer last.Stop()
	for _, p := range writers {
		select {
		case <-p.done:
		case <-last.C:
			return
		}
	}
}

// dropLost forgets a run that has ended here without being the
// analysis' end (its lease was lost, or it was handed over): its streams
// end, its webhook delivers what it has queued and stops, and the store
// answers for it from now on.
func (a *Analyses) dropLost(ev api.Event) {
	if ev.Type != api.EventCompleted {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if run, ok := a.running[ev.AnalysisID]; ok {
		delete(a.running, ev.AnalysisID)
		delete(a.byID, ev.AnalysisID)
		run.gone.Store(true)
		run.ledger.Release()
		run.hub.End()
		if run.hook != nil {
			run.hook.Close()
		}
	}
	a.metrics.running.Set(float64(len(a.running)))
}

// handOver stops every run here without ending its analysis, writes
// what they measured, and hands their leases over (Release), so that
// other replicas claim them at once: Drain with a store. Each run's
// measurement in flight is dropped, to be taken again by the replica
// that resumes it. It returns how many were handed over.
func (a *Analyses) handOver(ctx context.Context) int {
	a.mu.Lock()
	writers := make([]*persister, 0, len(a.writers))
	for _, p := range a.writers {
		// The running ones: a completed one's writer waits for its
		// webhook, which WaitWebhooks sees to.
		p.mu.Lock()
		running := p.final == nil && p.state == writerRunning
		p.mu.Unlock()
		if running {
			writers = append(writers, p)
		}
	}
	a.mu.Unlock()
	for _, p := range writers {
		p.handOver()
		<-p.ready
		p.run.Suspend(handOverMessage)
	}
	var leases []store.Lease
	for _, p := range writers {
		select {
		case <-p.done:
		case <-ctx.Done():
			p.stop()
			// A run that does not stop, or a store that does not
			// answer, holds the shutdown this long at most.
			t := time.NewTimer(StopTimeout + StoreTimeout)
			select {
			case <-p.done:
			case <-t.C:
				p.log.Error("analysis not handed over: it did not stop, or its writes were not taken, in time; another replica takes it when its lease expires")
			}
			t.Stop()
		}
		if p.handedOver() {
			p.mu.Lock()
			leases = append(leases, p.lease)
			p.mu.Unlock()
		}
	}
	if len(leases) == 0 {
		return 0
	}
	rctx := context.Background()
	if err := a.opts.Store.Release(rctx, leases...); err != nil {
		a.log.Warn("could not hand the analyses over at once; other replicas take them when their leases expire", zap.Error(err), zap.Int("analyses", len(leases)))
		return 0
	}
	a.log.Info("analyses handed over to the other replicas", zap.Int("analyses", len(leases)))
	return len(leases)
}

// handOverMessage ends a run here that another replica resumes.
const handOverMessage = "canaryd stopped here; another replica resumes the analysis"

// pendingResults are the results of a plan before its first measurement,
// as the engine shows them: every metric Pending. A replica that resumes
// the analysis from them finds every metric of the plan.
func pendingResults(plan *analysis.Plan) []api.MetricResult {
	out := make([]api.MetricResult, len(plan.Metrics))
	for i := range plan.Metrics {
		m := &plan.Metrics[i]
		out[i] = api.MetricResult{Name: m.Name, Phase: api.PhasePending, DryRun: m.DryRun, Metadata: m.Metadata, Measurements: []api.Measurement{}}
	}
	return out
}
