package durable

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// Adoption. Every claimInterval (and after renewing its own leases every
// LeaseTTL/3), a Keeper claims the analyses whose lease has expired (their
// replica died, or handed them over at shutdown), as many as its Host has
// room for, and has the Host resume each as Argo's controller resumes an
// AnalysisRun after a restart (analysis.Options.Resume): the plan is
// compiled again from what the store kept (the posted document, or the
// template of that name as this replica serves it, with the arguments),
// and the run continues from the stored state. What cannot be resumed
// (the template is no longer served, the document no longer compiles, its
// secrets were sealed with another key) ends in Error, saying why.

// maxClaim bounds the analyses one claim takes.
const maxClaim = 100

// Host is the service that runs the analyses a Keeper claims.
type Host interface {
	// Room is how many analyses this replica may take over now: 0 while
	// it shuts down.
	Room() int
	// Resume runs a claimed analysis from what the store kept, its writes
	// made by c.Writer (Keeper.Start). An *Unresumable error ends the
	// analysis in Error, saying why; any other says it cannot run here
	// now, and its lease is handed back.
	Resume(c *Claimed) error
	// DeliverOwed delivers what a completed analysis still owes its
	// webhook (c.Owed), each event with its webhook-id, through outbox,
	// which marks each done in the store. An error hands its lease back.
	DeliverOwed(c *Claimed, outbox *OwedOutbox) error
}

// Claimed is an analysis claimed from another replica, as the store kept
// it: its lease, what was asked for and its state, the webhook events it
// still owes, and how many its webhook was sent (so that the next has the
// next webhook-id).
type Claimed struct {
	Lease    store.Lease
	Stored   *store.Analysis
	Owed     []Owed
	FirstSeq int
	// Writer writes the resumed run.
	Writer *Writer
}

// Owed is a webhook delivery still owed, with its event's type.
type Owed struct {
	store.Delivery
	Type  api.EventType
	event api.Event
}

// Unresumable says why a claimed analysis cannot be resumed: it ends in
// Error.
type Unresumable struct{ Err error }

func (e *Unresumable) Error() string { return e.Err.Error() }
func (e *Unresumable) Unwrap() error { return e.Err }

// owedEvents reads what an analysis owes its webhook.
func (k *Keeper) owedEvents(id string) ([]Owed, error) {
	ctx := context.Background()
	ds, err := k.st.Owed(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]Owed, 0, len(ds))
	for _, d := range ds {
		var ev api.Event
		if json.Unmarshal(d.Event, &ev) != nil {
			continue
		}
		out = append(out, Owed{Delivery: d, Type: ev.Type, event: ev})
	}
	return out, nil
}

// firstSeq is the number of webhook events an analysis was sent before
// it was resumed from state: each measurement's when the webhook asked
// for them, and at least the last owed.
func firstSeq(state *api.Analysis, events []string, owed []Owed) int {
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

// claim takes over the analyses whose lease has expired, as many as there
// is room for, and resumes them.
func (k *Keeper) claim() {
	if k.opts.Host == nil {
		return
	}
	room := k.opts.Host.Room()
	if room <= 0 {
		return
	}
	leases, err := k.st.Claim(context.Background(), k.opts.Owner, min(room, maxClaim))
	if err != nil {
		k.log.Warn("could not claim the analyses of other replicas", zap.Error(err))
		return
	}
	for _, l := range leases {
		k.adopt(l)
	}
}

// adopt resumes the analysis of lease l.
func (k *Keeper) adopt(l store.Lease) {
	log := k.log.With(zap.String("analysis_id", l.ID))
	st, err := k.st.Get(context.Background(), l.ID)
	if err != nil {
		log.Warn("could not read a claimed analysis; its lease is handed back", zap.Error(err))
		k.releaseLease(l)
		return
	}
	owed, err := k.owedEvents(l.ID)
	if err != nil {
		log.Warn("could not read what a claimed analysis owes; its lease is handed back", zap.Error(err))
		k.releaseLease(l)
		return
	}
	if err := k.saveOwedEnd(l, st, owed); err != nil {
		log.Warn("could not save a claimed analysis' end; its lease is handed back", zap.Error(err))
		k.releaseLease(l)
		return
	}
	c := &Claimed{Lease: l, Stored: st, Owed: owed}
	if st.CompletedAt != nil || st.State.CompletedAt != nil {
		// It completed: what is left is what it owes its webhook.
		if len(owed) == 0 || st.Webhook == nil {
			return
		}
		if err := k.opts.Host.DeliverOwed(c, &OwedOutbox{k: k, lease: l, log: log}); err != nil {
			log.Warn("could not deliver what a claimed analysis owes now; its lease is handed back", zap.Error(err))
			k.releaseLease(l)
			return
		}
		log.Info("delivering what a claimed analysis owes its webhook", zap.Int("deliveries", len(owed)))
		return
	}
	c.Writer = newWriter(k, l, log)
	c.Writer.counts = NextIndexes(&st.State)
	if st.Webhook != nil {
		c.FirstSeq = firstSeq(&st.State, st.Webhook.Events, owed)
		c.Writer.hookOpen = true
		for _, d := range owed {
			c.Writer.recorded[d.WebhookID] = true
		}
	}
	err = k.opts.Host.Resume(c)
	var un *Unresumable
	switch {
	case errors.As(err, &un):
		log.Error("a claimed analysis cannot be resumed; it ends in Error", zap.Error(un.Err))
		c.Writer.endUnresumable(st.State, "canaryd could not resume the analysis after its replica stopped: "+un.Err.Error())
		return
	case err != nil:
		log.Warn("a claimed analysis could not be resumed now; its lease is handed back", zap.Error(err))
		c.Writer.release()
		return
	}
	if l.Terminate || st.TerminateRequested {
		go c.Writer.terminate()
	}
}

// saveOwedEnd saves the end of an analysis that completed, and whose
// replica stopped before saving so: the completed event it owes has it.
func (k *Keeper) saveOwedEnd(l store.Lease, st *store.Analysis, owed []Owed) error {
	if st.CompletedAt != nil || st.State.CompletedAt != nil {
		return nil
	}
	for _, d := range owed {
		if d.Type != api.EventCompleted || d.event.Analysis == nil {
			continue
		}
		final := *d.event.Analysis
		final.Webhook = nil
		if err := k.st.SaveState(context.Background(), l, final); err != nil {
			return err
		}
		st.CompletedAt, st.State = final.CompletedAt, final
	}
	return nil
}

// OwedOutbox is the outbox (webhook.Outbox) of what a completed analysis
// still owes: every event is recorded already, and each is marked done in
// the store as it is.
type OwedOutbox struct {
	k     *Keeper
	lease store.Lease
	log   *zap.Logger
}

// Owe records nothing: what is owed is recorded already.
func (o *OwedOutbox) Owe(string, []byte) {}

// Recorded says every event may be sent: each is recorded already.
func (o *OwedOutbox) Recorded(context.Context, string) bool { return true }

// Done marks the event done in the store.
func (o *OwedOutbox) Done(webhookID string) {
	ctx := context.Background()
	err := o.k.st.Commit(ctx, o.lease, store.Mutation{Delivered: []string{webhookID}})
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
