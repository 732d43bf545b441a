package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/canaryd/canaryd/api"
)

// eventHeartbeat is the type of the NDJSON line sent on an idle stream, so
// that proxies do not cut it. Readers skip types they do not know. (Server-
// sent events use a comment line instead, which EventSource ignores.)
const eventHeartbeat api.EventType = "heartbeat"

// streamRun follows run live in mode (NDJSON or server-sent events): first
// the measurements it already has, then each new one, and last the
// completed event with the finished analysis (and its webhook's deliveries
// as they stand). hangUp is called when the client goes away before the
// end.
//
// At most AnalysesOptions.MaxStreams streams follow one analysis: one more
// is a 429 problem, and hangUp is not called.
func streamRun(w http.ResponseWriter, r *http.Request, run *Run, mode responseMode, heartbeat time.Duration, hangUp func()) {
	release, ok := run.follow()
	if !ok {
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams, fmt.Sprintf(
			"%d streams already follow analysis %s, the most one analysis may have here (--max-streams); poll GET /v1/analyses/{id} instead, or retry later",
			run.maxStreams, run.ID())))
		return
	}
	defer release()
	snapshot, events, cancel := run.Watch()
	defer cancel()

	h := w.Header()
	if mode == modeSSE {
		h.Set("Content-Type", sseContentType)
	} else {
		h.Set("Content-Type", ndjsonContentType)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), sse: mode == modeSSE}
	if out.flush() != nil {
		hangUp()
		return
	}

	for _, ev := range replay(snapshot) {
		if out.write(ev) != nil {
			hangUp()
			return
		}
	}

	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	var done <-chan struct{}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				// Cut off for falling behind: what was missed is in the
				// final analysis; wait for it.
				events, done = nil, run.Done()
				continue
			}
			if ev.Type == api.EventCompleted {
				ev.Analysis = run.withWebhook(ev.Analysis)
			}
			if out.write(ev) != nil {
				hangUp()
				return
			}
			if ev.Type == api.EventCompleted {
				return
			}
		case <-done:
			final := run.Snapshot()
			_ = out.write(api.Event{Type: api.EventCompleted, AnalysisID: final.ID, Analysis: &final})
			return
		case <-ticker.C:
			if out.heartbeat(run.ID()) != nil {
				hangUp()
				return
			}
		case <-r.Context().Done():
			hangUp()
			return
		}
	}
}

// replay turns the measurements an analysis already has into events, oldest
// first, so that a stream that starts late (or a run that measured before
// its stream subscribed) still shows every retained measurement. The
// completed event is not among them: Watch delivers it. Only the
// last event of each metric carries the metric's phase: that is the only
// one whose phase after the measurement is known.
func replay(a api.Analysis) []api.Event {
	var events []api.Event
	for _, res := range a.MetricResults {
		// A measurement still in progress is not an event yet: Watch
		// delivers it when it finishes.
		done := res.Measurements
		if n := len(done); n > 0 && !done[n-1].Phase.Completed() {
			done = done[:n-1]
		}
		for i := range done {
			ms := done[i]
			ev := api.Event{Type: api.EventMeasurement, AnalysisID: a.ID, Metric: res.Name, Measurement: &ms}
			if i == len(done)-1 && len(done) == len(res.Measurements) {
				ev.MetricPhase = res.Phase
			}
			events = append(events, ev)
		}
	}
	slices.SortStableFunc(events, func(x, y api.Event) int {
		return timeOf(x.Measurement).Compare(timeOf(y.Measurement))
	})
	return events
}

func timeOf(m *api.Measurement) time.Time {
	if m.FinishedAt != nil {
		return *m.FinishedAt
	}
	return time.Time{}
}

// eventWriter writes events in one of the two stream formats and flushes
// each at once.
type eventWriter struct {
	w   io.Writer
	rc  *http.ResponseController
	sse bool
}

func (e *eventWriter) write(ev api.Event) error {
	data, err := api.Marshal(ev)
	if err != nil {
		return err
	}
	if e.sse {
		_, err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", ev.Type, data)
	} else {
		_, err = fmt.Fprintf(e.w, "%s\n", data)
	}
	if err != nil {
		return err
	}
	return e.flush()
}

func (e *eventWriter) heartbeat(id string) error {
	var err error
	if e.sse {
		_, err = io.WriteString(e.w, ": heartbeat\n\n")
	} else {
		err = api.NewEncoder(e.w).Encode(api.Event{Type: eventHeartbeat, AnalysisID: id})
	}
	if err != nil {
		return err
	}
	return e.flush()
}

func (e *eventWriter) flush() error { return e.rc.Flush() }
