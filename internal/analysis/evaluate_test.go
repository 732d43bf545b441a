package analysis

import (
	"context"
	"testing"

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
