package analyses

import (
	"sync"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/webhook"
)

// DefaultStreamBuffer is the buffer of a Hub's streams when the service
// sets none: how many events a stream may fall behind its analysis before
// it is cut off.
// A stream that reads keeps up with any analysis (a few events a second
// at most); one this far behind has a caller that stopped reading.
const DefaultStreamBuffer = 256

// Event is an event as every stream writes it: encoded once, when it is
// published, and shared by every stream of the analysis.
type Event struct {
	typ  api.EventType
	data []byte // JSON, without a newline
	// metric and ordinal place a measurement event: the ordinal-th
	// measurement of metric (1 for the first).
	metric  string
	ordinal int
}

// Type is the event's type.
func (e *Event) Type() api.EventType { return e.typ }

// Data is the event's JSON, without a newline: the same bytes for every
// stream.
func (e *Event) Data() []byte { return e.data }

// Hub hands a run's events to the streams that follow it. The run's
// observer publishes each event once; each stream has a channel of at
// most buffer events, and is cut off (its channel closed, CutOff true)
// rather than wait or buffer more when it is full.
//
// A hub is made for every analysis, and most are never followed: it holds
// no map until a stream subscribes, and counts each metric's measurements
// in a list as short as the metrics measured.
type Hub struct {
	buffer int
	hook   *webhook.Stream // nil without a webhook
	log    *zap.Logger
	id     string // the analysis', for log lines

	mu     sync.Mutex
	subs   map[*Subscription]struct{} // nil until a stream subscribes
	counts []metricCount              // measurement events so far, by metric
	done   bool                       // the completed event is published
}

// metricCount is the number of measurement events of a metric so far.
type metricCount struct {
	metric string
	n      int
}

// Subscription is one stream's: the events published since it began.
type Subscription struct {
	ch chan *Event
	// cutOff says why ch was closed before the completed event: it was
	// full. Read and written under Hub.mu.
	cutOff bool
}

// Events are the events published, closed after the completed event,
// when the stream is cut off, or when the run ends here (End).
func (s *Subscription) Events() <-chan *Event { return s.ch }

// Buffer is how many events the stream may fall behind.
func (s *Subscription) Buffer() int { return cap(s.ch) }

// NewHub returns the hub of the run id whose streams may fall buffer
// events behind; hook, when set, is the run's webhook, whose deliveries the
// completed event shows. Its lines go to log, with the id.
func NewHub(buffer int, hook *webhook.Stream, log *zap.Logger, id string) *Hub {
	return &Hub{buffer: buffer, hook: hook, log: log, id: id}
}

// count counts a measurement event of metric and returns its ordinal.
// h.mu is held.
func (h *Hub) count(metric string) int {
	for i := range h.counts {
		if c := &h.counts[i]; c.metric == metric {
			c.n++
			return c.n
		}
	}
	h.counts = append(h.counts, metricCount{metric: metric, n: 1})
	return 1
}

// Publish hands ev to every stream. It is called on the run's goroutine,
// in order, and never blocks: the event is encoded once, only when a
// stream follows, and a stream that is full is cut off.
func (h *Hub) Publish(ev api.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ordinal := 0
	if ev.Type == api.EventMeasurement {
		ordinal = h.count(ev.Metric)
	}
	completed := ev.Type == api.EventCompleted
	if completed {
		h.done = true
	}
	if len(h.subs) == 0 {
		return
	}
	if completed {
		ev.Analysis = withWebhook(h.hook, ev.Analysis)
	}
	data, err := api.Marshal(ev)
	if err == nil {
		e := &Event{typ: ev.Type, data: data, metric: ev.Metric, ordinal: ordinal}
		for s := range h.subs {
			select {
			case s.ch <- e:
			default:
				s.cutOff = true
				close(s.ch)
				delete(h.subs, s)
				h.log.Info("stream cut off: it fell behind its analysis", zap.String("analysis_id", h.id), zap.Int("events", h.buffer))
			}
		}
	}
	if completed {
		for s := range h.subs {
			close(s.ch)
			delete(h.subs, s)
		}
	}
}

// Subscribe returns the analysis as it stands (snapshot, taken while no
// event is published) and a subscription to the events that follow, nil
// when the analysis has completed. An event the snapshot already shows
// may still come (it was recorded, and is being published): the stream
// skips it (Event.SeenIn). cancel ends the subscription.
func (h *Hub) Subscribe(snapshot func() api.Analysis) (api.Analysis, *Subscription, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := snapshot()
	if h.done || snap.Phase.Completed() {
		return snap, nil, func() {}
	}
	s := &Subscription{ch: make(chan *Event, h.buffer)}
	if h.subs == nil {
		h.subs = map[*Subscription]struct{}{}
	}
	h.subs[s] = struct{}{}
	return snap, s, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[s]; ok {
			delete(h.subs, s)
			close(s.ch)
		}
	}
}

// CutOff reports whether s was cut off for falling behind.
func (h *Hub) CutOff(s *Subscription) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.cutOff
}

// SeenIn reports whether the snapshot a stream started from already shows
// the measurement event e: the engine counts every measurement it records
// in the metric's count (Successful, Failed, Inconclusive) or its errors.
func (e *Event) SeenIn(snapshot *api.Analysis) bool {
	if e.typ != api.EventMeasurement {
		return false
	}
	for i := range snapshot.MetricResults {
		if m := &snapshot.MetricResults[i]; m.Name == e.metric {
			return e.ordinal <= int(m.Count)+int(m.Error)
		}
	}
	return false
}

// withWebhook returns a with the deliveries of hook so far, on a copy:
// the engine hands the same completed analysis to every observer.
func withWebhook(hook *webhook.Stream, a *api.Analysis) *api.Analysis {
	if hook == nil || a == nil {
		return a
	}
	c := *a
	status := hook.Status()
	c.Webhook = &status
	return &c
}

// End ends every stream without a completed event: the run ended here
// without completing (another replica holds the analysis now).
func (h *Hub) End() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for s := range h.subs {
		close(s.ch)
		delete(h.subs, s)
	}
}
