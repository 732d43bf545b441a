package server

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/webhook"
)

// DefaultStreamBuffer is AnalysesOptions.StreamBuffer when it is 0: how
// many events a stream may fall behind its analysis before it is cut off.
// A stream that reads keeps up with any analysis (a few events a second
// at most); one this far behind has a caller that stopped reading.
const DefaultStreamBuffer = 256

// eventCutOff is the type of the last event of a stream that fell
// DefaultStreamBuffer events behind: it says so, and the stream ends. The
// analysis goes on; GET /v1/analyses/{id} has it, or a new stream
// replays it.
const eventCutOff api.EventType = "cutoff"

// encoded is an event as every stream writes it: encoded once, when it
// is published, and shared by every stream of the analysis.
type encoded struct {
	typ  api.EventType
	data []byte // JSON, without a newline
	// metric and ordinal place a measurement event: the ordinal-th
	// measurement of metric (1 for the first).
	metric  string
	ordinal int
}

// hub hands a run's events to the streams that follow it. The run's
// observer publishes each event once; each stream has a channel of at
// most buffer events, and is cut off (its channel closed, cutOff set)
// rather than wait or buffer more when it is full.
type hub struct {
	buffer int
	hook   *webhook.Stream // nil without a webhook
	log    *zap.Logger
	// writeTimeout bounds each write of a stream (streamWriteTimeout).
	writeTimeout time.Duration

	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	counts map[string]int // measurement events so far, by metric
	done   bool           // the completed event is published
}

type subscriber struct {
	ch chan *encoded
	// cutOff says why ch was closed before the completed event: it was
	// full. Read and written under hub.mu.
	cutOff bool
}

func newHub(buffer int, writeTimeout time.Duration, hook *webhook.Stream, log *zap.Logger) *hub {
	return &hub{buffer: buffer, writeTimeout: writeTimeout, hook: hook, log: log, subs: map[*subscriber]struct{}{}, counts: map[string]int{}}
}

// publish hands ev to every stream. It is called on the run's goroutine,
// in order, and never blocks: the event is encoded once, only when a
// stream follows, and a stream that is full is cut off.
func (h *hub) publish(ev api.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ordinal := 0
	if ev.Type == api.EventMeasurement {
		h.counts[ev.Metric]++
		ordinal = h.counts[ev.Metric]
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
		e := &encoded{typ: ev.Type, data: data, metric: ev.Metric, ordinal: ordinal}
		for s := range h.subs {
			select {
			case s.ch <- e:
			default:
				s.cutOff = true
				close(s.ch)
				delete(h.subs, s)
				h.log.Info("stream cut off: it fell behind its analysis", zap.Int("events", h.buffer))
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

// subscribe returns the analysis as it stands (snapshot, taken while no
// event is published) and a subscription to the events that follow, nil
// when the analysis has completed. An event the snapshot already shows
// may still come (it was recorded, and is being published): the stream
// skips it (seen). cancel ends the subscription.
func (h *hub) subscribe(snapshot func() api.Analysis) (api.Analysis, *subscriber, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := snapshot()
	if h.done || snap.Phase.Completed() {
		return snap, nil, func() {}
	}
	s := &subscriber{ch: make(chan *encoded, h.buffer)}
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

// wasCutOff reports whether s was cut off for falling behind.
func (h *hub) wasCutOff(s *subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.cutOff
}

// seen reports whether the snapshot a stream started from already shows
// the measurement event e: the engine counts every measurement it records
// in the metric's count (Successful, Failed, Inconclusive) or its errors.
func seen(snapshot *api.Analysis, e *encoded) bool {
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

// end ends every stream without a completed event: the run ended here
// without completing (another replica holds the analysis now).
func (h *hub) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for s := range h.subs {
		close(s.ch)
		delete(h.subs, s)
	}
}
