package webhook

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// CheckEvents reports whether every name in events is an event type a
// webhook can subscribe to: "measurement" or "completed". The server calls it
// while validating a request's webhook.events.
func CheckEvents(events []string) error {
	for _, e := range events {
		switch api.EventType(e) {
		case api.EventMeasurement, api.EventCompleted:
		default:
			return fmt.Errorf("unknown webhook event %q: the events are %q and %q", e, api.EventMeasurement, api.EventCompleted)
		}
	}
	return nil
}

// Stream carries one analysis' events to one webhook URL, in order: an
// event's delivery starts only after the previous one was delivered or given
// up. It has one goroutine, which ends once the stream is closed and every
// queued event is done, or when Wait's context ends. Until then it counts
// against the Sender's MaxBacklog.
//
// Each event has its own webhook-id, "<analysisID>.<n>", the same for every
// attempt to deliver it; n counts the events the subscriber asked for from 1,
// so a gap shows the receiver that a measurement event was dropped.
type Stream struct {
	s          *Sender
	analysisID string
	// url is the destination with its host spelt as the allow list
	// compared it (outbound.RequestHost); nil when refused.
	url          *url.URL
	breaker      *breaker // the destination's; nil when refused
	refused      error
	measurements bool
	log          *zap.Logger

	ctx    context.Context // cancelled when Wait gives up
	cancel context.CancelFunc
	wake   chan struct{} // one token: something was queued or the stream closed
	done   chan struct{} // closed when run returns

	mu        sync.Mutex
	queue     []*delivery // measurement events, oldest first
	completed *delivery   // the completed event; never dropped
	closed    bool        // no more events accepted
	inFlight  bool        // run is delivering an event
	seq       int
	dropped   int
	status    api.WebhookStatus
	outbox    Outbox
}

// Outbox keeps a stream's events where another process can finish them (a
// store): each event is recorded as owed before its first attempt, and as
// done once delivered or given up. Its methods must be safe for concurrent
// use.
type Outbox interface {
	// Owe records that the event webhookID is owed, with the body every
	// attempt sends (another process sends those very bytes). Send calls
	// it on its caller's goroutine, in the order of the events, before it
	// returns: it must not block.
	Owe(webhookID string, body []byte)
	// Recorded is called on the stream's goroutine before an event's
	// first attempt; it may wait for the event to be recorded, until ctx
	// ends (the stream is abandoned at shutdown). It reports whether the
	// event may be sent: false drops it unsent and uncounted (the analysis
	// is no longer this process's: whoever has it sends what it owes),
	// or, once ctx has ended, counts it as abandoned.
	Recorded(ctx context.Context, webhookID string) bool
	// Done is called once an event was delivered, given up or dropped;
	// not for an event abandoned at shutdown (Wait's context), which is
	// still owed. It must not block: it may be called from Send.
	Done(webhookID string)
}

// StreamOptions are the options of StreamWith.
type StreamOptions struct {
	// Outbox, when set, records the stream's events (see Outbox).
	Outbox Outbox
	// FirstSeq is the number of the events already sent for the analysis
	// elsewhere (it was resumed): the next event's webhook-id is
	// "<analysisID>.<FirstSeq+1>".
	FirstSeq int
}

// Stream returns a stream of analysisID's events to rawURL. events are the
// event types the subscriber asked for (see CheckEvents): the completed event
// is always sent, measurement events only when asked for; unknown names are
// ignored.
//
// A URL that Check refuses still gets a Stream, one that sends nothing: each
// event counts as failed in Status, with the reason as its error, and as
// refused in the metrics. The server should have answered 400 instead.
//
// When Options.MaxBacklog streams already have deliveries owed, Stream
// returns an error wrapping ErrBacklogFull and no Stream: the server answers
// 429 before the analysis starts. A refused URL owes nothing and is never
// counted.
//
// Every Stream must be ended, by its completed event, by Close, or by Wait's
// context; otherwise its goroutine waits for events forever.
func (s *Sender) Stream(analysisID, rawURL string, events []string) (*Stream, error) {
	return s.StreamWith(analysisID, rawURL, events, StreamOptions{})
}

