package durable

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// stubRun is a run the test drives: its events go to its writer as the
// service's observer hands them over, and it records what it is told.
type stubRun struct {
	id     string
	w      *Writer
	told   chan string
	events chan api.Event
}

func newStubRun(id string) *stubRun {
	return &stubRun{id: id, told: make(chan string, 4), events: make(chan api.Event, 4)}
}

func (r *stubRun) ID() string { return r.id }

func (r *stubRun) Snapshot() api.Analysis {
	now := time.Now()
	return api.Analysis{ID: r.id, Phase: api.PhaseRunning, StartedAt: &now, MetricResults: []api.MetricResult{}}
}

// end is the run's completed event, as the engine sends it when it stops.
func (r *stubRun) end(phase api.Phase, message string) {
	now := time.Now()
	final := api.Analysis{ID: r.id, Phase: phase, Message: message, StartedAt: &now, CompletedAt: &now, MetricResults: []api.MetricResult{}}
	r.w.Observe(api.Event{Type: api.EventCompleted, AnalysisID: r.id, Analysis: &final})
}

func (r *stubRun) Abort(message string) { r.told <- "abort"; r.end(api.PhaseError, message) }
func (r *stubRun) Terminate()           { r.told <- "terminate" }
func (r *stubRun) Suspend(message string) {
	r.told <- "suspend"
	r.end(api.PhaseError, message)
}

// newTestKeeper is a keeper on mem whose leases outlive the test.
func newTestKeeper(t *testing.T, mem store.Store, owner string) *Keeper {
	t.Helper()
	k := NewKeeper(KeeperOptions{Store: mem, Owner: owner, LeaseTTL: time.Hour, Retention: time.Hour, Logger: zap.NewNop(), StopTimeout: time.Second})
	t.Cleanup(k.Close)
	return k
}

// startStub creates the analysis id in the keeper's store and starts a
// stub run of it.
func startStub(t *testing.T, k *Keeper, id string) (*stubRun, *Writer) {
	t.Helper()
	now := time.Now()
	w, err := k.Create(context.Background(), store.NewAnalysis{ID: id, State: api.Analysis{ID: id, Phase: api.PhaseRunning, StartedAt: &now}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	run := newStubRun(id)
	run.w = w
	k.Start(w, run)
	return run, w
}

func waitDone(t *testing.T, w *Writer) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatalf("the writer has not ended after a minute; it is %s", w.State())
	}
}

// TestWriterStates: a writer runs until the run's end is written (final),
// or until the run is handed over (handing over, then handed over once
// the run has stopped, its lease released for another replica), or until
// another replica takes its lease (lost: the run is aborted here and
// nothing more is written).
func TestWriterStates(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.Options{})
	t.Cleanup(mem.Close)
	k := newTestKeeper(t, mem, "a")

	run, w := startStub(t, k, "final")
	if got := w.State(); got != Running {
		t.Fatalf("a new writer is %s, want running", got)
	}
	run.end(api.PhaseSuccessful, "")
	waitDone(t, w)
	if got := w.State(); got != Final {
		t.Errorf("after the run's end: %s, want final", got)
	}
	if st, err := mem.Get(ctx, "final"); err != nil || st.Phase != api.PhaseSuccessful {
		t.Errorf("stored: %+v, %v; want Successful", st, err)
	}

	run, w = startStub(t, k, "handed")
	if n := k.HandOver(ctx); n != 1 {
		t.Errorf("%d handed over, want 1", n)
	}
	if got := <-run.told; got != "suspend" {
		t.Errorf("the run was told to %s, want suspend", got)
	}
	if got := w.State(); got != HandedOver {
		t.Errorf("after the hand-over: %s, want handed over", got)
	}
	st, err := mem.Get(ctx, "handed")
	if err != nil || st.Phase != api.PhaseRunning || st.Lease.Owner != "" {
		t.Errorf("stored after the hand-over: %+v, %v; want Running, its lease released", st, err)
	}

	run, w = startStub(t, k, "lost")
	if err := mem.Release(ctx, w.currentLease()); err != nil {
		t.Fatal(err)
	}
	if ls, err := mem.Claim(ctx, "b", 10); err != nil || len(ls) != 2 {
		// "handed" and "lost".
		t.Fatalf("claimed %v, %v; want two", ls, err)
	}
	ms := api.Measurement{Phase: api.PhaseSuccessful, Value: "1"}
	w.Observe(api.Event{Type: api.EventMeasurement, AnalysisID: "lost", Metric: "m", Measurement: &ms})
	if got := <-run.told; got != "abort" {
		t.Errorf("the run was told to %s, want abort", got)
	}
	waitDone(t, w)
	if got := w.State(); got != Lost {
		t.Errorf("after another replica claimed the lease: %s, want lost", got)
	}
	if w.Observe(api.Event{Type: api.EventMeasurement, AnalysisID: "lost", Metric: "m", Measurement: &ms}) {
		t.Error("a lost writer took an event")
	}
	if got, err := mem.Measurements(ctx, "lost", store.MeasurementRange{}); err != nil || len(got) != 0 {
		t.Errorf("the lost writer stored %v, %v", got, err)
	}
}
