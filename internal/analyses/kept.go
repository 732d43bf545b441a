package analyses

import (
	"context"
	"math"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/store"
)

// Rounds are kept.
//
// A round (the evaluate endpoints) is answered at once, and then held as
// a finished analysis under the id it answered with, as an analysis that
// has just finished is: GET /v1/analyses/{id} has it, its HTML report
// too, and the list shows it (kind "round", with its series). It counts
// against the same bounds (--max-finished, --max-retained-bytes,
// --retention), and it is evicted by the same rule: never one finished
// less than --min-retention ago. When none can be evicted for it the round
// is answered all the same, without a Location, and not kept: the bounds
// protect what others have not read yet, and a verdict is never refused
// for the history's sake.
//
// With a store the round is written there too, as a finished analysis
// (Create with its final state), by a writer of its own (durable.RoundWriter), so
// that a slow or absent store never holds up a verdict: any replica then
// answers for it, and the store's retention removes it with the others.

// keepRound holds the finished round result of plan as a finished
// analysis, and queues it for the store; it reports whether it did.
func (a *Analyses) keepRound(plan *analysis.Plan, so StartOptions, result api.Analysis) bool {
	if result.CompletedAt == nil || result.StartedAt == nil || plan.CheckResume(&result) != nil {
		// Never so for a round; held as it stands it would read Error.
		return false
	}
	if a.held.Full() {
		// Refused whatever it takes: it is not counted for nothing.
		a.metrics.roundsNotKept.Inc()
		return false
	}
	led := CompletedLedger(a.held.Bytes(), &result)
	a.mu.Lock()
	defer a.mu.Unlock()
	// Counted: what is over the bound now may be evicted for it.
	if a.held.Room() != nil {
		led.Release()
		a.metrics.roundsNotKept.Inc()
		return false
	}
	// Complete: the engine's run holds it and runs nothing (a completed
	// Resume), so a round kept reads as any finished analysis.
	engineRun := analysis.Start(context.Background(), a.keptPlanOf(plan), analysis.Options{ID: result.ID, Clock: a.clock, Template: so.Template,
		Args: so.Args, Kind: so.Kind, Series: so.Series, Resume: &result})
	run := &Run{Run: engineRun, ledger: led, hub: NewHub(a.opts.StreamBuffer, nil, a.log, result.ID), streamWriteTimeout: a.streamWriteTimeout,
		maxStreams: int32(min(a.opts.MaxStreams, math.MaxInt32)), sources: so.Sources, template: so.Template, series: so.Series,
		args: so.Args, startedAt: *result.StartedAt}
	a.held.Keep(result.ID, run, result.Phase)
	if a.roundWriter != nil {
		a.roundWriter.Enqueue(a.storedRound(so, result))
	}
	return true
}

// keptPlan is a round's plan and the plan its kept run holds.
type keptPlan struct{ plan, counted *analysis.Plan }

// keptPlanOf is plan as a round kept holds it (analysis.Plan.Counted: a
// copy when a metric has neither a count nor an interval, as a round's
// usually has), made once for the rounds of one plan in a row (a compiled
// spec's, which its rounds share) rather than at every round.
func (a *Analyses) keptPlanOf(plan *analysis.Plan) *analysis.Plan {
	if k := a.keptPlan.Load(); k != nil && k.plan == plan {
		return k.counted
	}
	counted := plan.Counted()
	a.keptPlan.Store(&keptPlan{plan: plan, counted: counted})
	return counted
}

// storedRound is what the store keeps of a round: its final state, what
// it ran (the template's name; the posted document, unless it holds
// credentials, which a round does not keep) and the arguments the caller
// gave, those that hold secrets left out.
func (a *Analyses) storedRound(so StartOptions, result api.Analysis) store.NewAnalysis {
	n := store.NewAnalysis{ID: result.ID, Template: so.Template, State: result, Owner: a.keeper.Owner()}
	if !so.Credentials {
		n.Document = so.Document
	}
	for name, v := range so.RawArgs {
		if redact.IsSecretName(name) || redact.Userinfo(v) != v {
			continue
		}
		n.Args = append(n.Args, store.Arg{Name: name, Value: v})
	}
	return n
}
