package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/spec"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds a request body (limits.MaxBodyBytes).
	DefaultMaxBodyBytes = limits.MaxBodyBytes
	// DefaultMaxDecodes bounds the request bodies decoded at once
	// (limits.MaxDecodes).
	DefaultMaxDecodes = limits.MaxDecodes
	// DefaultHeartbeatInterval is how often an idle stream gets a
	// heartbeat, well inside the 60 s idle timeout of common proxies, so
	// that a quiet stream is not cut (which would terminate its analysis).
	DefaultHeartbeatInterval = 15 * time.Second
	// bodyReadTimeout bounds the reading of a request body. It is set per
	// request because a server-wide ReadTimeout would also cut waits and
	// streams, which read nothing for as long as an analysis lasts.
	bodyReadTimeout = 30 * time.Second
	// DefaultEvaluateTimeout bounds a round of the evaluate endpoints when
	// the caller sets no deadline (limits.EvaluateTimeout).
	DefaultEvaluateTimeout = limits.EvaluateTimeout
)

// Options configure the HTTP API.
type Options struct {
	// Logger receives the access log and internal errors. Nop when nil.
	Logger *zap.Logger
	// Registerer receives the HTTP metrics; none are kept when nil.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics; /metrics is not served when nil.
	Gatherer prometheus.Gatherer
	// Analyses runs and holds the analyses. Required.
	Analyses *analyses.Analyses
	// Planner compiles the specs of requests: the service's providers
	// (they decide where a spec's metrics may send requests), limits and
	// shared conditions. The analyses' planner (analyses.AnalysesOptions.Planner)
	// is the same one. When nil, one is made of Providers, Limits and
	// Templates.
	Planner *compile.Planner
	// Providers build each metric's source, found by the name of the
	// metric's provider (a provider.Registry), when Planner is nil.
	Providers compile.Providers
	// AuthTokens, when any, are the bearer tokens every /v1 call needs.
	// (Webhooks are the Analyses' to check and send: see
	// analyses.AnalysesOptions.Webhooks.)
	AuthTokens []string
	// Tokens, when set, replaces AuthTokens: a set the caller may replace
	// while the server runs (a reloaded --auth-token-file).
	Tokens *Tokens
	// Limits bound what one caller can make this canaryd do; zero fields
	// take their defaults (limits.Limits.WithDefaults). The server holds a
	// request to those of a spec (SpecLimits), of a backtest's window and
	// of POST /v1/judge; those of what runs (analyses, backtests, rounds
	// and streams at once, an analysis' duration) are the Analyses' to
	// enforce (AnalysesOptions).
	Limits limits.Limits
	// MaxBodyBytes bounds request bodies; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// MaxDecodes is how many request bodies may be decoded (parsed,
	// checked, compiled) at once; DefaultMaxDecodes when 0. One more waits
	// for a slot, at most DecodeWait (limits.DecodeWait when 0), unless
	// MaxDecodeWaiters wait already (limits.MaxDecodeWaiters when 0): then,
	// or after the wait, it is a 429.
	MaxDecodes       int
	MaxDecodeWaiters int
	DecodeWait       time.Duration
	// HeartbeatInterval is how often idle streams get a heartbeat;
	// DefaultHeartbeatInterval when 0.
	HeartbeatInterval time.Duration
	// Templates serves the named templates of /v1/templates and
	// /v1/gates/{name}; nil when canaryd runs without --templates (the list
	// is then empty and every name is a 404).
	Templates TemplateStore
	// EvaluateTimeout is how long a round of the evaluate endpoints may
	// take when the caller sets no deadline of its own (?timeout=,
	// Request-Timeout); DefaultEvaluateTimeout when 0.
	EvaluateTimeout time.Duration
}

// server is what the handlers share.
type server struct {
	log       *zap.Logger
	analyses  *analyses.Analyses
	in        *inputReader
	tokens    *Tokens
	limits    limits.Limits
	metrics   *httpMetrics
	gatherer  prometheus.Gatherer
	heartbeat time.Duration
	templates TemplateStore
	// evaluateTimeout is the default deadline of a round.
	evaluateTimeout time.Duration
	// deadlines are the deadlines the rounds share.
	deadlines roundDeadlines
	// routeLabels are the route patterns served: the values the route
	// label of the HTTP metrics may take, with unmatchedRoute and
	// otherLabel.
	routeLabels map[string]bool
}

// TemplateLookup is the compile.TemplateLookup of the templates ts serves.
func TemplateLookup(ts TemplateStore) compile.TemplateLookup {
	if ts == nil {
		return nil
	}
	return func(name string) (*spec.Document, bool) {
		t, ok := ts.Get(name)
		if !ok {
			return nil, false
		}
		return t.Document, true
	}
}

// unmatchedRoute is the route label of a request no route matched.
const unmatchedRoute = "unmatched"

// New returns the HTTP API. The handler does not own the analyses: the
// caller drains them (analyses.Analyses.Drain) before shutting the HTTP server down,
// so that waiters and streams receive their final result.
func New(opts Options) (http.Handler, error) {
	if opts.Analyses == nil || (opts.Planner == nil && opts.Providers == nil) {
		return nil, errors.New("server: Options.Analyses and Options.Planner (or Providers) are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxDecodeWaiters <= 0 {
		opts.MaxDecodeWaiters = limits.MaxDecodeWaiters
	}
	if opts.DecodeWait <= 0 {
		opts.DecodeWait = limits.DecodeWait
	}
	if opts.MaxDecodes <= 0 {
		opts.MaxDecodes = DefaultMaxDecodes
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.EvaluateTimeout <= 0 {
		opts.EvaluateTimeout = DefaultEvaluateTimeout
	}
	if opts.Templates == nil {
		opts.Templates = noTemplates{}
	}
	metrics, err := newHTTPMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	lim := opts.Limits.WithDefaults()
	planner := opts.Planner
	if planner == nil {
		planner = compile.NewPlanner(compile.PlannerOptions{Providers: opts.Providers,
			Run:       []compile.Option{compile.WithLimits(lim.SpecLimits(opts.Analyses.Options().MaxDuration))},
			Backtest:  []compile.Option{compile.WithLimits(lim.SpecLimits(0))},
			Templates: TemplateLookup(opts.Templates)})
	}
	s := &server{
		log:      opts.Logger,
		analyses: opts.Analyses,
		in: &inputReader{
			maxBody:      opts.MaxBodyBytes,
			decodes:      newDecodeGate(opts.MaxDecodes, opts.MaxDecodeWaiters, opts.DecodeWait, metrics.decodesWaiting),
			planner:      planner,
			sources:      planner.Providers(),
			checkWebhook: opts.Analyses.CheckWebhook,
			now:          opts.Analyses.Clock().Now,
			compiled:     newCompiledCache(defaultCompiledCacheSize),
		},
		limits:          lim,
		metrics:         metrics,
		gatherer:        opts.Gatherer,
		heartbeat:       opts.HeartbeatInterval,
		templates:       opts.Templates,
		evaluateTimeout: opts.EvaluateTimeout,
	}
	s.tokens = opts.Tokens
	if s.tokens == nil {
		if s.tokens, err = NewTokens(opts.AuthTokens); err != nil {
			return nil, err
		}
	}
	r := chi.NewRouter()
	s.routes(r)
	s.routeLabels = map[string]bool{}
	err = chi.Walk(r, func(_ string, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		s.routeLabels[route] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.observe(r), nil
}
