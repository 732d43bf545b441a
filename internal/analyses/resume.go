package analyses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/webhook"
)

// Adoption. Every claimInterval (and after renewing its own leases every
// LeaseTTL/3), a replica on a store claims the analyses whose lease has
// expired (their replica died, or handed them over at shutdown), as many
// as it has room for
// under MaxRunning, and resumes each as Argo's controller resumes an
// AnalysisRun after a restart (analysis.Options.Resume): the plan is
// compiled again from what the store kept (the posted document, or the
// template of that name as this replica serves it, with the arguments),
// and the run continues from the stored state. What cannot be resumed
// (the template is no longer served, the document no longer compiles,
// its secrets were sealed with another key) ends in Error, saying why.

// maxClaim bounds the analyses one claim takes.
const maxClaim = 100

// resumption is what a claimed analysis is resumed from: its stored
// state, the webhook events it still owes, and how many its webhook was
// sent (so that the next has the next webhook-id).
type resumption struct {
	state    api.Analysis
	owed     []owedEvent
	firstSeq int
}

// owedEvent is a webhook delivery still owed, with its event's type.
type owedEvent struct {
	store.Delivery
	typ   api.EventType
	event api.Event
}

// owedEvents reads what an analysis owes its webhook.
func (a *Analyses) owedEvents(id string) ([]owedEvent, error) {
	ctx := context.Background()
	ds, err := a.opts.Store.Owed(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]owedEvent, 0, len(ds))
	for _, d := range ds {
		var ev api.Event
		if json.Unmarshal(d.Event, &ev) != nil {
			continue
		}
		out = append(out, owedEvent{Delivery: d, typ: ev.Type, event: ev})
	}
	return out, nil
}

