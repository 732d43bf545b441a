package analyses

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// flakyBatches is a store whose first batches of group commit fail as a
// store that does not answer fails.
type flakyBatches struct {
	store.Store
	fail            atomic.Int32
	batches, failed atomic.Int32
}

func (f *flakyBatches) CommitBatch(ctx context.Context, ws []store.Write) ([]error, error) {
	f.batches.Add(1)
	if f.fail.Add(-1) >= 0 {
		f.failed.Add(1)
		return nil, fmt.Errorf("%w: commit: a fault of the test's", store.ErrUnavailable)
	}
	return f.Store.(store.BatchCommitter).CommitBatch(ctx, ws)
}

// TestGroupCommitRetried: the writers of many runs share batches
// (store.Grouped); batches that fail fail each of their writes, which
// their writers try again, and every run's measurements and final state
// reach the store, none lost.
func TestGroupCommitRetried(t *testing.T) {
	mem := store.NewMemory(store.Options{})
	t.Cleanup(mem.Close)
	f := &flakyBatches{Store: mem}
	const failures = 3
	f.fail.Store(failures)
	a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 50, MaxFinished: 50, Retention: time.Hour, Replica: "r",
		Store: store.Grouped(f, store.GroupOptions{Interval: 5 * time.Millisecond})})
	const runs, count = 20, 3
	var started []*Run
	for range runs {
		run, err := a.Start(plan(t, count), StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, run)
	}
	for _, run := range started {
		select {
		case <-run.Done():
		case <-time.After(time.Minute):
			t.Fatalf("%s has not finished after a minute", run.ID())
		}
	}
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for _, run := range started {
		for {
			st, err := mem.Get(ctx, run.ID())
			ms, merr := mem.Measurements(ctx, run.ID(), store.MeasurementRange{})
			if err == nil && merr == nil && st.Phase == api.PhaseSuccessful && len(ms) == count {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s in the store: %+v (%v), %d measurements (%v); want Successful with %d", run.ID(), st, err, len(ms), merr, count)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := f.failed.Load(); got != failures {
		t.Errorf("%d batches failed, want %d", got, failures)
	}
}
