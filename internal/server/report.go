package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promreg"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/store"
)

const htmlContentType = "text/html"

// wantsHTML reports whether the request asks for text/html (a browser
// does, and a caller that wants the report to keep): Accept names it with
// a quality above 0, and not below application/json's when both are
// named. */* alone is not a request for HTML.
func wantsHTML(r *http.Request) bool {
	html, json := -1.0, -1.0
	for _, header := range r.Header.Values("Accept") {
		for _, part := range strings.Split(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					q = f
				}
			}
			switch mt {
			case htmlContentType, "application/xhtml+xml":
				html = max(html, q)
			case jsonContentType:
				json = max(json, q)
			}
		}
	}
	return html > 0 && html >= json
}

// handleAnalysisReport answers GET /v1/analyses/{id} with the analysis'
// HTML report when the request asks for text/html (wantsHTML), and leaves
// every other request to next: the same route, so the same token guards
// both. With a store, an analysis another replica runs is reported from
// the store, with its plan compiled again here as a replica resuming it
// would (planStored); when it cannot be (its template is not served here,
// its secrets cannot be opened), without it: its metrics by name, no
// shaded bands, no series.
//
// At most --max-report-renders reports are drawn at once (the request's
// store read included); one more is a 429 naming the flag.
func handleAnalysisReport(analyses *Analyses, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wantsHTML(r) {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case analyses.renders <- struct{}{}:
			defer func() { <-analyses.renders }()
		default:
			writeProblem(w, r, tooManyReports(cap(analyses.renders)))
			return
		}
		id := chi.URLParam(r, "id")
		if _, held := analyses.Get(id); !held && analyses.opts.Store != nil {
			ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
			a, err := analyses.opts.Store.Get(ctx, id)
			cancel()
			switch {
			case errors.Is(err, store.ErrNotFound):
				// lookup answers, as for the JSON.
			case err != nil:
				writeProblem(w, r, storeUnavailable())
				return
			default:
				setAnalysisID(r, id)
				plan, sources := analyses.storedPlan(a)
				writeHTMLReport(r.Context(), w, analyses.reports, id, a.State, plan, sources)
				return
			}
		}
		run, ok := lookup(analyses, w, r)
		if !ok {
			return
		}
		var plan *analysis.Plan
		if run.Run != nil {
			plan = run.Plan()
		}
		writeHTMLReport(r.Context(), w, analyses.reports, id, run.Snapshot(), plan, run.sources)
	})
}

// storedPlan compiles the plan of an analysis read from the store (see
// planStored), with how its metrics query; nil when it cannot be compiled
// here.
func (a *Analyses) storedPlan(st *store.Analysis) (*analysis.Plan, map[string]report.Source) {
	if a.opts.Planner == nil {
		return nil, nil
	}
	compiled, err := a.planStored(st)
	if err != nil {
		return nil, nil
	}
	return compiled.Plan, a.reportSources(compiled.Spec, compiled.Args)
}

// writeHTMLReport answers with the analysis as one self-contained HTML file
// (internal/report). The page loads nothing and runs nothing, and says so
// to the browser too (Content-Security-Policy). Drawing it evaluates each
// metric's conditions at a bounded number of values for a bounded time
// (report.RegionSamples, report.RegionBudget), over at most
// report.MaxChartPoints measurements a metric. With the plan, each
// Prometheus metric's query is run over the analysis' window through the
// metric's own source, for the chart beneath its measurements
// (report.FetchSeries: one query at a time, at most
// report.MaxChartPoints points and report.MaxSeriesDrawn series each,
// report.SeriesBudget in all, and no longer than the request). The
// reports share rd: its pool to shade on, its rate of range queries, and
// its cache, in which this one's bands and series are kept under id.
func writeHTMLReport(ctx context.Context, w http.ResponseWriter, rd *report.Renderer, id string, a api.Analysis, plan *analysis.Plan, sources map[string]report.Source) {
	var r *report.Report
	if plan != nil {
		r = report.New(a, plan.Metrics)
	} else {
		// An analysis without its plan (one from the store) is still
		// shown: its metrics from its results, counters without limits.
		r = report.NewFromAnalysis(a)
	}
	r.Sources = sources
	r.Renderer, r.Key = rd, id
	answerReport(ctx, w, r, a)
}

// answerReport answers with the report r as one self-contained HTML file,
// the query's series fetched first (report.FetchSeries, within its
// bounds), or, should the template fail (a bug of its own), with the JSON
// of fallback.
func answerReport(ctx context.Context, w http.ResponseWriter, r *report.Report, fallback api.Analysis) {
	r.FetchSeries(ctx)
	var buf bytes.Buffer
	if err := r.HTML(&buf); err != nil {
		writeJSON(w, http.StatusOK, fallback)
		return
	}
	h := w.Header()
	h.Set("Content-Type", htmlContentType+"; charset=utf-8")
	// frame-ancestors is obeyed in a header only, not in the report's meta.
	h.Set("Content-Security-Policy", report.ContentSecurityPolicy+"; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// reportSources are how a resolved spec's metrics query, as its report
// shows them (report.SourcesOf): a metric that names its Prometheus'
// address (an allowed datasource's) links to that Prometheus' graph; one
// that names none queries the default datasource, whose address the report
// does not give: it links to --prometheus-external-url's graph when that
// is set, and otherwise has no link and a curl that reads $PROMETHEUS_URL.
// args are the values the spec was resolved with: secret ones are kept
// out.
func (a *Analyses) reportSources(s *spec.Spec, args map[string]string) map[string]report.Source {
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

// tooManyReports is the 429 beyond --max-report-renders.
func tooManyReports(max int) api.Problem {
	return problem(http.StatusTooManyRequests, ProblemTooManyReports, fmt.Sprintf(
		"%d HTML reports are being drawn, the most this canaryd draws at once (--max-report-renders); retry later, or ask for the JSON", max))
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