// firstSeq is the number of webhook events an analysis was sent before
// it was resumed from state: each measurement's when the webhook asked
// for them, and at least the last owed.
func firstSeq(state *api.Analysis, events []string, owed []owedEvent) int {
	n := 0
	if slices.Contains(events, string(api.EventMeasurement)) {
		for _, res := range state.MetricResults {
			n += int(res.Count + res.Error)
		}
	}
	for _, d := range owed {
		n = max(n, int(d.Seq))
	}
	return n
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

// claim takes over the analyses whose lease has expired, as many as there
// is room for, and resumes them.
func (a *Analyses) claim() {
	a.mu.Lock()
	room := a.opts.MaxRunning - len(a.running) - a.reserved
	draining := a.draining
	a.mu.Unlock()
	if a.opts.Planner == nil || draining || room <= 0 {
		return
	}
	leases, err := a.opts.Store.Claim(context.Background(), a.owner, min(room, maxClaim))
	if err != nil {
		a.log.Warn("could not claim the analyses of other replicas", zap.Error(err))
		return
	}
	for _, l := range leases {
		a.adopt(l)
	}
}

// adopt resumes the analysis of lease l.
func (a *Analyses) adopt(l store.Lease) {
	log := a.log.With(zap.String("analysis_id", l.ID))
	st, err := a.opts.Store.Get(context.Background(), l.ID)
	if err != nil {
		log.Warn("could not read a claimed analysis; its lease is handed back", zap.Error(err))
		a.releaseLease(l)
		return
	}
	owed, err := a.owedEvents(l.ID)
	if err != nil {
		log.Warn("could not read what a claimed analysis owes; its lease is handed back", zap.Error(err))
		a.releaseLease(l)
		return
	}
	writer := newPersister(a, l, log)
	if st.CompletedAt == nil && st.State.CompletedAt == nil {
		for _, d := range owed {
			if d.typ == api.EventCompleted && d.event.Analysis != nil {
				// It completed, and its replica stopped before
				// saving so: the completed event it owes has its
				// end.
				final := *d.event.Analysis
				final.Webhook = nil
				err := a.opts.Store.SaveState(context.Background(), l, final)
				if err != nil {
					log.Warn("could not save a claimed analysis' end; its lease is handed back", zap.Error(err))
					a.releaseLease(l)
					return
				}
				st.CompletedAt, st.State = final.CompletedAt, final
			}
		}
	}
	if st.CompletedAt != nil || st.State.CompletedAt != nil {
		// It completed: what is left is what it owes its webhook.
		a.deliverOwed(l, st, owed, log)
		return
	}
	writer.counts = NextIndexes(&st.State)
	compiled, err := a.planStored(st)
	if err != nil {
		log.Error("a claimed analysis cannot be resumed; it ends in Error", zap.Error(err))
		writer.endUnresumable(st.State, "canaryd could not resume the analysis after its replica stopped: "+err.Error())
		return
	}
	so := StartOptions{Template: st.State.Template, Args: st.State.Args, Document: st.Document}
	resumed := &resumption{state: st.State}
	if st.Webhook != nil {
		so.Webhook = &WebhookRequest{URL: st.Webhook.URL, Events: st.Webhook.Events}
		resumed.owed = owed
		resumed.firstSeq = firstSeq(&st.State, st.Webhook.Events, owed)
		writer.hookOpen = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.draining {
		writer.release()
		return
	}
	if _, held := a.byID[l.ID]; held {
		// Still here (a lease this replica lost and took back): the
		// old run is ending; hand it over rather than run it twice.
		writer.release()
		return
	}
	if _, err := a.launchLocked(compiled.Plan, so, l.ID, writer, resumed); err != nil {
		log.Warn("a claimed analysis could not be resumed now; its lease is handed back", zap.Error(err))
		return
	}
	if l.Terminate || st.TerminateRequested {
		go writer.terminate()
	}
}

// releaseLease hands a lease back to the store, for another replica.
func (a *Analyses) releaseLease(l store.Lease) {
	ctx := context.Background()
	if err := a.opts.Store.Release(ctx, l); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		a.log.Warn("could not hand a lease back", zap.String("analysis_id", l.ID), zap.Error(err))
	}
}

// release hands the writer's lease back; it writes nothing more.
func (p *persister) release() {
	p.mu.Lock()
	p.state = writerLost
	lease := p.lease
	p.mu.Unlock()
	p.a.releaseLease(lease)
}

// endUnresumable ends a claimed analysis that cannot be resumed in Error.
func (p *persister) endUnresumable(state api.Analysis, message string) {
	now := p.a.clock.Now()
	state.Phase, state.Message, state.CompletedAt = api.PhaseError, message, &now
	if state.MetricResults == nil {
		state.MetricResults = []api.MetricResult{}
	}
	p.mu.Lock()
	lease := p.lease
	p.mu.Unlock()
	ctx := context.Background()
	if err := p.st.SaveState(ctx, lease, state); err != nil {
		p.log.Warn("could not end the analysis in the store", zap.Error(err))
	}
}

// deliverOwed delivers what a completed analysis still owes its webhook,
// each event with its webhook-id, marking each once done.
func (a *Analyses) deliverOwed(l store.Lease, st *store.Analysis, owed []owedEvent, log *zap.Logger) {
	if len(owed) == 0 || st.Webhook == nil {
		return
	}
	hook, err := a.webhooks.StreamWith(l.ID, st.Webhook.URL, st.Webhook.Events, webhook.StreamOptions{Outbox: &owedOutbox{a: a, lease: l, log: log}})
	if err != nil {
		log.Warn("could not deliver what a claimed analysis owes now; its lease is handed back", zap.Error(err))
		a.releaseLease(l)
		return
	}
	for _, d := range owed {
		hook.Redeliver(d.WebhookID, d.typ, d.Event)
	}
	hook.Close()
	a.mu.Lock()
	a.hooks[hook] = l.ID
	a.mu.Unlock()
	log.Info("delivering what a claimed analysis owes its webhook", zap.Int("deliveries", len(owed)))
	// Ends when the stream has delivered or given up what it owed, or
	// when WaitWebhooks abandons it at shutdown.
	go func() {
		_ = hook.Wait(context.Background())
		a.mu.Lock()
		delete(a.hooks, hook)
		a.mu.Unlock()
	}()
}

// owedOutbox is the outbox of what a completed analysis still owes: every
// event is recorded already, and each is marked done in the store as it is.
type owedOutbox struct {
	a     *Analyses
	lease store.Lease
	log   *zap.Logger
}

func (o *owedOutbox) Owe(string, []byte) {}

func (o *owedOutbox) Recorded(context.Context, string) bool { return true }

func (o *owedOutbox) Done(webhookID string) {
	ctx := context.Background()
	err := o.a.opts.Store.Commit(ctx, o.lease, store.Mutation{Delivered: []string{webhookID}})
	if err != nil {
		o.log.Warn("could not record a webhook delivery as done", zap.String("webhook_id", webhookID), zap.Error(err))
	}
}

// NextIndexes are each metric's index of its next measurement, as a state
// counts them.
func NextIndexes(s *api.Analysis) map[string]int {
	next := make(map[string]int, len(s.MetricResults))
	for _, res := range s.MetricResults {
		next[res.Name] = int(res.Count + res.Error)
	}
	return next
}
