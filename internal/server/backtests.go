package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/instant"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promreg"
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

// ErrTooManyBacktests is Analyses.Backtest's error when --max-backtests
// backtests are already running.
var ErrTooManyBacktests = errors.New("too many backtests running")

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

// starts returns the instants the analyses of w start at, as
// analysis.BacktestSeries starts them, and false once there would be more
// than limit.
func (w backtestWindow) starts(limit int) ([]time.Time, bool) {
	if w.every <= 0 {
		return []time.Time{w.start}, true
	}
	var out []time.Time
	for at := w.start; at.Before(w.end) || at.Equal(w.start); at = at.Add(w.every) {
		if len(out) == limit {
			return out, false
		}
		out = append(out, at)
	}
	return out, true
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
	starts, ok := w.starts(limits.MaxBacktestStarts)
	if !ok {
		return []api.FieldError{{Field: paramEvery, Message: fmt.Sprintf(
			"every %s from start to end starts more than %d analyses, the most one backtest may start here (--max-backtest-starts); take a longer every or a shorter window",
			w.every, limits.MaxBacktestStarts)}}
	}
	total := 0
	for _, at := range starts {
		total += measurementsWithin(plan, w.end.Sub(at))
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

// measurementsWithin is how many measurements plan's metrics take at most
// in a backtest whose horizon is span after its start, by their schedules:
// a metric measures at its initialDelay and every interval after, up to its
// count. (An Error measurement does not count towards a count; the retries
// it causes are left out of this estimate.)
func measurementsWithin(plan *analysis.Plan, span time.Duration) int {
	total := 0
	for i := range plan.Metrics {
		m := &plan.Metrics[i]
		if m.InitialDelay > span {
			continue
		}
		n := int64(1)
		if m.Interval > 0 {
			n += int64((span - m.InitialDelay) / m.Interval)
		}
		if m.Count != nil && int64(*m.Count) < n {
			n = int64(*m.Count)
		}
		total += int(min(n, 1<<31))
	}
	return total
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
func handleBacktest(log *zap.Logger, analyses *Analyses, read requestReader, limits limits.Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, ok := admit(analyses, read, w, r)
		if !ok {
			return
		}
		if errs := checkBacktest(req.compiled.Plan, req.window, limits); len(errs) > 0 {
			writeProblem(w, r, invalidInput(errs))
			return
		}
		id := newID()
		setAnalysisID(r, id)
		results, err := analyses.Backtest(r.Context(), req.compiled.Plan, req.window, analysis.Options{ID: id, Template: req.template, Args: req.compiled.Args})
		switch {
		case errors.Is(err, ErrDraining):
			writeProblem(w, r, shuttingDown())
			return
		case errors.Is(err, ErrTooManyBacktests):
			writeProblem(w, r, problem(http.StatusTooManyRequests, ProblemTooManyAnalyses,
				"the limit of backtests running at once (--max-backtests) is reached; retry later"))
			return
		case err != nil:
			// The caller hung up: there is nobody to answer.
			log.Info("client went away; backtest stopped", zap.String("request_id", infoOf(r).id), zap.String("analysis_id", id))
			return
		}
		if wantsHTML(r) {
			writeBacktestReport(r.Context(), w, analyses.reports, results, req, analyses.reportSources(req.compiled.Spec, req.compiled.Args))
			return
		}
		if req.window.every <= 0 {
			writeJSON(w, http.StatusOK, results[0].Analysis)
			return
		}
		writeJSON(w, http.StatusOK, BacktestSeries{Start: req.window.start, End: req.window.end, Every: req.window.every.String(), Results: results})
	})
}

// backtests are the backtests running in one service: how many, and the
// means to stop them at shutdown.
type backtests struct {
	// stop cancels every backtest's context with ErrDraining as its cause.
	ctx  context.Context
	stop context.CancelCauseFunc
	// wg counts the running backtests; Add happens under Analyses.mu while
	// not draining, so never after Drain waits on it.
	wg      sync.WaitGroup
	running int // under Analyses.mu

	total   *prometheus.CounterVec
	current prometheus.Gauge
}

func newBacktests(reg prometheus.Registerer) (*backtests, error) {
	ctx, stop := context.WithCancelCause(context.Background())
	f, registered := promreg.With(reg)
	b := &backtests{
		ctx:  ctx,
		stop: stop,
		total: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_backtests_total",
			Help: "Backtests run, by outcome: completed, canceled (the caller hung up), stopped (shutdown).",
		}, []string{"outcome"}),
		current: f.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_backtests_running",
			Help: "Backtests running now.",
		}),
	}
	if err := registerErr(registered()); err != nil {
		return nil, err
	}
	return b, nil
}

