package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/instant"
	"github.com/canaryd/canaryd/internal/limits"
)

// Query parameters of the backtest endpoints.
const (
	paramStart = "start"
	paramEnd   = "end"
	paramEvery = "every"
)

// reportedParam stands for a window parameter the query has already
// reported a problem with (given twice): readWindow says nothing more of it.
const reportedParam = "\x00reported"

// BacktestSeries is the body of a backtest with ?every=: where in the window
// the spec would have fired. It is what `canaryd backtest --every` prints.
type BacktestSeries struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Every is a Go duration ("10m0s").
	Every   string                    `json:"every"`
	Results []analysis.BacktestResult `json:"results"`
}

// backtestWindow is what a backtest replays: from start to end, one
// analysis, or one every every when every is not 0.
type backtestWindow struct {
	start, end time.Time
	every      time.Duration
}

// readWindow reads a backtest's start (required), end (default now) and
// every (default none) from the query, on the routes that take them. Times
// are RFC 3339, Unix seconds or a duration relative to now, as `canaryd
// backtest` takes them. Each problem names its parameter.
func (req *specRequest) readWindow(params queryParams, now time.Time) []api.FieldError {
	if !params.backtest {
		return nil
	}
	var errs []api.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, api.FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	start, err := instant.Parse(req.rawWindow[paramStart], now)
	startOK := err == nil
	if err != nil && req.rawWindow[paramStart] != reportedParam {
		add(paramStart, "%v", err)
	}
	end, endOK := now, true
	switch v, given := req.rawWindow[paramEnd]; {
	case v == reportedParam:
		endOK = false
	case given:
		if end, err = instant.Parse(v, now); err != nil {
			add(paramEnd, "%v", err)
			endOK = false
		}
	}
	if startOK && endOK && !end.After(start) {
		add(paramEnd, "end (%s) must be after start (%s)", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	var every time.Duration
	if v, given := req.rawWindow[paramEvery]; given && v != reportedParam {
		every, err = time.ParseDuration(v)
		switch {
		case err != nil:
			add(paramEvery, "must be a Go duration such as 10m or 1h, got %q", v)
		case every <= 0:
			add(paramEvery, "must be a positive duration, got %q", v)
		}
	}
	req.window = backtestWindow{start: start, end: end, every: every}
	return errs
}

// checkBacktest bounds the work of a backtest before it runs: the length of
// its window, the number of analyses a series starts, and the measurements
// its schedule would take. Each problem names the query parameter that
// would bring it within bounds.
func checkBacktest(plan *analysis.Plan, w backtestWindow, limits limits.Limits) []api.FieldError {
	if span := w.end.Sub(w.start); span > limits.MaxBacktestWindow {
		return []api.FieldError{{Field: paramEnd, Message: fmt.Sprintf(
			"the window from start to end is %s, longer than a backtest may replay here (--max-backtest-window %s); move start or end closer",
			span, limits.MaxBacktestWindow)}}
	}
	starts, ok := analysis.BacktestStarts(w.start, w.end, w.every, limits.MaxBacktestStarts)
	if !ok {
		return []api.FieldError{{Field: paramEvery, Message: fmt.Sprintf(
			"every %s from start to end starts more than %d analyses, the most one backtest may start here (--max-backtest-starts); take a longer every or a shorter window",
			w.every, limits.MaxBacktestStarts)}}
	}
	total := 0
	for _, at := range starts {
		total += plan.MeasurementsWithin(w.end.Sub(at))
		if total > limits.MaxBacktestMeasurements {
			field, advice := paramEnd, "a shorter window"
			if w.every > 0 {
				field, advice = paramEvery, "a longer every or a shorter window"
			}
			return []api.FieldError{{Field: field, Message: fmt.Sprintf(
				"the metrics' schedules would take more than %d measurements in this backtest, the most one may take here (--max-backtest-measurements); take %s",
				limits.MaxBacktestMeasurements, advice)}}
		}
	}
	return nil
}

// handleBacktest runs the spec that read makes of the request against
// history, in virtual time (analysis.Backtest), and answers at once with the
// analysis, or with the series (BacktestSeries) when the query has every;
// with Accept: text/html, with its HTML report (writeBacktestReport).
// Nothing is kept: the analyses exist only in the answer.
//
// A caller that hangs up stops the backtest; a shutdown stops it at the end
// of the grace period, and its caller gets a 503 rather than an analysis
// that was cut short.
func handleBacktest(log *zap.Logger, svc *analyses.Analyses, read requestReader, limits limits.Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := admit(svc, read, w, r)
		if !ok {
			return
		}
		if errs := checkBacktest(req.compiled.Plan, req.window, limits); len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		id := analyses.NewID()
		setAnalysisID(r, id)
		results, err := svc.Backtest(r.Context(), req.compiled.Plan, analyses.Window{Start: req.window.start, End: req.window.end, Every: req.window.every}, analysis.Options{ID: id, Template: req.template, Args: req.compiled.Args})
		switch {
		case errors.Is(err, analyses.ErrDraining):
			writeProblem(w, r, shuttingDown())
			return
		case errors.Is(err, analyses.ErrTooManyBacktests):
			writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyAnalyses,
				"the limit of backtests running at once (--max-backtests) is reached; retry later"))
			return
		case err != nil:
			// The caller hung up: there is nobody to answer.
			log.Info("client went away; backtest stopped", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", id))
			return
		}
		if wantsHTML(r) {
			writeBacktestReport(r.Context(), w, svc.Reports(), results, req, svc.ReportSources(req.compiled.Spec, req.compiled.Args))
			return
		}
		if req.window.every <= 0 {
			writeJSON(w, http.StatusOK, results[0].Analysis)
			return
		}
		writeJSON(w, http.StatusOK, BacktestSeries{Start: req.window.start, End: req.window.end, Every: req.window.every.String(), Results: results})
	})
}
