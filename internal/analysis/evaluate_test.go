package analysis

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
)

func TestEvaluate(t *testing.T) {
	dry := func(m *Metric) { m.DryRun = true }
	tests := []struct {
		name        string
		phases      []api.Phase
		dryRun      []bool
		want        api.Phase
		wantMessage string
		wantRun     api.RunSummary
	}{
		{"all successful", []api.Phase{api.PhaseSuccessful, api.PhaseSuccessful}, nil,
			api.PhaseSuccessful, "", api.RunSummary{Count: 2, Successful: 2}},
		{"failed beats error", []api.Phase{api.PhaseError, api.PhaseFailed}, nil,
			api.PhaseFailed, `Metric "m1" assessed Failed: measured Failed: successCondition "" was false`, api.RunSummary{Count: 2, Failed: 1, Error: 1}},
		{"error alone", []api.Phase{api.PhaseSuccessful, api.PhaseError}, nil,
			api.PhaseError, `Metric "m1" assessed Error: query failed`, api.RunSummary{Count: 2, Successful: 1, Error: 1}},
		{"inconclusive", []api.Phase{api.PhaseInconclusive, api.PhaseSuccessful}, nil,
			api.PhaseInconclusive, `Metric "m0" assessed Inconclusive: measured Inconclusive: neither successCondition "" nor failureCondition "" was true`,
			api.RunSummary{Count: 2, Successful: 1, Inconclusive: 1}},
		{"dry-run failure ignored", []api.Phase{api.PhaseSuccessful, api.PhaseFailed}, []bool{false, true},
			api.PhaseSuccessful, "", api.RunSummary{Count: 1, Successful: 1}},
	}
	for _, tt := range tests {
		plan := &Plan{}
		for i, p := range tt.phases {
			m := metric("m"+string(rune('0'+i)), withCount(5))
			if tt.dryRun != nil && tt.dryRun[i] {
				dry(&m)
			}
			m.Source, m.Judge = phases(p), phaseJudge{}
			plan.Metrics = append(plan.Metrics, m)
		}
		got := Evaluate(context.Background(), plan, Options{Clock: clock.NewFake(t0)})
		if got.Phase != tt.want || got.Message != tt.wantMessage {
			t.Errorf("%s: got (%s, %q), want (%s, %q)", tt.name, got.Phase, got.Message, tt.want, tt.wantMessage)
		}
		if got.RunSummary != tt.wantRun {
			t.Errorf("%s: runSummary %+v, want %+v", tt.name, got.RunSummary, tt.wantRun)
		}
		for _, r := range got.MetricResults {
			if len(r.Measurements) != 1 {
				t.Errorf("%s: %s has %d measurements, want exactly 1", tt.name, r.Name, len(r.Measurements))
			}
		}
		if got.CompletedAt == nil {
			t.Errorf("%s: completedAt unset", tt.name)
		}
	}
}

// TestEvaluateOneMetricAllocatesOnce holds a round of one metric, the
// web provider's usual, to one allocation of its own: its instants, its
// measurement and its result, which the answer points into.
func TestEvaluateOneMetricAllocatesOnce(t *testing.T) {
	obs := Observation{Value: api.PhaseSuccessful, Display: "1"}
	m := metric("m")
	m.Source = SourceFunc(func(context.Context, time.Time) Observation { return obs })
	m.Judge = phaseJudge{}
	plan := &Plan{Metrics: []Metric{m}}
	opts := Options{ID: "r", Clock: clock.NewFake(t0)}
	ctx := context.Background()
	if got := Evaluate(ctx, plan, opts); got.Phase != api.PhaseSuccessful || len(got.MetricResults) != 1 ||
		got.MetricResults[0].Measurements[0].Value != "1" || got.StartedAt == nil || got.CompletedAt == nil {
		t.Fatalf("round %+v", got)
	}
	if n := testing.AllocsPerRun(100, func() { Evaluate(ctx, plan, opts) }); n != 1 {
		t.Errorf("a round of one metric made %v allocations, want 1", n)
	}
}

// TestEvaluateEmptyLists holds a round's lists to empty, never nil, as
// the answer writes them ([] rather than null).
func TestEvaluateEmptyLists(t *testing.T) {
	got := Evaluate(context.Background(), &Plan{}, Options{Clock: clock.NewFake(t0)})
	if got.MetricResults == nil || got.Phase != api.PhaseSuccessful {
		t.Errorf("a round of no metric: results %#v, phase %s", got.MetricResults, got.Phase)
	}
}

// TestPlanCounted checks the plan a run runs: a metric with neither a
// count nor an interval is counted once, in a copy, and a plan whose
// metrics all have one or the other is its own.
func TestPlanCounted(t *testing.T) {
	five := int32(5)
	plan := &Plan{Metrics: []Metric{{Name: "once"}, {Name: "five", Count: &five}, {Name: "every", Interval: time.Minute}}}
	counted := plan.Counted()
	if counted == plan || plan.Metrics[0].Count != nil {
		t.Fatal("the plan itself was changed")
	}
	if c := counted.Metrics[0].Count; c == nil || *c != 1 || counted.Metrics[1].Count != &five || counted.Metrics[2].Count != nil {
		t.Errorf("counted: %+v", counted.Metrics)
	}
	if again := counted.Counted(); again != counted {
		t.Error("a counted plan was copied again")
	}
}