// Backtest runs plan over the window in virtual time, one analysis or, with
// every, a series of them (see analysis.Backtest and
// analysis.BacktestSeries). It fails with ErrDraining while the service shuts
// down (also when a shutdown stops it midway: its result would be cut
// short), with ErrTooManyBacktests at the limit of backtests running, and
// with ctx's error when ctx ends first.
func (a *Analyses) Backtest(ctx context.Context, plan *analysis.Plan, w backtestWindow, opts analysis.Options) ([]analysis.BacktestResult, error) {
	b := a.backtests
	a.mu.Lock()
	switch {
	case a.draining:
		a.mu.Unlock()
		return nil, ErrDraining
	case b.running >= a.opts.MaxBacktests:
		a.mu.Unlock()
		return nil, ErrTooManyBacktests
	}
	b.running++
	b.wg.Add(1)
	a.mu.Unlock()
	b.current.Inc()
	defer func() {
		a.mu.Lock()
		b.running--
		a.mu.Unlock()
		b.current.Dec()
		b.wg.Done()
	}()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(b.ctx, func() { cancel(ErrDraining) })
	defer stop()

	opts.Args = redactArgs(opts.Args)
	log := a.log.With(zap.String("analysis_id", opts.ID))
	log.Info("backtest started", zap.Time("start", w.start), zap.Time("end", w.end), zap.Duration("every", w.every),
		zap.Strings("metrics", metricNames(plan)), zap.String("template", opts.Template), zap.Any("args", opts.Args))
	began := time.Now()
	// Measurements of a backtest are of the past: they are not counted
	// with the service's own (canaryd_measurements_total), and the run's
	// bound on duration does not apply in virtual time.
	opts.ErrorRetryInterval = a.opts.ErrorRetryInterval
	opts.MaxDuration = 0
	var results []analysis.BacktestResult
	if w.every > 0 {
		results = analysis.BacktestSeries(ctx, plan, w.start, w.end, w.every, opts)
	} else {
		results = []analysis.BacktestResult{{Start: w.start, Analysis: analysis.Backtest(ctx, plan, w.start, w.end, opts)}}
	}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		outcome := "canceled"
		if errors.Is(cause, ErrDraining) {
			outcome = "stopped"
		}
		b.total.WithLabelValues(outcome).Inc()
		log.Info("backtest stopped before it finished", zap.String("outcome", outcome), zap.Duration("duration", time.Since(began)))
		if errors.Is(cause, ErrDraining) {
			return nil, ErrDraining
		}
		return nil, cause
	}
	b.total.WithLabelValues("completed").Inc()
	phases := make([]string, len(results))
	for i, r := range results {
		phases[i] = string(r.Analysis.Phase)
	}
	log.Info("backtest finished", zap.Strings("phases", phases), zap.Duration("duration", time.Since(began)))
	return results, nil
}

// drainBacktests waits for the running backtests until ctx is done, then
// stops those left and waits for them to return, which they do promptly:
// their queries honour their contexts. It returns how many it stopped.
func (a *Analyses) drainBacktests(ctx context.Context) int {
	b := a.backtests
	done := make(chan struct{})
	// Ends when the last running backtest returns: at once after stop.
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return 0
	case <-ctx.Done():
	}
	a.mu.Lock()
	left := b.running
	a.mu.Unlock()
	b.stop(ErrDraining)
	// A backtest stops at once; one whose condition does not return is
	// left behind rather than hold the shutdown beyond its bound.
	stopped := time.NewTimer(stopTimeout)
	defer stopped.Stop()
	select {
	case <-done:
	case <-stopped.C:
		a.log.Error("backtests left running at shutdown: they did not stop within " + stopTimeout.String())
	}
	if left > 0 {
		a.log.Warn("backtests stopped: the shutdown grace period ran out", zap.Int("backtests", left))
	}
	return left
}
