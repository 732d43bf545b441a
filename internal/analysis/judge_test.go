package analysis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/condition"
)

// stuckJudge is a ContextJudge whose judging never ends by itself: the
// engine must stop waiting for it when the measurement's context ends. It
// returns once its caller has stopped waiting, so that no goroutine
// outlives the test.
type stuckJudge struct{ entered chan struct{} }

func (stuckJudge) Judge(any) (api.Phase, error) { panic("Judge called; want JudgeContext") }

func (j stuckJudge) JudgeContext(ctx context.Context, _ any) (api.Phase, error) {
	select {
	case j.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return api.PhaseError, ctx.Err()
}

// TestEvaluateJudgeAnswersByDeadline: a round whose condition is still
// running at the round's deadline answers then, with an Error measurement.
func TestEvaluateJudgeAnswersByDeadline(t *testing.T) {
	m := metric("stuck")
	m.Source = SourceFunc(func(context.Context, time.Time) Observation { return Observation{Value: 1.0, Display: "1"} })
	m.Judge = stuckJudge{entered: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan api.Analysis, 1)
	go func() { done <- Evaluate(ctx, &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)}) }()
	select {
	case a := <-done:
		ms := a.MetricResults[0].Measurements[0]
		if a.Phase != api.PhaseError || ms.Phase != api.PhaseError || !strings.Contains(ms.Message, "deadline exceeded") {
			t.Errorf("round: %s, measurement %s %q; want Error, deadline exceeded", a.Phase, ms.Phase, ms.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the round did not answer at its deadline")
	}
}

// TestRunTerminateStopsJudging: terminating an analysis whose condition is
// being judged ends it at once; the unfinished measurement is not recorded.
func TestRunTerminateStopsJudging(t *testing.T) {
	m := metric("stuck")
	m.Source = SourceFunc(func(context.Context, time.Time) Observation { return Observation{Value: 1.0, Display: "1"} })
	j := stuckJudge{entered: make(chan struct{}, 1)}
	m.Judge = j
	r := Start(context.Background(), &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)})
	select {
	case <-j.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the condition was never judged")
	}
	r.Terminate()
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end on Terminate")
	}
	a := r.Snapshot()
	if a.Phase != api.PhaseSuccessful || len(a.MetricResults[0].Measurements) != 0 {
		t.Errorf("terminated run: %s, measurements %+v; want Successful with none recorded", a.Phase, a.MetricResults[0].Measurements)
	}
}

// TestMeasureUsesConditionPool judges a large result with real conditions
// through JudgeContext (on the evaluators' pool), and a cancelled one not
// at all.
func TestMeasureUsesConditionPool(t *testing.T) {
	c, errs := condition.Compile("all(result, {# >= 0})", "")
	if errs != nil {
		t.Fatal(errs)
	}
	values := make([]float64, 5000)
	m := metric("large")
	m.Source = SourceFunc(func(context.Context, time.Time) Observation { return Observation{Value: values, Display: "[…]"} })
	m.Judge = c
	a := Evaluate(context.Background(), &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)})
	if a.Phase != api.PhaseSuccessful {
		t.Errorf("large result: %s %q", a.Phase, a.Message)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &Run{plan: &Plan{Metrics: []Metric{m}}, clock: clock.NewFake(t0)}
	ms := r.measure(ctx, 0)
	if ms.Phase != api.PhaseError || !strings.Contains(ms.Message, context.Canceled.Error()) {
		t.Errorf("cancelled: %s %q", ms.Phase, ms.Message)
	}
}

// TestMeasurementMessageCapped: an error as long as the result it quotes
// is cut to MaxMessageBytes, whether the source or the conditions gave it.
func TestMeasurementMessageCapped(t *testing.T) {
	c, errs := condition.Compile("asFloat(result) > 0", "")
	if errs != nil {
		t.Fatal(errs)
	}
	values := make([]float64, 5000)
	for _, m := range []Metric{
		{Name: "source", Source: SourceFunc(func(context.Context, time.Time) Observation {
			return Observation{Err: errors.New(strings.Repeat("proxy error page ", 10000))}
		}), Judge: c},
		{Name: "condition", Source: SourceFunc(func(context.Context, time.Time) Observation {
			return Observation{Value: values, Display: "[…]"}
		}), Judge: c},
	} {
		a := Evaluate(context.Background(), &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)})
		ms := a.MetricResults[0].Measurements[0]
		if ms.Phase != api.PhaseError || len(ms.Message) > MaxMessageBytes || !strings.HasSuffix(ms.Message, valueCut) {
			t.Errorf("%s: %s, a message of %d bytes ending %q", m.Name, ms.Phase, len(ms.Message), ms.Message[max(0, len(ms.Message)-20):])
		}
	}
}

// TestMeasurementValueCapped: a source's value longer than MaxValueBytes
// is cut, at a character's boundary, and marked.
func TestMeasurementValueCapped(t *testing.T) {
	for _, display := range []string{
		strings.Repeat("x", MaxValueBytes),
		strings.Repeat("x", 10*MaxValueBytes),
		strings.Repeat("é", MaxValueBytes),
	} {
		m := metric("long")
		m.Judge = phaseJudge{}
		m.Source = SourceFunc(func(context.Context, time.Time) Observation {
			return Observation{Value: api.PhaseSuccessful, Display: display}
		})
		a := Evaluate(context.Background(), &Plan{Metrics: []Metric{m}}, Options{Clock: clock.NewFake(t0)})
		got := a.MetricResults[0].Measurements[0].Value
		switch {
		case len(display) <= MaxValueBytes:
			if got != display {
				t.Errorf("%d bytes: changed", len(display))
			}
		case len(got) > MaxValueBytes || !strings.HasSuffix(got, valueCut) || !utf8.ValidString(got) ||
			!strings.HasPrefix(display, strings.TrimSuffix(got, valueCut)):
			t.Errorf("%d bytes: kept %d bytes ending %q", len(display), len(got), got[max(0, len(got)-20):])
		}
	}
}
