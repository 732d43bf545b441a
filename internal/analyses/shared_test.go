package analyses

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/ids"
	"github.com/canaryd/canaryd/internal/store"
)

// TestRestartedOnlyWhenNotShared: an id made by an earlier process is gone
// with it (Restarted, the 410) when the store is this process' alone, the
// default; in a shared store it may be there, read from the store.
func TestRestartedOnlyWhenNotShared(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	earlier := ids.Epoch(now.Add(-time.Hour)) + NewID()
	later := ids.Epoch(now.Add(time.Hour)) + NewID()
	for _, tc := range []struct {
		name  string
		store store.Store
		want  bool
	}{
		{"default", nil, true},
		{"memory", store.NewMemory(store.Options{}), true},
		{"shared", store.NewMemory(store.Options{Shared: true}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 1, MaxFinished: 1, Retention: time.Hour, Clock: clock.NewFake(now), Store: tc.store})
			if a.SharedStore() == tc.want {
				t.Errorf("SharedStore() = %v with %s", a.SharedStore(), tc.name)
			}
			if started, got := a.Restarted(earlier); got != tc.want || (got && !started.Equal(now.Add(-time.Hour))) {
				t.Errorf("Restarted(an earlier process' id) = %v, %v; want %v", started, got, tc.want)
			}
			if _, got := a.Restarted(later); got {
				t.Error("Restarted(an id of a later epoch) = true")
			}
		})
	}
}

// TestDrainAbortsWhenNotShared: at shutdown, with a store that is not
// shared, a run that does not finish within the grace is aborted (phase
// Error, ShutdownMessage), and nothing was written to the store.
func TestDrainAbortsWhenNotShared(t *testing.T) {
	mem := store.NewMemory(store.Options{})
	a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 1, MaxFinished: 1, Retention: time.Hour, Store: mem})
	run, err := a.Start(plan(t, 0), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := a.Drain(ctx); n != 1 {
		t.Errorf("Drain aborted %d, want 1", n)
	}
	waitDone(t, run)
	if s := run.Snapshot(); s.Phase != api.PhaseError || s.Message != ShutdownMessage || run.Gone() {
		t.Errorf("after Drain: phase %s, message %q, gone %v; want Error, %q, not gone", s.Phase, s.Message, run.Gone(), ShutdownMessage)
	}
	if _, err := mem.Get(context.Background(), run.ID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the memory store has the run: %v", err)
	}
}

// TestDrainHandsOverWhenShared: at shutdown, with a shared store, a run
// is not aborted but handed over: it stops here unfinished, and its lease
// is released in the store for another replica to claim at once.
func TestDrainHandsOverWhenShared(t *testing.T) {
	shared := store.NewMemory(store.Options{Shared: true})
	a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 1, MaxFinished: 1, Retention: time.Hour, Replica: "r", Store: shared})
	run, err := a.Start(plan(t, 0), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := a.Drain(ctx); n != 0 {
		t.Errorf("Drain aborted %d, want 0: handed over", n)
	}
	waitDone(t, run)
	if !run.Gone() {
		t.Errorf("the run was not handed over: %+v", run.Snapshot())
	}
	st, err := shared.Get(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st.CompletedAt != nil || st.Lease.Owner != "" {
		t.Errorf("in the store after the hand-over: completed %v, lease owner %q; want running, no owner", st.CompletedAt, st.Lease.Owner)
	}
	if got, err := shared.Claim(context.Background(), "other", 10); err != nil || len(got) != 1 || got[0].ID != run.ID() {
		t.Errorf("another replica claims %+v (%v), want the run handed over", got, err)
	}
}

// TestFinishedHeldByTheMemoryStore: with memory:, the finished analyses and
// the byte total of those held are the memory store's (store.RetainedIn),
// and a finished run is read from there; with a shared store, the service
// holds its own.
func TestFinishedHeldByTheMemoryStore(t *testing.T) {
	for _, shared := range []bool{false, true} {
		mem := store.NewMemory(store.Options{Shared: shared})
		a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 1, MaxFinished: 1, Retention: time.Hour, Replica: "r", Store: mem})
		run, err := a.Start(plan(t, 1), StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, run)
		if got, ok := a.Get(run.ID()); !ok || got != run {
			t.Errorf("shared %v: Get of the finished run: %v", shared, ok)
		}
		held := store.RetainedIn(mem, store.RetainOptions{})
		if got, want := held == a.held, !shared; got != want {
			t.Errorf("shared %v: the service holds its finished analyses in the memory store: %v, want %v", shared, got, want)
		}
		if got := a.held.Bytes().Load(); got != run.ledger.Size() || got <= 0 {
			t.Errorf("shared %v: %d bytes held, want the finished run's %d", shared, got, run.ledger.Size())
		}
	}
}

// waitDone waits for run to end, a minute at most.
func waitDone(t *testing.T, run *Run) {
	t.Helper()
	select {
	case <-run.Done():
	case <-time.After(time.Minute):
		t.Fatalf("%s has not ended after a minute", run.ID())
	}
}
