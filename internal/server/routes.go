package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes lists the whole HTTP surface. openapi.yaml describes the same
// surface for callers; the contract tests keep the two together.
func (s *server) routes(r chi.Router) {
	// Every request: request id, access log, metrics, panic recovery.
	r.Use(s.observe)
	r.NotFound(handleNotFound())
	r.MethodNotAllowed(handleMethodNotAllowed(r))

	// Operations: always open, so probes and scrapers need no token.
	r.Method(http.MethodGet, "/healthz", handleHealthz())
	r.Method(http.MethodGet, "/readyz", handleReadyz(s.analyses))
	r.Method(http.MethodGet, "/openapi.yaml", handleOpenAPI())
	if s.gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	}

	// The API: behind --auth-token-file when it is set.
	v1 := r.With(requireToken(s.tokens))
	v1.Method(http.MethodPost, "/v1/analyses", handleCreateAnalysis(s.log, s.analyses, s.in, s.heartbeat))
	v1.Method(http.MethodGet, "/v1/analyses", handleListAnalyses(s.analyses))
	v1.Method(http.MethodGet, "/v1/analyses/{id}", handleGetAnalysis(s.analyses, s.heartbeat))
	v1.Method(http.MethodDelete, "/v1/analyses/{id}", handleDeleteAnalysis(s.log, s.analyses))
	v1.Method(http.MethodPost, "/v1/evaluate", handleEvaluate(s.analyses, s.in))

	// Named templates and gates (a later change) go here, beside the
	// routes above:
	//   GET  /v1/templates, /v1/templates/{name}
	//   POST /v1/templates/{name}/analyses, /v1/templates/{name}/evaluate
	//   POST /v1/gates, /v1/gates/{name}
	// Their handlers take the same inputReader and Analyses; only the
	// source of the spec (a loaded template, a body of args) differs.
}
