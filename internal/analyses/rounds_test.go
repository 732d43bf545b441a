package analyses

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// roundPlan is plan(t, 1) measured by measure.
func roundPlan(t *testing.T, measure analysis.SourceFunc) *analysis.Plan {
	p := plan(t, 1)
	p.Metrics[0].Source = measure
	return p
}

// onStack reports whether a function whose name ends in name is on the
// calling goroutine's stack.
func onStack(name string) bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, name) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestRoundMeasuresOnTheCallersGoroutine checks that a round's
// measurement is taken on the goroutine that called Evaluate, and that
// the round is answered there, once, kept.
func TestRoundMeasuresOnTheCallersGoroutine(t *testing.T) {
	a := newTestAnalyses(t, 1)
	var measuredHere, answeredHere atomic.Bool
	p := roundPlan(t, func(context.Context, time.Time) analysis.Observation {
		measuredHere.Store(onStack("TestRoundMeasuresOnTheCallersGoroutine"))
		return analysis.Observation{Value: 1.0, Display: "1"}
	})
	answers := 0
	err := a.Evaluate(context.Background(), p, StartOptions{}, func(result api.Analysis, kept, late bool) {
		answers++
		answeredHere.Store(onStack("TestRoundMeasuresOnTheCallersGoroutine"))
		if result.Phase != api.PhaseSuccessful || !kept || late {
			t.Errorf("round %s, kept %t, late %t; want Successful, kept, not late", result.Phase, kept, late)
		}
	})
	if err != nil || answers != 1 {
		t.Fatalf("Evaluate: %v, %d answers; want one", err, answers)
	}
	if !measuredHere.Load() || !answeredHere.Load() {
		t.Errorf("measured on the caller's goroutine: %t, answered there: %t; want both", measuredHere.Load(), answeredHere.Load())
	}
}

// TestRoundAnsweredByTheWatch checks that a round whose measurement does
// not return by its deadline (stopGrace after it) is answered all the
// same, late, from another goroutine, while Evaluate waits for the
// measurement, which holds the round's slot until it returns.
func TestRoundAnsweredByTheWatch(t *testing.T) {
	a := newTestAnalysesWith(t, AnalysesOptions{MaxRunning: 1, MaxFinished: 10, Retention: time.Hour, MaxRounds: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	p := roundPlan(t, func(context.Context, time.Time) analysis.Observation {
		close(entered)
		<-release // whatever its context says
		return analysis.Observation{Value: 1.0, Display: "1"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	type answer struct {
		result     api.Analysis
		late, here bool
	}
	answered, returned := make(chan answer, 2), make(chan error, 1)
	go func() {
		returned <- a.Evaluate(ctx, p, StartOptions{}, func(result api.Analysis, _, late bool) {
			answered <- answer{result, late, onStack("(*Analyses).Evaluate")}
		})
	}()
	<-entered
	var got answer
	select {
	case got = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("a round whose measurement does not return was not answered")
	}
	ms := got.result.MetricResults[0].Measurements[0]
	if !got.late || got.here || got.result.Phase != api.PhaseError || !strings.HasPrefix(ms.Message, "deadline exceeded") {
		t.Errorf("answered late %t, on Evaluate's goroutine %t: %s %q; want late, from another goroutine, Error, deadline exceeded",
			got.late, got.here, got.result.Phase, ms.Message)
	}
	select {
	case err := <-returned:
		t.Fatalf("Evaluate returned (%v) before its measurement did", err)
	default:
	}
	if _, err := a.AcquireRound(); !errors.Is(err, ErrTooManyRounds) {
		t.Errorf("a round while the only slot's measurement is stuck: %v, want ErrTooManyRounds", err)
	}
	close(release)
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	if len(answered) != 0 {
		t.Errorf("answered again once the measurement returned: %+v", <-answered)
	}
	free, err := a.AcquireRound()
	if err != nil {
		t.Fatalf("the slot once the measurement returned: %v", err)
	}
	free()
}

// TestRoundBackAfterItsDeadline checks that a round whose measurement
// returns when its deadline passes, as sources do, is answered by the
// engine, on Evaluate's goroutine, with what the measurement said.
func TestRoundBackAfterItsDeadline(t *testing.T) {
	a := newTestAnalyses(t, 1)
	p := roundPlan(t, func(ctx context.Context, _ time.Time) analysis.Observation {
		<-ctx.Done()
		return analysis.Observation{Err: errors.New("the source's own words")}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	answers := 0
	err := a.Evaluate(ctx, p, StartOptions{}, func(result api.Analysis, _, late bool) {
		answers++
		if ms := result.MetricResults[0].Measurements[0]; late || ms.Message != "the source's own words" {
			t.Errorf("late %t, measurement %q; want the engine's answer", late, ms.Message)
		}
		if !onStack("(*Analyses).Evaluate") {
			t.Error("answered on another goroutine than Evaluate's")
		}
	})
	if err != nil || answers != 1 {
		t.Fatalf("Evaluate: %v, %d answers; want one", err, answers)
	}
}
