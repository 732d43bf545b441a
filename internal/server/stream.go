package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
)

// eventCutOff is the type of the last event of a stream that fell
// analyses.AnalysesOptions.StreamBuffer events behind: it says so, and the stream
// ends. The analysis goes on; GET /v1/analyses/{id} has it, or a new
// stream replays it.
const eventCutOff api.EventType = "cutoff"

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
// At most analyses.AnalysesOptions.MaxStreams streams follow one analysis: one more
// is a 429 problem, and hangUp is not called. Each live event is encoded
// once for every stream of the analysis (hub.go); a stream that falls
// analyses.AnalysesOptions.StreamBuffer events behind is cut off, with a last
// event that says so, and ends (the analysis goes on).
func streamRun(w http.ResponseWriter, r *http.Request, run *analyses.Run, mode responseMode, heartbeat time.Duration, hangUp func()) {
	release, ok := run.Follow()
	if !ok {
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams, fmt.Sprintf(
			"%d streams already follow analysis %s, the most one analysis may have here (--max-streams); poll GET /v1/analyses/{id} instead, or retry later",
			run.MaxStreams(), run.ID())))
		return
	}
	defer release()
	snapshot, sub, cancel := run.Hub().Subscribe(run.Snapshot)
	defer cancel()

	startStream(w, mode)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), sse: mode == modeSSE, timeout: run.WriteTimeout()}
	// The deadlines are this stream's: the connection may serve others.
	defer out.clearDeadline()
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
	if sub == nil {
		// It had completed: the snapshot is the final analysis.
		final := run.Snapshot()
		_ = out.write(api.Event{Type: api.EventCompleted, AnalysisID: final.ID, Analysis: &final})
		return
	}

	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	for {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				if run.Hub().CutOff(sub) {
					_ = out.writeCutOff(run.ID(), sub.Buffer())
				}
				return
			}
			if e.SeenIn(&snapshot) {
				continue // replayed from the snapshot
			}
			if out.writeEncoded(e.Type(), e.Data()) != nil {
				hangUp()
				return
			}
			if e.Type() == api.EventCompleted {
				return
			}
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
// each at once, each write within the run's WriteTimeout.
type eventWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	sse     bool
	timeout time.Duration
}

func (e *eventWriter) write(ev api.Event) error {
	data, err := api.Marshal(ev)
	if err != nil {
		return err
	}
	return e.writeEncoded(ev.Type, data)
}

// writeEncoded writes an event of type typ already encoded as data.
func (e *eventWriter) writeEncoded(typ api.EventType, data []byte) error {
	e.deadline()
	var err error
	if e.sse {
		_, err = fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, data)
	} else {
		_, err = fmt.Fprintf(e.w, "%s\n", data)
	}
	if err != nil {
		return err
	}
	return e.flush()
}

// cutOffEvent is the last event of a stream that fell behind.
type cutOffEvent struct {
	Type       api.EventType `json:"type"`
	AnalysisID string        `json:"analysisId"`
	Message    string        `json:"message"`
}

func (e *eventWriter) writeCutOff(id string, buffer int) error {
	data, err := api.Marshal(cutOffEvent{Type: eventCutOff, AnalysisID: id, Message: fmt.Sprintf(
		"this stream fell %d events behind the analysis and was cut off; the analysis goes on: "+
			"GET /v1/analyses/%s has it as it stands, and a new stream replays it", buffer, id)})
	if err != nil {
		return err
	}
	return e.writeEncoded(eventCutOff, data)
}

func (e *eventWriter) heartbeat(id string) error {
	e.deadline()
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

// deadline bounds the next write (not every ResponseWriter can: then the
// write is unbounded, as it is in tests that record the response).
func (e *eventWriter) deadline() { _ = e.rc.SetWriteDeadline(time.Now().Add(e.timeout)) }

func (e *eventWriter) clearDeadline() { _ = e.rc.SetWriteDeadline(time.Time{}) }

// startStream answers 200 with the headers of a stream of events in mode.
func startStream(w http.ResponseWriter, mode responseMode) {
	h := w.Header()
	if mode == modeSSE {
		h.Set("Content-Type", sseContentType)
	} else {
		h.Set("Content-Type", ndjsonContentType)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
}
