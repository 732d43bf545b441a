package server

import (
	"bytes"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
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
// both.
func handleAnalysisReport(analyses *Analyses, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wantsHTML(r) {
			next.ServeHTTP(w, r)
			return
		}
		run, ok := lookup(analyses, w, r)
		if !ok {
			return
		}
		writeReport(w, run)
	})
}

// writeReport answers with the analysis as one self-contained HTML file
// (internal/report). The page loads nothing and runs nothing, and says so
// to the browser too (Content-Security-Policy). Drawing it evaluates each
// metric's conditions at a bounded number of values for a bounded time
// (report.RegionSamples, report.RegionBudget), over at most
// report.MaxChartPoints measurements a metric.
func writeReport(w http.ResponseWriter, run *Run) {
	a := run.Snapshot()
	var metrics []analysis.Metric
	if plan := run.Plan(); plan != nil {
		metrics = plan.Metrics
	} else {
		// A run without its plan is still shown: its metrics by name,
		// without their conditions and limits.
		for _, m := range a.MetricResults {
			metrics = append(metrics, analysis.Metric{Name: m.Name, DryRun: m.DryRun, FailureLimit: -1})
		}
	}
	var buf bytes.Buffer
	r := report.New(a, metrics)
	r.Sources = run.sources
	if err := r.HTML(&buf); err != nil {
		// html/template fails only on a template bug: the JSON still
		// answers.
		writeJSON(w, http.StatusOK, a)
		return
	}
	h := w.Header()
	h.Set("Content-Type", htmlContentType+"; charset=utf-8")
	h.Set("Content-Security-Policy", report.ContentSecurityPolicy)
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
// does not give (no link, and a curl that reads $PROMETHEUS_URL). args are
// the values the spec was resolved with: secret ones are kept out.
func reportSources(s *spec.Spec, args map[string]string) map[string]report.Source {
	return report.SourcesOf(s, args, redact.URLString)
}
