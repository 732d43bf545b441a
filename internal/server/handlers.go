package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/report"
)

// ProblemReplicaRestarted is the 410, with memory:, of a request for an
// analysis started by a canaryd run that began before this one: the id
// carries that run's epoch (ids.EpochOf), and the analysis went with
// it. openapi.yaml lists it with the other problem types.
const ProblemReplicaRestarted = typePrefix + "replica-restarted"

// AnalysisList is the body of GET /v1/analyses: a page of the list.
type AnalysisList struct {
	Analyses []api.Analysis `json:"analyses"`
	// Next is the ?cursor= of the next page; "" on the last.
	Next string `json:"next,omitempty"`
}

// handleCreateAnalysis starts an analysis of what read makes of the
// request: the posted document, or a named template with the posted
// arguments. By default it answers 202 at once; ?wait=true answers with the
// finished analysis; a streaming Accept type follows it live. A caller that
// hangs up on a wait or a stream terminates the analysis, unless it asked
// for a webhook: without one nobody else knows its id, so it would run
// unread; with one the webhook is still owed the result.
func handleCreateAnalysis(log *zap.Logger, svc *analyses.Analyses, read requestReader, heartbeat time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := negotiate(r)
		req, ok := admit(svc, read, w, r)
		if !ok {
			return
		}
		run, ok := start(log, svc, req, "", w, r)
		if !ok {
			return
		}

		hangUp := func() {
			if req.webhook != nil {
				log.Info("client went away; the analysis goes on for its webhook", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID()))
				return
			}
			run.Terminate()
			log.Info("client went away; analysis terminated", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID()))
		}
		switch {
		case mode != modeJSON:
			streamRun(w, r, run, mode, heartbeat, hangUp)
		case req.wait:
			select {
			case <-run.Done():
				// With a store, the verdict answered is the one stored.
				run.AwaitStored(r.Context())
				if run.Gone() {
					writeProblem(w, r, handedOver())
					return
				}
				writeAnalysis(w, http.StatusOK, run.Snapshot())
			case <-r.Context().Done():
				hangUp()
			}
		default:
			writeAnalysis(w, http.StatusAccepted, run.Snapshot())
		}
	})
}

// start starts the analysis of req and sets the Location of the response;
// when it cannot, it answers with the problem and returns false. kind is
// the resource's (api.KindGate for a gate, "" for an analysis); an
// analysis of a kind is one of a series (analyses.SeriesOf).
func start(log *zap.Logger, svc *analyses.Analyses, req *specRequest, kind string, w http.ResponseWriter, r *http.Request) (*analyses.Run, bool) {
	so := analyses.StartOptions{Template: req.template, Args: req.compiled.Args, Webhook: req.webhook,
		Document: req.document, RawArgs: req.args, Credentials: req.document != nil && req.compiled.Credentials,
		Sources: reportSources(svc, req), Kind: kind}
	if kind != "" {
		so.Series = analyses.SeriesOf(kind, req.template, req.document, req.args, infoOf(r).caller)
	}
	run, err := svc.Start(req.compiled.Plan, so)
	if p, ok := storedProblem(err); ok {
		writeProblem(w, r, p)
		return nil, false
	}
	switch {
	case errors.Is(err, analyses.ErrDraining):
		writeProblem(w, r, shuttingDown())
		return nil, false
	case errors.Is(err, analyses.ErrTooMany):
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyAnalyses,
			"the limit of analyses running at once (--max-analyses) is reached; retry later"))
		return nil, false
	case errors.Is(err, analyses.ErrRetainedFull), errors.Is(err, analyses.ErrFinishedFull):
		writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyAnalyses, svc.RetentionFull(err)))
		return nil, false
	case errors.Is(err, analyses.ErrBacklogFull):
		p := problem(http.StatusTooManyRequests, ProblemTooManyAnalyses,
			"the limit of analyses with webhook deliveries owed (--max-webhook-backlog) is reached; retry later")
		p.Errors = []api.FieldError{{Field: "webhook", Message: err.Error()}}
		writeProblem(w, r, p)
		return nil, false
	case err != nil:
		internalError(log, w, r, err)
		return nil, false
	}
	setAnalysisID(r, run.ID())
	w.Header()["Location"] = []string{absoluteURL(r, "/v1/analyses/"+run.ID())}
	if len(req.caller) > 0 {
		log.Info("analysis requested", append([]zap.Field{zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID())}, req.caller...)...)
	}
	return run, true
}

