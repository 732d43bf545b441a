package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
)

// plan is one metric measured count times, 1 ms apart, always 1.
func plan(t *testing.T, count int32) *analysis.Plan {
	t.Helper()
	judge, errs := condition.Compile("result == 1", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m := analysis.Metric{
		Name: "m", Interval: time.Millisecond, FailureLimit: 0, ConsecutiveErrorLimit: 4, Retention: 10, Judge: judge,
		Source: analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Value: 1.0, Display: "1"}
		}),
	}
	if count > 0 {
		m.Count = &count
	}
	return &analysis.Plan{Metrics: []analysis.Metric{m}}
}

func newTestAnalyses(t *testing.T, maxRunning int) *Analyses {
	t.Helper()
	a, err := NewAnalyses(AnalysesOptions{MaxRunning: maxRunning, MaxFinished: 10, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a.Drain(ctx)
	})
	return a
}

func TestStartObserver(t *testing.T) {
	a := newTestAnalyses(t, 1)
	events := make(chan api.Event, 16)
	run, err := a.Start(plan(t, 3), StartOptions{Observer: func(ev api.Event) { events <- ev }})
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	close(events)
	var types []api.EventType
	for ev := range events {
		types = append(types, ev.Type)
	}
	want := []api.EventType{api.EventMeasurement, api.EventMeasurement, api.EventMeasurement, api.EventCompleted}
	if len(types) != len(want) {
		t.Fatalf("the observer saw %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Errorf("event %d: %s, want %s", i, types[i], want[i])
		}
	}
	if got, ok := a.Get(run.ID()); !ok || got != run {
		t.Error("a finished analysis is not kept")
	}
}

func TestStartLimits(t *testing.T) {
	a := newTestAnalyses(t, 1)
	if _, err := a.Start(plan(t, 0), StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(plan(t, 0), StartOptions{}); !errors.Is(err, ErrTooMany) {
		t.Errorf("a second analysis over the limit of 1: %v, want ErrTooMany", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := a.Drain(ctx); n != 1 {
		t.Errorf("Drain aborted %d, want 1", n)
	}
	if _, err := a.Start(plan(t, 1), StartOptions{}); !errors.Is(err, ErrDraining) {
		t.Errorf("Start while draining: %v, want ErrDraining", err)
	}
	if _, err := a.Evaluate(context.Background(), plan(t, 1), StartOptions{}); !errors.Is(err, ErrDraining) {
		t.Errorf("Evaluate while draining: %v, want ErrDraining", err)
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newID()
		if len(id) != 26 || seen[id] {
			t.Fatalf("id %q: want 26 characters, never repeated", id)
		}
		seen[id] = true
	}
}
