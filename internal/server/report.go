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

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/report"
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
func handleAnalysisReport(svc *analyses.Analyses, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wantsHTML(r) {
			next.ServeHTTP(w, r)
			return
		}
		release, ok := svc.AcquireRender()
		if !ok {
			writeProblem(w, r, tooManyReports(svc.Options().MaxReportRenders))
			return
		}
		defer release()
		id := chi.URLParam(r, "id")
		if _, held := svc.Get(id); !held && svc.SharedStore() {
			ctx, cancel := context.WithTimeout(r.Context(), analyses.StoreTimeout)
			a, err := svc.Stored(ctx, id)
			cancel()
			switch {
			case errors.Is(err, analyses.ErrNotFound):
				// lookup answers, as for the JSON.
			case err != nil:
				writeProblem(w, r, storeUnavailable())
				return
			default:
				setAnalysisID(r, id)
				state, plan, sources := svc.StoredReport(a)
				writeHTMLReport(r.Context(), w, svc.Reports(), id, state, plan, sources)
				return
			}
		}
		run, ok := lookup(svc, w, r)
		if !ok {
			return
		}
		var plan *analysis.Plan
		if run.Run != nil {
			plan = run.Plan()
		}
		writeHTMLReport(r.Context(), w, svc.Reports(), id, run.Snapshot(), plan, run.Sources())
	})
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

// tooManyReports is the 429 beyond --max-report-renders.
func tooManyReports(max int) api.Problem {
	return problem(http.StatusTooManyRequests, ProblemTooManyReports, fmt.Sprintf(
		"%d HTML reports are being drawn, the most this canaryd draws at once (--max-report-renders); retry later, or ask for the JSON", max))
}
