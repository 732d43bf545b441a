package analyses

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/promreg"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/store"
)

// StoredPlan compiles the plan of an analysis read from the store (see
// planStored), with how its metrics query; nil when it cannot be compiled
// here.
func (a *Analyses) StoredPlan(st *store.Analysis) (*analysis.Plan, map[string]report.Source) {
	if a.opts.Planner == nil {
		return nil, nil
	}
	compiled, err := a.planStored(st)
	if err != nil {
		return nil, nil
	}
	return compiled.Plan, a.ReportSources(compiled.Spec, compiled.Args)
}

// sharedSourcesSize is how many compiled specs' sources SharedSources
// keeps: as many as the HTTP layer keeps compiled specs.
const sharedSourcesSize = 256

// SharedSources is ReportSources of c's spec and arguments, made once for
// a compiled spec that many analyses share (the HTTP layer keeps the specs
// it compiled, by what they were compiled from): every analysis of it
// holds the same map, which nobody changes. It keeps the sources of the
// last sharedSourcesSize compiled specs asked for, and with them those
// specs: call it only for specs that are kept anyway, and ReportSources
// for the others.
func (a *Analyses) SharedSources(c *compile.Compiled) map[string]report.Source {
	if last := a.lastSources.Load(); last != nil && last.compiled == c {
		// Asked again in a row, as one caller's rounds are: answered
		// without the cache's lock, whose order the first ask set.
		return last.sources
	}
	s, ok := a.sharedSources.Get(c)
	if !ok {
		s = a.ReportSources(c.Spec, c.Args)
		a.sharedSources.Add(c, s)
	}
	a.lastSources.Store(&compiledSources{compiled: c, sources: s})
	return s
}

// compiledSources are a compiled spec's sources (SharedSources).
type compiledSources struct {
	compiled *compile.Compiled
	sources  map[string]report.Source
}

// ReportSources are how a resolved spec's metrics query, as its report
// shows them (report.SourcesOf): a metric that names its Prometheus'
// address (an allowed datasource's) links to that Prometheus' graph; one
// that names none queries the default datasource, whose address the report
// does not give: it links to --prometheus-external-url's graph when that
// is set, and otherwise has no link and a curl that reads $PROMETHEUS_URL.
// args are the values the spec was resolved with: secret ones are kept
// out.
func (a *Analyses) ReportSources(s *spec.Spec, args map[string]string) map[string]report.Source {
	var providers report.Providers
	if a.opts.Planner != nil {
		providers = a.opts.Planner.Providers()
	}
	return report.SourcesOf(s, args, providers, func(address string) string {
		if address == "" {
			return a.opts.PrometheusExternalURL
		}
		return redact.URLString(address)
	})
}

// newReportRenderer is what the HTML reports of opts' Analyses share
// (report.Renderer), with canaryd_report_queries_total counting their
// range queries by outcome.
func newReportRenderer(opts AnalysesOptions) (*report.Renderer, error) {
	f, registered := promreg.With(opts.Registerer)
	queries := f.NewCounterVec(prometheus.CounterOpts{
		Name: "canaryd_report_queries_total",
		Help: "Range queries of the HTML reports, one per metric drawn, by outcome: answered, failed, cached (drawn from the cache, none sent), rate_limited (not sent: --report-query-rate), not_run (not sent: the report's budget spent, or 4 reports sending theirs).",
	}, []string{"outcome"})
	for _, o := range report.QueryOutcomes {
		queries.WithLabelValues(o)
	}
	if err := registerErr(registered()); err != nil {
		return nil, err
	}
	return report.NewRenderer(report.RendererOptions{
		CacheBytes: opts.ReportCacheBytes,
		QueryRate:  opts.ReportQueryRate,
		Counted:    func(outcome string) { queries.WithLabelValues(outcome).Inc() },
	}), nil
}
