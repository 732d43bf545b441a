package server

import (
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
)

// gateStatus is a gate's HTTP status for the analysis' verdict: the status
// is the answer for callers that read nothing else (Flagger takes any
// status up to 202 as a pass, Spinnaker and CI jobs the 2xx class).
func gateStatus(p api.Phase) int {
	switch p {
	case api.PhaseSuccessful:
		return http.StatusOK
	case api.PhaseFailed, api.PhaseInconclusive:
		return http.StatusPreconditionFailed
	default:
		return http.StatusServiceUnavailable
	}
}

// gateTimedOut is the message of a gate's analysis stopped at the caller's
// deadline.
func gateTimedOut(timeout time.Duration, async string) string {
	return fmt.Sprintf("gate timed out: the analysis had not finished when the gate's deadline of %s passed (?timeout= or %s), "+
		"so it was stopped; for an analysis that lasts longer than its caller can wait, start it with %s and poll GET /v1/analyses/{id} until phase is not Running",
		timeout, TimeoutHeader, async)
}

// handleGate runs an analysis to its end and answers with the verdict as
// the status (gateStatus) and the finished analysis as the body. named says
// whether read serves a named template (POST /v1/gates/{name}), for the
// advice of a timed-out gate.
//
// With a deadline (?timeout=, Request-Timeout) the analysis still running
// when it passes is stopped with phase Error and a message that says so,
// and the answer is a 503 that carries it: the caller gets canaryd's answer
// before its own timeout cuts the connection. A caller that hangs up
// terminates the analysis, as on ?wait=true.
func handleGate(log *zap.Logger, svc *analyses.Analyses, read requestReader, named bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := admit(svc, read, w, r)
		if !ok {
			return
		}
		release, err := svc.AcquireRound()
		if err != nil {
			writeProblem(w, r, tooManyRounds(svc.MaxRounds()))
			return
		}
		run, ok := start(log, svc, req, api.KindGate, w, r)
		if !ok {
			release()
			return
		}
		// The slot is the gate's until its analysis has stopped: a run
		// left stopping still holds it.
		defer func() {
			select {
			case <-run.Done():
				release()
			default:
				// Ends when the run does.
				go func() {
					<-run.Done()
					release()
				}()
			}
		}()
		var deadline <-chan time.Time
		if req.timeout > 0 {
			timer := time.NewTimer(req.timeout)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-run.Done():
			// With a store, the verdict answered is the one stored.
			run.AwaitStored(r.Context())
		case <-deadline:
			async := "POST /v1/analyses"
			if named {
				async = "POST /v1/templates/" + req.template + "/analyses"
			}
			message := gateTimedOut(req.timeout, async)
			run.Abort(message)
			log.Info("gate timed out; analysis stopped", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID()), zap.Duration("timeout", req.timeout))
			if !analyses.WaitStopped(r.Context(), run) {
				if r.Context().Err() != nil {
					return
				}
				// The analysis has not stopped within analyses.StopTimeout (a
				// measurement or condition that does not return): the
				// gate answers with what it has, as the Error it will
				// end with.
				final := run.Snapshot()
				now := svc.Clock().Now()
				final.Phase, final.Message, final.CompletedAt = api.PhaseError, message, &now
				writeJSON(w, gateStatus(final.Phase), final)
				return
			}
		case <-r.Context().Done():
			run.Terminate()
			log.Info("client went away; analysis terminated", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID()))
			return
		}
		final := run.Snapshot()
		writeJSON(w, gateStatus(final.Phase), final)
	})
}
