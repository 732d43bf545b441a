package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// With a store, any replica answers for an analysis it does not hold: the
// store has it as its owner last saved it (at every measurement). GET
// answers with that state; a stream follows it through the store's
// notifications (Subscribe: LISTEN/NOTIFY in postgres), fetching each new
// measurement and the state; the list is the store's (storedList).

// answerStored answers a request for the analysis id, which this replica
// does not hold, from the store. It returns false, having written
// nothing, when the store has no such analysis either.
func answerStored(analyses *Analyses, w http.ResponseWriter, r *http.Request, id string, heartbeat time.Duration) bool {
	a, err := analyses.opts.Store.Get(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false
	case err != nil:
		writeProblem(w, r, storeUnavailable())
		return true
	}
	setAnalysisID(r, id)
	switch r.Method {
	case http.MethodDelete:
		terminateStored(analyses.opts.Store, w, r, a)
	default:
		if mode := negotiate(r); mode != modeJSON {
			release, ok := analyses.followStored(id)
			if !ok {
				writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams, fmt.Sprintf(
					"%d streams already follow analysis %s on this replica, the most one analysis may have here (--max-streams); poll GET /v1/analyses/{id} instead, or retry later",
					analyses.opts.MaxStreams, id)))
				return true
			}
			defer release()
			streamStored(w, r, analyses.opts.Store, a, mode, heartbeat)
			return true
		}
		writeJSON(w, http.StatusOK, a.State)
	}
	return true
}

// terminateStored terminates an analysis another replica runs: it asks
// through the store (RequestTerminate), which the owner sees when it
// renews its leases (every third of a lease), and waits for the end as
// handleDeleteAnalysis does: at most stopTimeout, then 202 with the
// analysis as it stands.
func terminateStored(st store.Store, w http.ResponseWriter, r *http.Request, a *store.Analysis) {
	if a.State.CompletedAt != nil {
		writeJSON(w, http.StatusOK, a.State)
		return
	}
	notes, unsubscribe, err := st.Subscribe(r.Context(), a.ID)
	if err != nil && !errors.Is(err, store.ErrTooManySubscribers) {
		writeProblem(w, r, storeUnavailable())
		return
	}
	if unsubscribe != nil {
		defer unsubscribe()
	}
	err = st.RequestTerminate(r.Context(), a.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		writeProblem(w, r, storeUnavailable())
		return
	}
	latest := a
	wait := time.NewTimer(stopTimeout)
	defer wait.Stop()
	// Without a subscription (too many), the state is read once more at
	// the end.
	for notes != nil {
		select {
		case _, ok := <-notes:
			if !ok {
				notes = nil
				continue
			}
			got, err := st.Get(r.Context(), a.ID)
			if err == nil {
				latest = got
			}
			if latest.State.CompletedAt != nil {
				writeJSON(w, http.StatusOK, latest.State)
				return
			}
		case <-wait.C:
			notes = nil
		case <-r.Context().Done():
			return
		}
	}
	writeJSON(w, http.StatusAccepted, latest.State)
}

