package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
)

// With a store, any replica answers for an analysis it does not hold: the
// store has it as its owner last saved it (at every measurement). GET
// answers with that state; a stream follows it through the store's
// notifications (Subscribe: LISTEN/NOTIFY in postgres), fetching each new
// measurement and the state; the list is the store's (analyses.Analyses.ListPage).

// answerStored answers a request for the analysis id, which this replica
// does not hold, from the store. It returns false, having written
// nothing, when the store has no such analysis either.
func answerStored(svc *analyses.Analyses, w http.ResponseWriter, r *http.Request, id string, heartbeat time.Duration) bool {
	a, err := svc.Stored(r.Context(), id)
	switch {
	case errors.Is(err, analyses.ErrNotFound):
		return false
	case err != nil:
		writeProblem(w, r, storeUnavailable())
		return true
	}
	setAnalysisID(r, id)
	switch r.Method {
	case http.MethodDelete:
		terminateStored(svc, w, r, a)
	default:
		if mode := negotiate(r); mode != modeJSON {
			release, ok := svc.FollowStored(id)
			if !ok {
				writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams, fmt.Sprintf(
					"%d streams already follow analysis %s on this replica, the most one analysis may have here (--max-streams); poll GET /v1/analyses/{id} instead, or retry later",
					svc.Options().MaxStreams, id)))
				return true
			}
			defer release()
			streamStored(w, r, svc, a.ID, a.State, mode, heartbeat)
			return true
		}
		writeJSON(w, http.StatusOK, a.State)
	}
	return true
}

// terminateStored terminates an analysis another replica runs
// (analyses.Analyses.TerminateStored), and answers as handleDeleteAnalysis does:
// 200 with the analysis when it ended within analyses.StopTimeout, 202 with
// the analysis as it stands otherwise.
func terminateStored(svc *analyses.Analyses, w http.ResponseWriter, r *http.Request, a *analyses.StoredAnalysis) {
	state, completed, err := svc.TerminateStored(r.Context(), a)
	var se *analyses.StoreError
	switch {
	case errors.As(err, &se):
		writeProblem(w, r, storeUnavailable())
	case err != nil:
		// The caller hung up.
	case completed:
		writeJSON(w, http.StatusOK, state)
	default:
		writeJSON(w, http.StatusAccepted, state)
	}
}

// streamStored follows a stored analysis: the measurements it has, then
// each new one as the store tells of it, and last the completed event.
func streamStored(w http.ResponseWriter, r *http.Request, svc *analyses.Analyses, id string, state api.Analysis, mode responseMode, heartbeat time.Duration) {
	follow, err := svc.FollowFromStore(r.Context(), id)
	switch {
	case errors.Is(err, analyses.ErrTooManySubscribers):
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyStreams,
			"too many streams follow analyses of the store at once; poll GET /v1/analyses/{id} instead, or retry later"))
		return
	case err != nil:
		writeProblem(w, r, storeUnavailable())
		return
	}
	defer follow.Close()

	startStream(w, mode)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), sse: mode == modeSSE, timeout: analyses.DefaultStreamWriteTimeout}
	defer out.clearDeadline()
	if out.flush() != nil {
		return
	}
	// What the state has is replayed; what follows is read from the
	// measurements stored, from each metric's next index.
	for _, ev := range replay(state) {
		if out.write(ev) != nil {
			return
		}
	}
	next := analyses.NextIndexes(&state)
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	// The analysis was read before the subscription began: a write in
	// between has no notification, so the first read is at once. A
	// notification can also be missed (the store's listener reconnecting,
	// a read failing): every heartbeat reads again too.
	for first := true; !state.Phase.Completed() || state.CompletedAt == nil; first = false {
		if !first {
			select {
			case _, ok := <-follow.Written():
				if !ok {
					return
				}
			case <-ticker.C:
				if out.heartbeat(id) != nil {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
		events, latest, err := follow.Events(r.Context(), next)
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
	_ = out.write(api.Event{Type: api.EventCompleted, AnalysisID: id, Analysis: &state})
}

// lookupStored finds the analysis of the request here or, with a store,
// answers it from the store (answerStored); false when it has answered.
func lookupStored(svc *analyses.Analyses, w http.ResponseWriter, r *http.Request, heartbeat time.Duration) (*analyses.Run, bool) {
	if svc.SharedStore() {
		id := chi.URLParam(r, "id")
		if _, ok := svc.Get(id); !ok && answerStored(svc, w, r, id, heartbeat) {
			return nil, false
		}
	}
	return lookup(svc, w, r)
}