// reportSources are how req's metrics query, for its analysis' HTML
// report: made once for a compiled spec that the compiled cache keeps (a
// template's, or a body of up to maxCachedBody), which every analysis of
// it shares.
func reportSources(svc *analyses.Analyses, req *specRequest) map[string]report.Source {
	if len(req.document) <= maxCachedBody {
		return svc.SharedSources(req.compiled)
	}
	return svc.ReportSources(req.compiled.Spec, req.compiled.Args)
}

// absoluteURL returns the URL of path on this service as the caller
// reached it: the request's Host, and https when the connection is TLS or a
// proxy in front says so (X-Forwarded-Proto). A Location must be absolute
// for Spinnaker, whose webhook stage polls the Location as it is and refuses
// a relative URI; RFC 9110 allows either. Without a Host (HTTP/1.0) it is
// the path alone.
func absoluteURL(r *http.Request, path string) string {
	if r.Host == "" {
		return path
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if v := r.Header["X-Forwarded-Proto"]; len(v) > 0 { // Header.Get, without canonicalising a canonical key
		proto, _, _ := strings.Cut(v[0], ",")
		if p := strings.ToLower(strings.TrimSpace(proto)); p == "http" || p == "https" {
			scheme = p
		}
	}
	if plainURLPart(r.Host, "-._~:[]") && plainURLPart(path, "-._~:/") {
		// What url.URL's String writes, without its escaping.
		return scheme + "://" + r.Host + path
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: path}).String()
}

// plainURLPart reports whether s is letters, digits and marks only, which
// a URL's host (a name or an address, and its port: "-._~:[]") or path
// (an id, a route: "-._~:/") holds unescaped.
func plainURLPart(s, marks string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(marks, c) >= 0) {
			return false
		}
	}
	return true
}

// handleListAnalyses answers with a page of the analyses held, newest
// first (list.go): optionally only those in the phases given by ?phase=,
// ?limit= of them after ?cursor=, with their measurements only when
// ?measurements=true.
func handleListAnalyses(svc *analyses.Analyses) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, errs := listQuery(r.URL.Query())
		if len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		// With a store, every replica's analyses, from the store.
		page, next, err := svc.ListPage(r.Context(), o)
		if errs := filterErrors(err); errs != nil {
			writeProblem(w, r, invalidInput(errs))
			return
		} else if err != nil {
			writeProblem(w, r, storeUnavailable())
			return
		}
		list := AnalysisList{Analyses: page, Next: next}
		if page == nil {
			list.Analyses = []api.Analysis{}
		}
		writeJSON(w, http.StatusOK, list)
	})
}

// handleGetAnalysis answers with one analysis, or follows it live for a
// streaming Accept type. Hanging up on such a stream leaves the analysis
// running: the caller that started it may still be waiting.
func handleGetAnalysis(svc *analyses.Analyses, heartbeat time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, ok := lookupStored(svc, w, r, heartbeat)
		if !ok {
			return
		}
		if mode := negotiate(r); mode != modeJSON {
			streamRun(w, r, run, mode, heartbeat, func() {})
			return
		}
		writeAnalysis(w, http.StatusOK, run.Snapshot())
	})
}

// handleDeleteAnalysis terminates an analysis with Argo's terminate
// semantics (no new measurements; metrics whose limits did not trip end
// Successful) and answers with the final analysis. A finished analysis is
// returned unchanged. It answers within analyses.StopTimeout whatever the run is
// doing: a run that has not stopped by then (a measurement or condition
// that does not return) is answered as it stands, 202, still Running with
// its stop under way.
func handleDeleteAnalysis(log *zap.Logger, svc *analyses.Analyses) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, ok := lookupStored(svc, w, r, 0)
		if !ok {
			return
		}
		select {
		case <-run.Done():
		default:
			run.Terminate()
			log.Info("analysis terminated by request", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", run.ID()))
		}
		switch {
		case analyses.WaitStopped(r.Context(), run):
			writeJSON(w, http.StatusOK, run.Snapshot())
		case r.Context().Err() == nil:
			log.Warn("analysis terminated by request has not stopped yet", zap.String("request_id", infoOf(r).id),
				zap.String("analysis_id", run.ID()), zap.Duration("waited", analyses.StopTimeout))
			writeJSON(w, http.StatusAccepted, run.Snapshot())
		}
	})
}

