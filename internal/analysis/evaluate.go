package analysis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// Evaluate takes one round now: one measurement of every metric at once,
// with no schedule and no limits. The result's phase is the worst phase of
// the round's non-dry-run measurements (Successful when there are none).
// It is what a caller that keeps its own schedule wants, Argo Rollouts' web
// provider above all: each call is one of its measurements.
//
// When the plan declares scoring, the round is scored as AssessScored scores
// a run, each metric counting by its one measurement: the phase follows the
// score, or is Error if a non-dry-run measurement is.
func Evaluate(ctx context.Context, plan *Plan, opts Options) api.Analysis {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	mem := newRoundMemory(len(plan.Metrics))
	mem.times[0] = clk.Now()
	measureAll(ctx, plan, clk, mem)

	a := api.Analysis{ID: opts.ID, StartedAt: &mem.times[0], Template: opts.Template, Args: opts.Args, Kind: opts.Kind, Series: opts.Series,
		MetricResults: mem.results[:0]}
	measurements := mem.measurements
	worst := api.Phase("")
	for i := range plan.Metrics {
		m := &plan.Metrics[i]
		ms := measurements[i]
		res := api.MetricResult{Name: m.Name, Phase: ms.Phase, DryRun: m.DryRun, Metadata: m.Metadata,
			Measurements: measurements[i : i+1 : i+1]}
		switch ms.Phase {
		case api.PhaseSuccessful:
			res.Count, res.Successful, res.ConsecutiveSuccess = 1, 1, 1
		case api.PhaseFailed:
			res.Count, res.Failed = 1, 1
		case api.PhaseInconclusive:
			res.Count, res.Inconclusive = 1, 1
		case api.PhaseError:
			res.Error, res.ConsecutiveError = 1, 1
		}
		res.Message = ms.Message
		if res.Message == "" {
			res.Message = explain(m, ms)
		}
		summary := &a.RunSummary
		if m.DryRun {
			summary = &a.DryRunSummary
		}
		summary.Count++
		countPhase(summary, ms.Phase)
		if !m.DryRun && (worst == "" || worse(worst, ms.Phase)) {
			worst = ms.Phase
			a.Message = ""
			if ms.Phase != api.PhaseSuccessful {
				a.Message = fmt.Sprintf("Metric %q assessed %s: %s", m.Name, ms.Phase, res.Message)
			}
		}
		a.MetricResults = append(a.MetricResults, res)
	}
	if worst == "" {
		worst = api.PhaseSuccessful
	}
	a.Phase = worst
	if plan.Scoring != nil {
		results := make([]*api.MetricResult, len(a.MetricResults))
		for i := range a.MetricResults {
			results[i] = &a.MetricResults[i]
		}
		a.Score = scoreRun(plan, results)
		a.Phase = verdictPhase(a.Score.Verdict)
		a.Message = scoreMessage(a.Score)
		for i, r := range a.MetricResults {
			if !r.DryRun && r.Phase == api.PhaseError {
				a.Phase = api.PhaseError
				a.Message = fmt.Sprintf("Metric %q assessed Error: %s; the score is not used, since a metric could not be measured",
					plan.Metrics[i].Name, r.Message)
				break
			}
		}
	}
	mem.times[1] = clk.Now()
	a.CompletedAt = &mem.times[1]
	return a
}

// roundMemory is what a round's result points into: the round's two
// instants, then each measurement's two; each metric's one measurement
// (the results' lists are slices of it); and the metrics' results. A
// round of one metric, the web provider's usual, has them in one
// allocation.
type roundMemory struct {
	times        []time.Time
	measurements []api.Measurement
	results      []api.MetricResult
}

func newRoundMemory(n int) roundMemory {
	if n == 1 {
		one := new(struct {
			times        [4]time.Time
			measurements [1]api.Measurement
			results      [1]api.MetricResult
		})
		return roundMemory{times: one.times[:], measurements: one.measurements[:], results: one.results[:]}
	}
	return roundMemory{times: make([]time.Time, 2+2*n), measurements: make([]api.Measurement, n), results: make([]api.MetricResult, n)}
}

// measure takes metric i's measurement into mem.
func (mem roundMemory) measure(ctx context.Context, plan *Plan, clk clock.Clock, i int) {
	mem.measurements[i] = measureAt(ctx, &plan.Metrics[i], clk, (*[2]time.Time)(mem.times[2+2*i:]))
}

// measureAll takes the round's measurements into mem, one per metric of
// plan, at once. The last metric is measured on this goroutine, while the
// others are measured on theirs: a round of one metric, the web
// provider's usual, then waits on no other goroutine and allocates
// nothing to wait with.
func measureAll(ctx context.Context, plan *Plan, clk clock.Clock, mem roundMemory) {
	last := len(plan.Metrics) - 1
	if last < 0 {
		return
	}
	if last == 0 {
		mem.measure(ctx, plan, clk, 0)
		return
	}
	wg := new(sync.WaitGroup)
	for i := range last {
		wg.Add(1)
		// Ends when the source returns; sources honour ctx.
		go func() {
			defer wg.Done()
			mem.measure(ctx, plan, clk, i)
		}()
	}
	mem.measure(ctx, plan, clk, last)
	wg.Wait()
}
