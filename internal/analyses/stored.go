package analyses

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/webhook"
)

// FollowStored counts one more stream following a stored analysis that
// another replica runs, unless MaxStreams already do on this replica;
// release uncounts it.
func (a *Analyses) FollowStored(id string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.storedStreams[id] >= a.opts.MaxStreams {
		return nil, false
	}
	a.storedStreams[id]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.storedStreams[id]--; a.storedStreams[id] <= 0 {
			delete(a.storedStreams, id)
		}
	}, true
}

// StoreReady reports whether the store answers, for /readyz.
func (a *Analyses) StoreReady(ctx context.Context) error {
	return a.opts.Store.Ping(ctx)
}

// Options are the options the service was made with, their defaults
// filled in.
func (a *Analyses) Options() AnalysesOptions { return a.opts }

// Clock is the service's clock.
func (a *Analyses) Clock() clock.Clock { return a.clock }

// Reports is what the HTML reports of the service share.
func (a *Analyses) Reports() *report.Renderer { return a.reports }

// AcquireRender takes a place for one HTML report being drawn; release
// gives it back. False when MaxReportRenders are being drawn.
func (a *Analyses) AcquireRender() (release func(), ok bool) {
	select {
	case a.renders <- struct{}{}:
		return func() { <-a.renders }, true
	default:
		return nil, false
	}
}

// MaxRounds is how many rounds and gates are answered at once.
func (a *Analyses) MaxRounds() int64 { return a.rounds.max }

// PageBytes bounds a page of the list with its measurements.
func (a *Analyses) PageBytes() int64 { return a.pageBytes }

// Gone says the run ended here without its analysis ending: another
// replica holds it now.
func (r *Run) Gone() bool { return r.gone.Load() }

// Hub hands the run's events to its streams.
func (r *Run) Hub() *Hub { return r.hub }

// MaxStreams is how many streams may follow the run at once.
func (r *Run) MaxStreams() int32 { return r.maxStreams }

// Sources say how the plan's metrics query, for the HTML report.
func (r *Run) Sources() map[string]report.Source { return r.sources }

// The store's answers the HTTP layer tells apart, and the types of the
// list's filter (internal/store's, under the service's names).
var (
	// ErrNotFound: the store has no analysis of the id.
	ErrNotFound = store.ErrNotFound
	// ErrTooManySubscribers: the store follows as many analyses as it
	// can; poll instead.
	ErrTooManySubscribers = store.ErrTooManySubscribers
	// ErrBacklogFull: the webhook deliveries owed are at their bound.
	ErrBacklogFull = webhook.ErrBacklogFull
)

type (
	// Filter selects the analyses of a page of the list (store.Filter).
	Filter = store.Filter
	// FilterError is a filter the list refuses (store.FilterError).
	FilterError = store.FilterError
	// SecretError is a secret the store cannot keep (store.SecretError).
	SecretError = store.SecretError
	// StoredAnalysis is an analysis as the store has it (store.Analysis).
	StoredAnalysis = store.Analysis
)

// Bounds of the list's filters and pages (the store's).
const (
	DefaultListLimit = store.DefaultListLimit
	MaxListLimit     = store.MaxListLimit
	MaxArgFilters    = store.MaxArgFilters
)

// CheckWebhookEvents checks the names of the webhook events a caller asks
// for (webhook.CheckEvents).
func CheckWebhookEvents(events []string) error { return webhook.CheckEvents(events) }

// SharedStore says whether the analyses are kept in a store that other
// replicas share (store.Shared): then an analysis this replica does not
// hold may be another's, and the list is the store's.
func (a *Analyses) SharedStore() bool { return a.shared }

// Stored is the analysis id as the store has it, for one this replica does
// not hold: ErrNotFound when the store has none, a StoreError when it does
// not answer.
func (a *Analyses) Stored(ctx context.Context, id string) (*store.Analysis, error) {
	st, err := a.opts.Store.Get(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, &StoreError{err: err}
	}
	return st, err
}

// StoredReport is what the HTML report of a stored analysis is drawn from:
// its state, and its plan and sources when it compiles here.
func (a *Analyses) StoredReport(st *store.Analysis) (api.Analysis, *analysis.Plan, map[string]report.Source) {
	plan, sources := a.StoredPlan(st)
	return st.State, plan, sources
}