// handleEvaluate takes one round now, of the posted document or of a named
// template (read decides): one measurement of every metric. An Error round
// is a 503 with the same body, so that Argo's web provider counts an Error
// measurement rather than read an outage as a verdict. The round is kept
// under its id (analyses.Analyses.Evaluate), the Location of the answer, as one of its
// series (analyses.SeriesOf). Its request's log line is the round's only
// one: it carries the round's phase, message, series and kept (setRound).
//
// The round is answered within the caller's deadline (?timeout=,
// Request-Timeout), or defaultTimeout: a measurement still running then is
// an Error, "deadline exceeded", so the caller gets canaryd's answer rather
// than a timeout of its own, and never a hang.
func handleEvaluate(svc *analyses.Analyses, read requestReader, defaultTimeout time.Duration, deadlines *roundDeadlines) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := admit(svc, read, w, r)
		if !ok {
			return
		}
		timeout := cmp.Or(req.timeout, defaultTimeout)
		ctx, cancel := deadlines.withTimeout(r.Context(), timeout)
		defer cancel()
		plan := req.roundPlan()
		series := req.roundSeries(infoOf(r).caller)
		err := svc.Evaluate(ctx, plan, analyses.StartOptions{Template: req.template, Args: req.compiled.Args,
			Document: req.document, RawArgs: req.args, Credentials: req.document != nil && req.compiled.Credentials,
			Sources: reportSources(svc, req), Series: series},
			func(result api.Analysis, kept, late bool) {
				setRound(r, &result, series, kept)
				if kept {
					w.Header()["Location"] = []string{absoluteURL(r, "/v1/analyses/"+result.ID)}
				}
				status := http.StatusOK
				if result.Phase == api.PhaseError {
					status = http.StatusServiceUnavailable
				}
				writeRoundNow(w, status, result, late)
			})
		switch {
		case errors.Is(err, analyses.ErrTooManyRounds):
			writeProblem(w, r, tooManyRounds(svc.MaxRounds()))
		case err != nil:
			writeProblem(w, r, shuttingDown())
		}
	})
}

func lookup(svc *analyses.Analyses, w http.ResponseWriter, r *http.Request) (*analyses.Run, bool) {
	id := chi.URLParam(r, "id")
	run, ok := svc.Get(id)
	if earlier, restarted := svc.Restarted(id); !ok && restarted {
		setAnalysisID(r, id)
		writeProblem(w, r, problem(http.StatusGone, ProblemReplicaRestarted, fmt.Sprintf(
			"analysis %s is gone: this canaryd restarted after the analysis started (its id names the run that started at %s), "+
				"and with --store memory: analyses live in the memory of the run that started them; start it again "+
				"(several replicas on memory: each answer only for their own analyses: run one, or share them through --store postgres://…)",
			quote(id), earlier.UTC().Format(time.RFC3339Nano))))
		return nil, false
	}
	if !ok {
		writeProblem(w, r, problem(http.StatusNotFound, ProblemNotFound,
			"no analysis "+quote(id)+": it never existed here, or it finished longer ago than the retention period, or (with --store memory:) another replica holds it"))
		return nil, false
	}
	setAnalysisID(r, id)
	return run, true
}

func shuttingDown() api.Problem {
	return problem(http.StatusServiceUnavailable, ProblemShuttingDown,
		"canaryd is shutting down and starts no new analyses; retry against another replica")
}

// internalError logs err with the request id and answers with a 500 that
// names only the id.
func internalError(log *zap.Logger, w http.ResponseWriter, r *http.Request, err error) {
	id := infoOf(r).id
	log.Error("internal error", zap.String("request_id", id), zap.Error(err))
	writeProblem(w, r, internalProblem(id))
}

func handleNotFound() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, problem(http.StatusNotFound, ProblemNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+"; see GET /openapi.yaml"))
	}
}

// handleMethodNotAllowed answers a known path asked with another method,
// with the Allow header listing the methods it takes.
func handleMethodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if routes.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeProblem(w, r, problem(http.StatusMethodNotAllowed, ProblemMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path))
	}
}

// quote quotes a value from the request for a message, cut short: ids and
// phases are short, and anything longer is noise.
func quote(s string) string {
	const limit = 80
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return strconv.Quote(s)
}
