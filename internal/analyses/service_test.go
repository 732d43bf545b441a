package analyses

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/ids"
	"github.com/canaryd/canaryd/internal/webhook"
)

// plan is one metric measured count times, 1 ms apart, always 1.
func plan(t testing.TB, count int32) *analysis.Plan {
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
	return newTestAnalysesWith(t, AnalysesOptions{MaxRunning: maxRunning, MaxFinished: 10, Retention: time.Hour})
}

// newTestAnalysesWith returns the analyses of opts, drained and closed
// when the test ends.
func newTestAnalysesWith(t *testing.T, opts AnalysesOptions) *Analyses {
	t.Helper()
	a, err := NewAnalyses(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a.Drain(ctx)
		a.Close()
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
	answered := func(api.Analysis, bool, bool) { t.Error("a round answered while draining") }
	if err := a.Evaluate(context.Background(), plan(t, 1), StartOptions{}, answered); !errors.Is(err, ErrDraining) {
		t.Errorf("Evaluate while draining: %v, want ErrDraining", err)
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if len(id) != 26 || seen[id] {
			t.Fatalf("id %q: want 26 characters, never repeated", id)
		}
		seen[id] = true
	}
	// With an epoch before it, as an analysis' or a round's id, in one
	// allocation; the id is read as one made by this process.
	epoch := ids.Epoch(time.UnixMilli(1_700_000_000_000))
	for range 100 {
		id := newID(epoch)
		if len(id) != ids.EpochLength+ids.RandomLength || !strings.HasPrefix(id, epoch) || seen[id] {
			t.Fatalf("id %q: want the epoch %q and 26 characters, never repeated", id, epoch)
		}
		if at, ok := ids.EpochOf(id); !ok || at.UnixMilli() != 1_700_000_000_000 {
			t.Fatalf("id %q: epoch %v (%v)", id, at, ok)
		}
		if _, err := IDEncoding.DecodeString(id[ids.EpochLength:]); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		seen[id] = true
	}
	if n := testing.AllocsPerRun(100, func() { _ = newID(epoch) }); n != 1 && !raceDetector {
		t.Errorf("an id made %v allocations, want 1", n)
	}
}

// TestWaitWebhooksOutlivesRetention checks that a webhook whose delivery is
// still pending when its analysis is pruned is still waited for (and here,
// abandoned) at shutdown.
func TestWaitWebhooksOutlivesRetention(t *testing.T) {
	release := make(chan struct{})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // a receiver that takes its time
	}))
	defer receiver.Close()
	defer close(release)
	sender, err := webhook.New(webhook.Options{Allow: []string{receiver.URL}})
	if err != nil {
		t.Fatal(err)
	}
	// Finished analyses may be evicted at once (MinRetention) for the next.
	a, err := NewAnalyses(AnalysesOptions{MaxRunning: 2, MaxFinished: 1, Retention: time.Hour, MinRetention: time.Nanosecond, Webhooks: sender})
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Start(plan(t, 1), StartOptions{Webhook: &WebhookRequest{URL: receiver.URL + "/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	second, err := a.Start(plan(t, 1), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-second.Done()
	if _, ok := a.Get(first.ID()); ok {
		t.Fatal("the first analysis was not pruned (--max-finished 1)")
	}
	if n := a.Drain(context.Background()); n != 0 {
		t.Errorf("Drain aborted %d analyses, want none", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if n := a.WaitWebhooks(ctx); n != 1 {
		t.Errorf("WaitWebhooks abandoned %d webhooks, want the pruned analysis' one", n)
	}
	if st := first.Snapshot().Webhook; st == nil || st.Failed != 1 || !strings.Contains(st.LastError, "abandoned") {
		t.Errorf("the pruned analysis' webhook: %+v, want its completed event abandoned", st)
	}
}