// TerminateStored terminates an analysis another replica runs: it asks
// through the store (RequestTerminate), which the owner sees when it
// renews its leases (every third of a lease), and waits for the end: at
// most StopTimeout, or until ctx is done. It returns the analysis as it
// stands, and whether it has completed. A StoreError when the store does
// not answer; ctx's error when ctx ends first.
func (a *Analyses) TerminateStored(ctx context.Context, st *store.Analysis) (api.Analysis, bool, error) {
	if st.State.CompletedAt != nil {
		return st.State, true, nil
	}
	s := a.opts.Store
	notes, unsubscribe, err := s.Subscribe(ctx, st.ID)
	if err != nil && !errors.Is(err, store.ErrTooManySubscribers) {
		return api.Analysis{}, false, &StoreError{err: err}
	}
	if unsubscribe != nil {
		defer unsubscribe()
	}
	if err := s.RequestTerminate(ctx, st.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return api.Analysis{}, false, &StoreError{err: err}
	}
	latest := st
	wait := time.NewTimer(StopTimeout)
	defer wait.Stop()
	// Without a subscription (too many), the state is read once more at
	// the end.
	for notes != nil {
		select {
		case _, ok := <-notes:
			if !ok {
				notes = nil
				continue
			}
			if got, err := s.Get(ctx, st.ID); err == nil {
				latest = got
			}
			if latest.State.CompletedAt != nil {
				return latest.State, true, nil
			}
		case <-wait.C:
			notes = nil
		case <-ctx.Done():
			return api.Analysis{}, false, ctx.Err()
		}
	}
	return latest.State, false, nil
}

// StoredFollow follows an analysis another replica runs through the
// store's notifications (Store.Subscribe).
type StoredFollow struct {
	s           store.Store
	id          string
	notes       <-chan store.Notification
	unsubscribe func()
}

// FollowFromStore begins to follow the analysis id through the store:
// ErrTooManySubscribers when the store follows as many as it can, a
// StoreError when it does not answer. Close ends it.
func (a *Analyses) FollowFromStore(ctx context.Context, id string) (*StoredFollow, error) {
	notes, unsubscribe, err := a.opts.Store.Subscribe(ctx, id)
	switch {
	case errors.Is(err, store.ErrTooManySubscribers):
		return nil, err
	case err != nil:
		return nil, &StoreError{err: err}
	}
	return &StoredFollow{s: a.opts.Store, id: id, notes: notes, unsubscribe: unsubscribe}, nil
}

// Written receives when the analysis was written; it is closed when the
// store ends the subscription.
func (f *StoredFollow) Written() <-chan store.Notification { return f.notes }

// Close ends the subscription.
func (f *StoredFollow) Close() { f.unsubscribe() }

// Events reads the state of the analysis and the measurements stored
// since next (which it moves on), as events in the order they finished.
func (f *StoredFollow) Events(ctx context.Context, next map[string]int) ([]api.Event, *api.Analysis, error) {
	st, err := f.s.Get(ctx, f.id)
	if err != nil {
		return nil, nil, err
	}
	var events []api.Event
	for _, res := range st.State.MetricResults {
		ms, err := f.s.Measurements(ctx, f.id, store.MeasurementRange{Metric: res.Name, From: next[res.Name], Limit: store.MaxListLimit})
		if err != nil {
			return nil, nil, err
		}
		for i := range ms {
			m := ms[i].Measurement
			events = append(events, api.Event{Type: api.EventMeasurement, AnalysisID: f.id, Metric: res.Name, Measurement: &m})
			next[res.Name] = ms[i].Index + 1
		}
		if n := len(events); n > 0 && events[n-1].Metric == res.Name && next[res.Name] == int(res.Count+res.Error) {
			events[n-1].MetricPhase = res.Phase
		}
	}
	slices.SortStableFunc(events, func(x, y api.Event) int { return timeOf(x.Measurement).Compare(timeOf(y.Measurement)) })
	return events, &st.State, nil
}

// timeOf is when a measurement finished, for the order of events.
func timeOf(m *api.Measurement) time.Time {
	if m.FinishedAt != nil {
		return *m.FinishedAt
	}
	return time.Time{}
}

// ListPage returns a page of the list, selected by o.Filter, and the
// cursor of the next page when more follow it: with a shared store every
// replica's analyses, from the store, and otherwise those held here. A
// filter the list refuses is a FilterError; a store that does not answer
// a StoreError.
func (a *Analyses) ListPage(ctx context.Context, o ListOptions) (page []api.Analysis, next string, err error) {
	if !a.shared {
		return a.Page(o)
	}
	stored, err := a.opts.Store.List(ctx, o.Filter)
	var fe *store.FilterError
	switch {
	case errors.As(err, &fe):
		return nil, "", err
	case err != nil:
		return nil, "", &StoreError{err: err}
	}
	page, next = make([]api.Analysis, 0, len(stored.Analyses)), stored.Next
	var bytes int64
	for i := range stored.Analyses {
		v := ListView(stored.Analyses[i].State, a.PlanOf(stored.Analyses[i].ID), o.Measurements)
		if o.Measurements {
			size := SizeOfAnalysis(&v)
			if i > 0 && bytes+size > a.pageBytes {
				// Cut here: the next page starts after the last one
				// shown.
				next = store.CursorAfter(&stored.Analyses[i-1])
				break
			}
			bytes += size
		}
		page = append(page, v)
	}
	return page, next, nil
}
