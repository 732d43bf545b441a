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
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	r := &Run{plan: plan, opts: opts.kept(), clock: opts.Clock}
	// The round's start and end in one allocation.
	times := new([2]time.Time)
	times[0] = opts.Clock.Now()
	// Each metric's one measurement: the results' lists are slices of it.
	measurements := make([]api.Measurement, len(plan.Metrics))
	measureAll(ctx, r, measurements)

	a := api.Analysis{ID: opts.ID, StartedAt: &times[0], Template: opts.Template, Args: opts.Args, Kind: opts.Kind, Series: opts.Series,
		MetricResults: make([]api.MetricResult, 0, len(plan.Metrics))}
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
	times[1] = opts.Clock.Now()
	a.CompletedAt = &times[1]
	return a
}

// measureAll takes the round's measurements into measurements, one per
// metric of r's plan, at once. The last metric is measured on this
// goroutine, while the others are measured on theirs: a round of one
// metric, the web provider's usual, then waits on no other goroutine and
// allocates nothing to wait with.
func measureAll(ctx context.Context, r *Run, measurements []api.Measurement) {
	last := len(measurements) - 1
	if last < 0 {
		return
	}
	if last == 0 {
		measurements[0] = r.measure(ctx, 0)
		return
	}
	wg := new(sync.WaitGroup)
	for i := range last {
		wg.Add(1)
		// Ends when the source returns; sources honour ctx.
		go func() {
			defer wg.Done()
			measurements[i] = r.measure(ctx, i)
		}()
	}
	measurements[last] = r.measure(ctx, last)
	wg.Wait()
}