// StreamWith is Stream with an outbox, or resumed from an earlier one.
func (s *Sender) StreamWith(analysisID, rawURL string, events []string, o StreamOptions) (*Stream, error) {
	st := &Stream{
		s:          s,
		analysisID: analysisID,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		seq:        o.FirstSeq,
		outbox:     o.Outbox,
	}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	for _, e := range events {
		if api.EventType(e) == api.EventMeasurement {
			st.measurements = true
		}
	}
	u, err := s.check(rawURL)
	if err != nil {
		st.refused = err
		st.status.URL = redact.URLString(rawURL)
		st.log = s.log.With(zap.String("analysis_id", analysisID), zap.String("url", st.status.URL))
		st.log.Warn("webhook refused", zap.String("error", err.Error()))
		st.cancel()
		close(st.done)
		return st, nil
	}
	if n := s.backlog.Add(1); n > s.maxBacklog {
		s.backlog.Add(-1)
		st.cancel()
		return nil, fmt.Errorf("%w: %d webhooks already have deliveries owed, the limit (--max-webhook-backlog); retry later, or start the analysis without a webhook", ErrBacklogFull, s.maxBacklog)
	}
	s.metrics.backlog.Inc()
	c := *u
	c.Host = outbound.RequestHost(u)
	st.url = &c
	st.breaker = s.breakers.get(outbound.HostPort(u))
	st.status.URL = redact.URL(u)
	st.log = s.log.With(zap.String("analysis_id", analysisID), zap.String("url", st.status.URL))
	// run ends when the stream is closed (Close or the completed event)
	// and its queue is empty, or when Wait's context ends (st.ctx).
	go st.run()
	return st, nil
}

// Redeliver queues an event owed from before (recorded by another process,
// or an earlier run) with its webhook-id, ahead of the events sent since.
// Call it before Send.
func (st *Stream) Redeliver(webhookID string, typ api.EventType, body []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.refused != nil || st.closed {
		return
	}
	d := &delivery{id: webhookID, typ: typ, body: body}
	if typ == api.EventCompleted {
		st.completed, st.closed = d, true
	} else {
		st.queue = append(st.queue, d)
	}
	st.signal()
}

// Send queues ev for delivery and returns at once; it never waits for the
// receiver. Events of a type the subscriber did not ask for, and events after
// the completed event or Close, are ignored.
//
// When the receiver is slow and the queue already holds Options.QueueSize
// measurement events, the oldest queued measurement event is dropped to make
// room (counted as failed in Status and as dropped in the metrics; its id is
// skipped). The completed event is never dropped: it has a place of its own
// and is delivered after every measurement event still queued.
//
// With an Outbox, the event is owed (Outbox.Owe) before Send returns.
func (st *Stream) Send(ev api.Event) {
	if id, body := st.send(ev); id != "" && st.outbox != nil {
		st.outbox.Owe(id, body)
	}
}

// send queues ev, and returns its webhook-id and body: "" and nil when it
// is not queued (a type not asked for, a refused URL, or after the stream
// was closed).
func (st *Stream) send(ev api.Event) (string, []byte) {
	switch ev.Type {
	case api.EventMeasurement:
		if !st.measurements {
			return "", nil
		}
	case api.EventCompleted:
	default:
		return "", nil
	}
	var body []byte
	var merr error
	if st.refused == nil {
		// Encoded now, outside the lock, so the event is captured as it is
		// when sent.
		body, merr = api.Marshal(ev)
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		st.log.Debug("webhook event after the stream was closed; ignored", zap.String("event", string(ev.Type)))
		return "", nil
	}
	if ev.Type == api.EventCompleted {
		st.closed = true
	}
	st.seq++
	d := &delivery{id: st.analysisID + "." + strconv.Itoa(st.seq), typ: ev.Type, body: body}
	switch {
	case st.refused != nil:
		st.failLocked(outcomeRefused, st.refused.Error())
		return "", nil
	case merr != nil:
		st.failLocked(outcomeFailed, "encoding the event failed: "+merr.Error())
		st.log.Error("webhook event not encoded", zap.String("webhook_id", d.id), zap.Error(merr))
		return "", nil
	case ev.Type == api.EventCompleted:
		st.completed = d
	default:
		if len(st.queue) >= st.s.queueSize {
			old := st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
			st.dropped++
			st.failLocked(outcomeDropped, fmt.Sprintf("measurement event %s dropped: the receiver is slower than the analysis and the queue (%d) was full", old.id, st.s.queueSize))
			if st.dropped == 1 {
				st.log.Warn("webhook receiver too slow; dropping the oldest measurement events", zap.String("webhook_id", old.id), zap.Int("queue_size", st.s.queueSize))
			}
			if st.outbox != nil {
				st.outbox.Done(old.id)
			}
		}
		st.queue = append(st.queue, d)
	}
	st.signal()
	return d.id, d.body
}

// Close says that no more events will come: those queued are still
// delivered. The completed event closes the stream too. Close may be called
// more than once.
func (st *Stream) Close() {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.signal()
}

// Wait waits until every event queued was delivered or given up, which
// needs the stream closed (by Close or the completed event), and returns
// nil. If ctx ends first (the shutdown grace is over) the attempt in flight
// and the waits for retries are abandoned, every event not yet delivered
// counts as failed, no more events are accepted, and Wait returns ctx.Err()
// once the stream's goroutine has ended.
func (st *Stream) Wait(ctx context.Context) error {
	select {
	case <-st.done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-st.done:
		return nil
	default:
	}
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.cancel()
	<-st.done
	return ctx.Err()
}