// streamStored follows a stored analysis: the measurements it has, then
// each new one as the store tells of it, and last the completed event.
func streamStored(w http.ResponseWriter, r *http.Request, st store.Store, a *store.Analysis, mode responseMode, heartbeat time.Duration) {
	notes, unsubscribe, err := st.Subscribe(r.Context(), a.ID)
	switch {
	case errors.Is(err, store.ErrTooManySubscribers):
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams,
			"too many streams follow analyses of the store at once; poll GET /v1/analyses/{id} instead, or retry later"))
		return
	case err != nil:
		writeProblem(w, r, storeUnavailable())
		return
	}
	defer unsubscribe()

	startStream(w, mode)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), sse: mode == modeSSE, timeout: streamWriteTimeout}
	defer out.clearDeadline()
	if out.flush() != nil {
		return
	}
	// What the state has is replayed; what follows is read from the
	// measurements stored, from each metric's next index.
	state := a.State
	for _, ev := range replay(state) {
		if out.write(ev) != nil {
			return
		}
	}
	next := nextIndexes(&state)
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	// The analysis was read before the subscription began: a write in
	// between has no notification, so the first read is at once. A
	// notification can also be missed (the store's listener reconnecting,
	// a read failing): every heartbeat reads again too.
	for first := true; !state.Phase.Completed() || state.CompletedAt == nil; first = false {
		if !first {
			select {
			case _, ok := <-notes:
				if !ok {
					return
				}
			case <-ticker.C:
				if out.heartbeat(a.ID) != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
		events, latest, err := storedEvents(r.Context(), st, a.ID, next)
		if err != nil {
			// The store did not answer: the next notification or
			// heartbeat tries again.
			continue
		}
		for _, ev := range events {
			if out.write(ev) != nil {
				return
			}
		}
		state = *latest
	}
	_ = out.write(api.Event{Type: api.EventCompleted, AnalysisID: a.ID, Analysis: &state})
}

// nextIndexes are each metric's index of its next measurement, as a state
// counts them.
func nextIndexes(s *api.Analysis) map[string]int {
	next := make(map[string]int, len(s.MetricResults))
	for _, res := range s.MetricResults {
		next[res.Name] = int(res.Count + res.Error)
	}
	return next
}

// storedEvents reads the state of an analysis and the measurements stored
// since next (which it moves on), as events in the order they finished.
func storedEvents(ctx context.Context, st store.Store, id string, next map[string]int) ([]api.Event, *api.Analysis, error) {
	a, err := st.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var events []api.Event
	for _, res := range a.State.MetricResults {
		ms, err := st.Measurements(ctx, id, store.MeasurementRange{Metric: res.Name, From: next[res.Name], Limit: store.MaxListLimit})
		if err != nil {
			return nil, nil, err
		}
		for i := range ms {
			m := ms[i].Measurement
			events = append(events, api.Event{Type: api.EventMeasurement, AnalysisID: id, Metric: res.Name, Measurement: &m})
			next[res.Name] = ms[i].Index + 1
		}
		if n := len(events); n > 0 && events[n-1].Metric == res.Name && next[res.Name] == int(res.Count+res.Error) {
			events[n-1].MetricPhase = res.Phase
		}
	}
	slices.SortStableFunc(events, func(x, y api.Event) int { return timeOf(x.Measurement).Compare(timeOf(y.Measurement)) })
	return events, &a.State, nil
}

// storedList answers GET /v1/analyses from the store: every replica's
// analyses, selected by o (listQuery).
func storedList(analyses *Analyses, w http.ResponseWriter, r *http.Request, o ListOptions) {
	ctx := r.Context()
	f := o.Filter
	page, err := analyses.opts.Store.List(ctx, f)
	switch {
	case filterErrors(err) != nil:
		writeProblem(w, r, invalidInput(filterErrors(err)))
		return
	case err != nil:
		writeProblem(w, r, storeUnavailable())
		return
	}
	list := AnalysisList{Analyses: make([]api.Analysis, 0, len(page.Analyses)), Next: page.Next}
	var bytes int64
	for i := range page.Analyses {
		a := listView(page.Analyses[i].State, analyses.planOf(page.Analyses[i].ID), o.Measurements)
		if o.Measurements {
			size := sizeOfAnalysis(&a)
			if i > 0 && bytes+size > analyses.pageBytes {
				// Cut here: the next page starts after the last one
				// shown.
				list.Next = store.CursorAfter(&page.Analyses[i-1])
				break
			}
			bytes += size
		}
		list.Analyses = append(list.Analyses, a)
	}
	writeJSON(w, http.StatusOK, list)
}

// followStored counts one more stream following a stored analysis that
// another replica runs, unless MaxStreams already do on this replica;
// release uncounts it.
func (a *Analyses) followStored(id string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.storedStreams[id] >= a.opts.MaxStreams {
		return nil, false
	}
	a.storedStreams[id]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.storedStreams[id]--; a.storedStreams[id] <= 0 {
			delete(a.storedStreams, id)
		}
	}, true
}

// storeReady reports whether the store answers, for /readyz.
func (a *Analyses) storeReady(ctx context.Context) error {
	if a.opts.Store == nil {
		return nil
	}
	return a.opts.Store.Ping(ctx)
}

// lookupStored finds the analysis of the request here or, with a store,
// answers it from the store (answerStored); false when it has answered.
func lookupStored(analyses *Analyses, w http.ResponseWriter, r *http.Request, heartbeat time.Duration) (*Run, bool) {
	if analyses.opts.Store != nil {
		id := chi.URLParam(r, "id")
		if _, ok := analyses.Get(id); !ok && answerStored(analyses, w, r, id, heartbeat) {
			return nil, false
		}
	}
	return lookup(analyses, w, r)
}
