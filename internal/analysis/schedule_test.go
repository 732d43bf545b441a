package analysis

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// scheduleRecorder is a source that keeps the Schedule of every instant
// it measures (a Last one over one that is not: a backtest asks ahead
// with Last false), and makes its first last measurement an Error.
type scheduleRecorder struct {
	t       *testing.T
	mu      sync.Mutex
	got     map[time.Time]Schedule
	errOnce bool
	erred   bool
}

func (r *scheduleRecorder) Measure(ctx context.Context, at time.Time) Observation {
	s, ok := ScheduleFrom(ctx)
	if !ok {
		r.t.Errorf("the measurement at %s has no schedule", at)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, seen := r.got[at]; !seen || !prev.Last {
		r.got[at] = s
	}
	if s.Last && r.errOnce && !r.erred {
		r.erred = true
		return Observation{Err: context.DeadlineExceeded}
	}
	return Observation{Value: api.PhaseSuccessful}
}

// TestSchedule checks the Schedule each measurement's source is handed:
// the analysis' start, the metric's interval, and Last on the measurement
// that reaches the count, an Error's retry included; through a
// backtest's prefetching too, where only the last measurement is not
// answered ahead.
func TestSchedule(t *testing.T) {
	t.Run("interval and count", func(t *testing.T) {
		rec := &scheduleRecorder{t: t, got: map[time.Time]Schedule{}, errOnce: true}
		m := metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) })
		m.Source, m.Judge = rec, phaseJudge{}
		a := Backtest(context.Background(), &Plan{Metrics: []Metric{m}}, t0, t0.Add(time.Hour), Options{ID: "s", ErrorRetryInterval: time.Minute})
		if a.Phase != api.PhaseSuccessful {
			t.Fatalf("%s %s", a.Phase, a.Message)
		}
		for _, want := range []struct {
			at   time.Duration
			last bool
		}{{0, false}, {10 * time.Minute, false}, {20 * time.Minute, true}, {21 * time.Minute, true}} {
			s, ok := rec.got[t0.Add(want.at)]
			if !ok || !s.Start.Equal(t0) || s.Interval != 10*time.Minute || s.Last != want.last {
				t.Errorf("measurement at +%s: schedule %+v (%v), want start %s, interval 10m, last %v", want.at, s, ok, t0, want.last)
			}
		}
	})
	t.Run("resumed", func(t *testing.T) {
		// Stored: started at t0, measured at +10m and +20m; resumed at
		// +45m, its third and last measurement is at once, with the
		// stored start.
		rec := &scheduleRecorder{t: t, got: map[time.Time]Schedule{}}
		m := metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) })
		m.Source, m.Judge = rec, phaseJudge{}
		snap := stored(api.MetricResult{Name: "m", Phase: api.PhaseRunning, Count: 2, Successful: 2, ConsecutiveSuccess: 2,
			Measurements: []api.Measurement{
				finished(api.PhaseSuccessful, 10*time.Minute, 10*time.Minute), finished(api.PhaseSuccessful, 20*time.Minute, 20*time.Minute),
			}})
		h := resume(t, &Plan{Metrics: []Metric{m}}, snap, 45*time.Minute)
		if a := h.finish(); a.Phase != api.PhaseSuccessful {
			t.Fatalf("%s %s", a.Phase, a.Message)
		}
		if s, ok := rec.got[t0.Add(45*time.Minute)]; !ok || !s.Start.Equal(t0) || !s.Last || s.Interval != 10*time.Minute {
			t.Errorf("resumed measurement: schedule %+v (%v), want the stored start %s, Last", s, ok, t0)
		}
	})
	t.Run("one measurement", func(t *testing.T) {
		rec := &scheduleRecorder{t: t, got: map[time.Time]Schedule{}}
		m := Metric{Name: "m", Count: i32(1), Source: rec, Judge: phaseJudge{}}
		Backtest(context.Background(), &Plan{Metrics: []Metric{m}}, t0, t0.Add(time.Hour), Options{ID: "s"})
		if s := rec.got[t0]; !s.Last || !s.Start.Equal(t0) || s.Interval != 0 {
			t.Errorf("schedule %+v, want the start %s and Last", s, t0)
		}
	})
}

// TestWithScheduleAllocatesOnce checks that a measurement's schedule
// costs it one allocation, and that the context carrying it still hands
// on its parent's values and cancellation.
func TestWithScheduleAllocatesOnce(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	s := Schedule{Start: t0, Interval: time.Minute, Last: true}
	var ctx context.Context
	if n := testing.AllocsPerRun(100, func() { ctx = WithSchedule(parent, s) }); n != 1 {
		t.Errorf("WithSchedule made %.0f allocations; want 1", n)
	}
	if got, ok := ScheduleFrom(ctx); !ok || got != s {
		t.Errorf("ScheduleFrom: %+v, %v; want %+v", got, ok, s)
	}
	if ctx.Value(key{}) != "v" {
		t.Error("the parent's value is not handed on")
	}
	if _, ok := ScheduleFrom(parent); ok {
		t.Error("a context without a schedule has one")
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	// Cancelled with its parent, at once: the context tree reaches it
	// through the schedule's context, as through context.WithValue's.
	if child.Err() == nil {
		t.Error("a context derived from it did not end with its parent")
	}
}