// Status reports the deliveries so far: the URL, with any userinfo removed
// and its query replaced by REDACTED; how many events were delivered, how
// many failed (final status, retries given up, abandoned, refused or
// dropped) and how many are pending (queued or being delivered);
// LastStatus, the HTTP status of the most recent delivery's last attempt (0
// when it got no response); LastError, the error of the most recent
// failure, which stays after later deliveries succeed; and Retrying, while
// the event being delivered waits for another attempt: its id, the attempts
// so far, why the latest failed (or why the destination is paused) and
// when the next is due.
func (st *Stream) Status() api.WebhookStatus {
	st.mu.Lock()
	defer st.mu.Unlock()
	status := st.status
	status.Pending = len(st.queue)
	if st.completed != nil {
		status.Pending++
	}
	if st.inFlight {
		status.Pending++
	}
	if status.Retrying != nil {
		r := *status.Retrying
		status.Retrying = &r
	}
	return status
}

// retrying records that d's delivery waits for another attempt.
func (st *Stream) retrying(d *delivery, attempts int, lastErr string, next time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.status.Retrying = &api.WebhookRetry{WebhookID: d.id, Attempts: attempts, LastError: lastErr, NextAttemptAt: next.UTC()}
}

// signal wakes run without blocking; one pending token is enough.
func (st *Stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// failLocked counts one event as not delivered.
func (st *Stream) failLocked(outcome, msg string) {
	st.status.Failed++
	st.status.LastError = msg
	st.s.metrics.deliveries.WithLabelValues(outcome).Inc()
}

// run delivers the queued events one after the other. It returns when the
// stream is closed and nothing is queued, or when st.ctx is cancelled by
// Wait (then what is still queued is counted as failed).
func (st *Stream) run() {
	defer close(st.done)
	defer st.cancel()
	defer st.s.metrics.backlog.Dec()
	defer st.s.backlog.Add(-1)
	for {
		d := st.next()
		if d == nil {
			return
		}
		if st.outbox != nil && !st.outbox.Recorded(st.ctx, d.id) {
			st.mu.Lock()
			st.inFlight = false
			abandoned := st.ctx.Err() != nil
			if abandoned {
				st.failLocked(outcomeFailed, fmt.Sprintf("event %s abandoned at shutdown before its first attempt", d.id))
			}
			st.mu.Unlock()
			if !abandoned {
				st.log.Debug("webhook event not sent: it is no longer this process's to send", zap.String("webhook_id", d.id))
			}
			continue
		}
		res := st.s.deliver(st.ctx, st, d)
		st.record(d, res)
		if st.outbox != nil && st.ctx.Err() == nil {
			st.outbox.Done(d.id)
		}
	}
}

// next returns the next event to deliver, waiting for one if need be, or nil
// when there will be none.
func (st *Stream) next() *delivery {
	for {
		st.mu.Lock()
		switch {
		case st.ctx.Err() != nil:
			pending := st.queue
			if st.completed != nil {
				pending = append(pending, st.completed)
			}
			for _, d := range pending {
				st.failLocked(outcomeFailed, fmt.Sprintf("event %s abandoned at shutdown before its first attempt", d.id))
			}
			st.queue, st.completed = nil, nil
			st.mu.Unlock()
			return nil
		case len(st.queue) > 0:
			d := st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
			st.inFlight = true
			st.mu.Unlock()
			return d
		case st.completed != nil:
			d := st.completed
			st.completed = nil
			st.inFlight = true
			st.mu.Unlock()
			return d
		case st.closed:
			st.mu.Unlock()
			return nil
		}
		st.mu.Unlock()
		select {
		case <-st.wake:
		case <-st.ctx.Done():
		}
	}
}

// record counts a finished delivery and logs it.
func (st *Stream) record(d *delivery, res result) {
	fields := []zap.Field{
		zap.String("webhook_id", d.id), zap.String("event", string(d.typ)),
		zap.Int("attempts", res.attempts), zap.Int("status", res.status),
	}
	st.mu.Lock()
	st.inFlight = false
	st.status.Retrying = nil
	st.status.LastStatus = res.status
	if res.err == nil {
		st.status.Delivered++
		st.s.metrics.deliveries.WithLabelValues(outcomeDelivered).Inc()
	} else {
		st.failLocked(outcomeFailed, res.err.Error())
	}
	st.mu.Unlock()
	if res.err != nil {
		st.log.Warn("webhook delivery failed", append(fields, zap.String("error", res.err.Error()))...)
		return
	}
	st.log.Debug("webhook delivered", fields...)
}
