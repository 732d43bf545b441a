package analyses

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promreg"
)

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
func (a *Analyses) Backtest(ctx context.Context, plan *analysis.Plan, w Window, opts analysis.Options) ([]analysis.BacktestResult, error) {
	b := a.backtests
	a.mu.Lock()
	switch {
	case a.draining.Load():
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

	opts.Args = RedactArgs(opts.Args)
	log := a.log.With(zap.String("analysis_id", opts.ID))
	log.Info("backtest started", zap.Time("start", w.Start), zap.Time("end", w.End), zap.Duration("every", w.Every),
		zap.Strings("metrics", MetricNames(plan)), zap.String("template", opts.Template), zap.Any("args", opts.Args))
	began := time.Now()
	// Measurements of a backtest are of the past: they are not counted
	// with the service's own (canaryd_measurements_total), and the run's
	// bound on duration does not apply in virtual time.
	opts.ErrorRetryInterval = a.opts.ErrorRetryInterval
	opts.MaxDuration = 0
	var results []analysis.BacktestResult
	if w.Every > 0 {
		results = analysis.BacktestSeries(ctx, plan, w.Start, w.End, w.Every, opts)
	} else {
		results = []analysis.BacktestResult{{Start: w.Start, Analysis: analysis.Backtest(ctx, plan, w.Start, w.End, opts)}}
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
	stopped := time.NewTimer(StopTimeout)
	defer stopped.Stop()
	select {
	case <-done:
	case <-stopped.C:
		a.log.Error("backtests left running at shutdown: they did not stop within " + StopTimeout.String())
	}
	if left > 0 {
		a.log.Warn("backtests stopped: the shutdown grace period ran out", zap.Int("backtests", left))
	}
	return left
}

// ErrTooManyBacktests is Analyses.Backtest's error when --max-backtests
// backtests are already running.
var ErrTooManyBacktests = errors.New("too many backtests running")

// Window is what a backtest replays: from Start to End, one analysis, or
// one every Every when Every is not 0.
type Window struct {
	Start, End time.Time
	Every      time.Duration
}
