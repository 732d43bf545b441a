package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/canaryd/canaryd/internal/ui"
)

// routes lists the whole HTTP surface. openapi.yaml describes the same
// surface for callers; the contract tests keep the two together.
func (s *server) routes(r chi.Router) {
	// Every request has its request id, access log line, metrics and
	// panic recovery from observe, around r (New).
	r.NotFound(handleNotFound())
	r.MethodNotAllowed(handleMethodNotAllowed(r))

	// Operations: always open, so probes and scrapers need no token.
	r.Method(http.MethodGet, "/healthz", handleHealthz())
	r.Method(http.MethodGet, "/readyz", handleReadyz(s.analyses))
	r.Method(http.MethodGet, "/openapi.yaml", handleOpenAPI())
	if s.gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	}

	// The live page (internal/ui): its files hold no data and are open;
	// the page reads the API below, with the token the person gives.
	page := ui.Handler(handleNotFound())
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r.Method(method, "/ui", page)
		r.Method(method, "/ui/*", page)
	}

	// The API: behind --auth-token-file when it is set.
	v1 := r.With(requireToken(s.tokens))
	v1.Method(http.MethodPost, "/v1/analyses", handleCreateAnalysis(s.log, s.analyses, s.in.document(queryParams{wait: true, webhook: true}), s.heartbeat))
	// With a store, every replica answers for every analysis from it
	// (stored.go); with memory:, for those it holds.
	v1.Method(http.MethodGet, "/v1/analyses", handleListAnalyses(s.analyses))
	// Accept: text/html answers the analysis' HTML report (report.go).
	v1.Method(http.MethodGet, "/v1/analyses/{id}", handleAnalysisReport(s.analyses, handleGetAnalysis(s.analyses, s.heartbeat)))
	v1.Method(http.MethodDelete, "/v1/analyses/{id}", handleDeleteAnalysis(s.log, s.analyses))
	// A document checked as it would be run, its problems at their lines
	// (validate.go).
	v1.Method(http.MethodPost, "/v1/validate", handleValidate(s.in))
	v1.Method(http.MethodPost, "/v1/evaluate", handleEvaluate(s.analyses, s.in.document(queryParams{timeout: true}), s.evaluateTimeout, &s.deadlines))

	// Named templates: the same handlers, the spec coming from a loaded
	// template and the arguments from the body or the query.
	v1.Method(http.MethodGet, "/v1/templates", handleListTemplates(s.templates))
	v1.Method(http.MethodGet, "/v1/templates/{name}", handleGetTemplate(s.templates))
	v1.Method(http.MethodPost, "/v1/templates/{name}/analyses", handleCreateAnalysis(s.log, s.analyses,
		s.in.readTemplate(s.templates, queryParams{wait: true, webhook: true}, false), s.heartbeat))
	v1.Method(http.MethodPost, "/v1/templates/{name}/evaluate", handleEvaluate(s.analyses,
		s.in.readTemplate(s.templates, queryParams{timeout: true}, false), s.evaluateTimeout, &s.deadlines))

	// Backtests: the spec against history, in virtual time, answered at
	// once (backtests.go).
	v1.Method(http.MethodPost, "/v1/backtests", handleBacktest(s.log, s.analyses,
		s.in.document(queryParams{backtest: true}), s.limits))
	v1.Method(http.MethodPost, "/v1/templates/{name}/backtests", handleBacktest(s.log, s.analyses,
		s.in.readTemplate(s.templates, queryParams{backtest: true}, false), s.limits))

	// The judge's count test on counts from anywhere, as canaryd judge
	// runs it (judge.go).
	v1.Method(http.MethodPost, "/v1/judge", handleJudge(s.in, s.limits.MaxJudgeLooks))

	// Gates: run to the end, the verdict as the status. The named gate
	// also takes Flagger's webhook payload.
	v1.Method(http.MethodPost, "/v1/gates", handleGate(s.log, s.analyses,
		s.in.document(queryParams{timeout: true}), false))
	v1.Method(http.MethodPost, "/v1/gates/{name}", handleGate(s.log, s.analyses,
		s.in.readTemplate(s.templates, queryParams{timeout: true}, true), true))
}
