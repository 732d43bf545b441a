package analysis

import (
	"context"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// Backtest runs plan in virtual time from start: every scheduled measurement
// is taken as of its own instant (sources are asked for data at that past
// time), with exactly the limits and phases of a live run, and the result
// comes back as fast as the sources answer. A measurement takes no virtual
// time. A run still going when its next measurement would fall after end is
// terminated there, as Argo terminates a background analysis: metrics whose
// limits did not trip end Successful.
//
// Conditions that call now() read the wall clock, not the virtual one;
// rangeQuery windows, which is where time matters, follow the virtual clock.
func Backtest(ctx context.Context, plan *Plan, start, end time.Time, opts Options) api.Analysis {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	plan = plan.Copy()
	for i := range plan.Metrics {
		if m := &plan.Metrics[i]; m.Interval > 0 {
			m.Source = newPrefetcher(ctx, m.Source, m.Interval)
		}
	}
	clk := clock.NewFake(start)
	idle := make(chan struct{}, 1)
	// A scheduler of its own on the virtual clock, with a worker per
	// metric: the run's measurements due together are taken together,
	// and virtual time moves (below) only when none is in flight.
	opts.Clock = clk
	opts.Scheduler = NewScheduler(clk, len(plan.Metrics))
	opts.Lateness = nil // virtual time: a measurement is never late
	opts.onIdle = func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	}
	run := Start(ctx, plan, opts)
	terminated := false
	for {
		select {
		case <-run.Done():
			return run.Snapshot()
		case <-idle:
			// The run waits for its next instant with nothing in flight:
			// move virtual time to it, or stop at the horizon.
			next, ok := clk.Next()
			if !ok || next.After(end) {
				if !terminated {
					run.Terminate()
					terminated = true
				}
				continue
			}
			clk.AdvanceToNext()
		}
	}
}

// BacktestResult is the verdict of one backtest in a series.
type BacktestResult struct {
	Start    time.Time    `json:"start"`
	Analysis api.Analysis `json:"analysis"`
}

// BacktestSeries runs a backtest for every start from start to end, every
// apart, each with end as its horizon: where in the window the plan would
// have fired. plan is shared by the runs, one after the other.
func BacktestSeries(ctx context.Context, plan *Plan, start, end time.Time, every time.Duration, opts Options) []BacktestResult {
	var out []BacktestResult
	for at := start; at.Before(end) || at.Equal(start); at = at.Add(every) {
		if ctx.Err() != nil {
			break
		}
		a := Backtest(ctx, plan, at, end, opts)
		out = append(out, BacktestResult{Start: at, Analysis: a})
		if every <= 0 {
			break
		}
	}
	return out
}

// prefetchDepth is how many measurements ahead a backtest asks a source
// for, concurrently. In virtual time a measurement takes no time, so the
// next instants of a metric are known (last + interval) unless a
// measurement errors; the queries are then answered from the cache.
const prefetchDepth = 16

// prefetcher answers a backtest's measurements from queries it has already
// sent for the instants the schedule will ask for next.
type prefetcher struct {
	source   Source
	interval time.Duration
	ctx      context.Context

	mu      sync.Mutex
	pending map[time.Time]chan Observation
	// scheduled is set once ctx carries the run's Schedule (the same
	// start and interval for every measurement of a metric).
	scheduled bool
}

func newPrefetcher(ctx context.Context, source Source, interval time.Duration) *prefetcher {
	return &prefetcher{source: source, interval: interval, ctx: ctx, pending: map[time.Time]chan Observation{}}
}

// Measure returns the observation for at, from the cache when it was
// prefetched, and sends the queries for the instants that follow.
//
// The queries sent ahead carry the measurement's Schedule with Last false:
// the metric's last measurement, which a source may take differently, is
// sent when it is asked for, not answered from the cache.
func (p *prefetcher) Measure(ctx context.Context, at time.Time) Observation {
	sched, scheduled := ScheduleFrom(ctx)
	if scheduled && sched.Last {
		p.mu.Lock()
		delete(p.pending, at)
		p.mu.Unlock()
		return p.source.Measure(ctx, at)
	}
	p.mu.Lock()
	if scheduled && !p.scheduled {
		p.ctx, p.scheduled = WithSchedule(p.ctx, sched), true
	}
	ch := p.fetchLocked(at)
	delete(p.pending, at)
	for k := 1; k <= prefetchDepth; k++ {
		p.fetchLocked(at.Add(time.Duration(k) * p.interval))
	}
	// Instants before at will never be asked for again.
	for t := range p.pending {
		if t.Before(at) {
			delete(p.pending, t)
		}
	}
	p.mu.Unlock()
	select {
	case o := <-ch:
		return o
	case <-ctx.Done():
		return Observation{Err: ctx.Err()}
	}
}

func (p *prefetcher) fetchLocked(at time.Time) chan Observation {
	if ch, ok := p.pending[at]; ok {
		return ch
	}
	ch := make(chan Observation, 1)
	p.pending[at] = ch
	// Ends when the source returns; p.ctx ends with the backtest.
	go func() { ch <- p.source.Measure(p.ctx, at) }()
	return ch
}
