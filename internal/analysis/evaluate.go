package analysis

import (
	"context"
	"fmt"
	"sync"

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
	r := &Run{plan: plan, opts: opts, clock: opts.Clock}
	started := opts.Clock.Now()
	measurements := make([]api.Measurement, len(plan.Metrics))
	var wg sync.WaitGroup
	for i := range plan.Metrics {
		if i == len(plan.Metrics)-1 {
			// The last metric is measured on this goroutine, while the
			// others are measured on theirs: a round of one metric, the
			// web provider's usual, then waits on no other goroutine.
			measurements[i] = r.measure(ctx, i)
			break
		}
		wg.Add(1)
		// Ends when the source returns; sources honour ctx.
		go func(i int) {
			defer wg.Done()
			measurements[i] = r.measure(ctx, i)
		}(i)
	}
	wg.Wait()

	a := api.Analysis{ID: opts.ID, StartedAt: &started, Template: opts.Template, Args: opts.Args, Kind: opts.Kind, Series: opts.Series}
	worst := api.Phase("")
	for i := range plan.Metrics {
		m := &plan.Metrics[i]
		ms := measurements[i]
		res := api.MetricResult{Name: m.Name, Phase: ms.Phase, DryRun: m.DryRun, Metadata: m.Metadata,
			Measurements: []api.Measurement{ms}}
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
	completed := opts.Clock.Now()
	a.CompletedAt = &completed
	return a
}
