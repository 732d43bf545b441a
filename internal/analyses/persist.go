package analyses

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses/durable"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/webhook"
)

// With a store (AnalysesOptions.Store), every analysis this replica starts
// is kept there as it runs, by a writer of its own (durable.Writer), under
// a lease that the service's durable.Keeper renews; the Keeper also claims
// the analyses of replicas that stopped, which the service resumes (Room,
// Resume, DeliverOwed: durable.Host), and hands the running ones over at
// shutdown (Drain). What is here is the service's side: what a run is
// created with, how a claimed one is compiled and launched, and what the
// registry forgets of a run that ended here without its analysis ending.

// StoreTimeout is the longest one call to the store takes
// (durable.StoreTimeout).
const StoreTimeout = durable.StoreTimeout

// createStored stores a new analysis before it starts: what was asked for
// and this replica's lease. It returns the writer of its run.
func (a *Analyses) createStored(id string, so StartOptions, state api.Analysis) (*durable.Writer, error) {
	na := store.NewAnalysis{ID: id, Template: so.Template, State: state, Credentials: so.Credentials}
	// A posted template keeps its name too, for the list's ?template=;
	// the document, when there is one, is what a replica resumes.
	na.Document = so.Document
	for name, v := range so.RawArgs {
		na.Args = append(na.Args, store.Arg{Name: name, Value: v})
	}
	if so.Webhook != nil {
		na.Webhook = &store.Webhook{URL: so.Webhook.URL, Events: so.Webhook.Events}
	}
	ctx := context.Background()
	w, err := a.keeper.Create(ctx, na, a.log.With(zap.String("analysis_id", id)))
	if err != nil {
		return nil, &StoreError{err: err}
	}
	return w, nil
}

// StoreError is an error of the store behind a call of the service: the
// HTTP layer answers it as the store's problem, not the caller's.
type StoreError struct{ err error }

func (e *StoreError) Error() string { return e.err.Error() }
func (e *StoreError) Unwrap() error { return e.err }

// Close stops the renewal of this replica's leases and hands over those
// it still holds (analyses whose webhook deliveries WaitWebhooks
// abandoned), for another replica to finish at once; call it after Drain
// and WaitWebhooks. It does nothing with a store that is not shared.
func (a *Analyses) Close() {
	a.closeOnce.Do(func() {
		if a.keeper == nil {
			return
		}
		a.keeper.Close()
		// Drain wrote the rounds it could; Close does not wait.
		a.roundWriter.GiveUp()
	})
}

// dropLost forgets a run that has ended here without being the
// analysis' end (its lease was lost, or it was handed over): its streams
// end, its webhook delivers what it has queued and stops, and the store
// answers for it from now on.
func (a *Analyses) dropLost(ev api.Event) {
	if ev.Type != api.EventCompleted {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if run, ok := a.running[ev.AnalysisID]; ok {
		delete(a.running, ev.AnalysisID)
		run.gone.Store(true)
		run.ledger.Release()
		run.hub.End()
		if run.hook != nil {
			run.hook.Close()
		}
	}
	a.metrics.running.Set(float64(len(a.running)))
}

// pendingResults are the results of a plan before its first measurement,
// as the engine shows them: every metric Pending. A replica that resumes
// the analysis from them finds every metric of the plan.
func pendingResults(plan *analysis.Plan) []api.MetricResult {
	out := make([]api.MetricResult, len(plan.Metrics))
	for i := range plan.Metrics {
		m := &plan.Metrics[i]
		out[i] = api.MetricResult{Name: m.Name, Phase: api.PhasePending, DryRun: m.DryRun, Metadata: m.Metadata, Measurements: []api.Measurement{}}
	}
	return out
}

// planStored compiles the plan of a stored analysis as it was asked for
// (compile.Planner.Stored).
func (a *Analyses) planStored(st *store.Analysis) (*compile.Compiled, error) {
	if st.SealError != nil {
		return nil, fmt.Errorf("its secrets cannot be opened here: %w", st.SealError)
	}
	args := make(map[string]string, len(st.Args))
	for _, arg := range st.Args {
		args[arg.Name] = arg.Value
	}
	return a.opts.Planner.Stored(st.Template, st.Document, args)
}

// errNotNow is Resume's answer for an analysis this replica cannot run
// now: it shuts down, or still holds the analysis (a lease it lost and
// took back, whose old run is ending). Its lease is handed back.
var errNotNow = errors.New("this replica cannot run it now")

// Room is how many analyses this replica may take over from others now
// (durable.Host): none while it shuts down, or without a Planner to
// compile their plans.
func (a *Analyses) Room() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.Planner == nil || a.draining.Load() {
		return 0
	}
	return a.opts.MaxRunning - len(a.running) - a.reserved
}

// Resume runs an analysis claimed from another replica (durable.Host):
// its plan compiled again from what the store kept, and the run resumed
// from the stored state, its webhook delivering what it owed first.
func (a *Analyses) Resume(c *durable.Claimed) error {
	st := c.Stored
	compiled, err := a.planStored(st)
	if err != nil {
		return &durable.Unresumable{Err: err}
	}
	so := StartOptions{Template: st.State.Template, Args: st.State.Args, Document: st.Document}
	if st.Webhook != nil {
		so.Webhook = &WebhookRequest{URL: st.Webhook.URL, Events: st.Webhook.Events}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.draining.Load() {
		return errNotNow
	}
	if _, held := a.getLocked(st.ID); held {
		return errNotNow
	}
	_, err = a.launchLocked(compiled.Plan, so, st.ID, c.Writer, c)
	return err
}

// DeliverOwed delivers what a completed analysis claimed from another
// replica still owes its webhook (durable.Host).
func (a *Analyses) DeliverOwed(c *durable.Claimed, outbox *durable.OwedOutbox) error {
	st := c.Stored
	hook, err := a.webhooks.StreamWith(st.ID, st.Webhook.URL, st.Webhook.Events, webhook.StreamOptions{Outbox: outbox})
	if err != nil {
		return err
	}
	for _, d := range c.Owed {
		hook.Redeliver(d.WebhookID, d.Type, d.Event)
	}
	hook.Close()
	a.mu.Lock()
	a.hooks[hook] = st.ID
	a.mu.Unlock()
	// Ends when the stream has delivered or given up what it owed, or
	// when WaitWebhooks abandons it at shutdown.
	go func() {
		_ = hook.Wait(context.Background())
		a.mu.Lock()
		delete(a.hooks, hook)
		a.mu.Unlock()
	}()
	return nil
}

// NextIndexes are each metric's index of its next measurement, as a state
// counts them (durable.NextIndexes).
func NextIndexes(s *api.Analysis) map[string]int { return durable.NextIndexes(s) }
