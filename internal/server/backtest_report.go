package server

import (
	"context"
	"net/http"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/report"
)

// writeBacktestReport answers a backtest with its HTML report, as
// `canaryd backtest --report` writes it: a series' strip of verdicts over
// time above the report of the first analysis that would have failed (of
// the last when none would), or the report of the one analysis, each
// Prometheus metric's query drawn over that analysis' window
// (report.FetchSeries, bounded as for GET /v1/analyses/{id}: rd's pool to
// shade on and rate of range queries). It costs what the report of one
// analysis costs, once: nothing of it is cached, a backtest having no id,
// and it is not counted against --max-report-renders, the backtest being
// counted against --max-backtests.
func writeBacktestReport(ctx context.Context, w http.ResponseWriter, rd *report.Renderer, results []analysis.BacktestResult, req *specRequest, sources map[string]report.Source) {
	metrics := req.compiled.Plan.Metrics
	var r *report.Report
	if req.window.every > 0 {
		r = report.NewSeries(results, metrics)
	} else {
		r = report.New(results[0].Analysis, metrics)
	}
	r.Sources = sources
	r.Renderer = rd
	answerReport(ctx, w, r, results[0].Analysis)
}
