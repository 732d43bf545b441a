package analysis

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

// A run started on a context that has already ended is stopped by the
// watch of that context, which may ask for the stop before Start has put
// the run together: the scheduler's first visit must find it whole (under
// -race, a visit that raced with Start was reported, or crashed).
func TestRunStartedOnEndedContext(t *testing.T) {
	sched := NewScheduler(clock.Real{}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := metric("m", withCount(3))
	m.Judge = phaseJudge{}
	m.Source = SourceFunc(func(ctx context.Context, _ time.Time) Observation {
		return Observation{Value: 1.0, Display: "1"}
	})
	plan := &Plan{Metrics: []Metric{m}}
	for i := range 200 {
		run := Start(ctx, plan, Options{Scheduler: sched})
		<-run.Done()
		if got := run.Snapshot(); got.Phase != api.PhaseSuccessful || got.Message != "Run Terminated" {
			t.Fatalf("run %d: got (%s, %q), want a terminated run", i, got.Phase, got.Message)
		}
	}
}
