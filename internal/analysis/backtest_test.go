package analysis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// history is a source whose verdict depends on the instant it is asked
// about: Failed inside [badFrom, badTo), Successful elsewhere.
func history(badFrom, badTo time.Time) Source {
	return SourceFunc(func(_ context.Context, at time.Time) Observation {
		if !at.Before(badFrom) && at.Before(badTo) {
			return Observation{Value: api.PhaseFailed, Display: "bad"}
		}
		return Observation{Value: api.PhaseSuccessful, Display: "good"}
	})
}

func TestBacktest(t *testing.T) {
	badFrom, badTo := t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	tests := []struct {
		name      string
		metric    Metric
		start     time.Time
		end       time.Time
		wantPhase api.Phase
		wantAt    []time.Duration // offsets from start
		wantMsg   string
	}{
		{"good window", metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) }),
			t0, t0.Add(24 * time.Hour), api.PhaseSuccessful, []time.Duration{0, 10 * time.Minute, 20 * time.Minute}, ""},
		{"bad window is caught", metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) }),
			badFrom.Add(-15 * time.Minute), t0.Add(24 * time.Hour), api.PhaseFailed, []time.Duration{0, 10 * time.Minute, 20 * time.Minute},
			`Metric "m" assessed Failed due to failed (1) > failureLimit (0)`},
		{"indefinite metric stops at the horizon", metric("m", indefinite),
			t0, t0.Add(90 * time.Minute), api.PhaseSuccessful,
			[]time.Duration{0, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 40 * time.Minute, 50 * time.Minute, 60 * time.Minute, 70 * time.Minute, 80 * time.Minute, 90 * time.Minute},
			"Run Terminated"},
		{"indefinite metric meets the bad hour", metric("m", indefinite),
			t0, t0.Add(24 * time.Hour), api.PhaseFailed, nil,
			`Metric "m" assessed Failed due to failed (1) > failureLimit (0)`},
	}
	for _, tt := range tests {
		m := tt.metric
		if m.Count == nil {
			m.Interval = 10 * time.Minute
		}
		m.Source = history(badFrom, badTo)
		m.Judge = phaseJudge{}
		got := Backtest(context.Background(), &Plan{Metrics: []Metric{m}}, tt.start, tt.end, Options{ID: "bt"})
		if got.Phase != tt.wantPhase || got.Message != tt.wantMsg {
			t.Errorf("%s: got (%s, %q), want (%s, %q)", tt.name, got.Phase, got.Message, tt.wantPhase, tt.wantMsg)
		}
		// Each measurement's instant (the source is also asked ahead of
		// the schedule, so its calls are not the measurements).
		var asked []time.Time
		var at []time.Duration
		for _, ms := range got.MetricResults[0].Measurements {
			asked = append(asked, *ms.StartedAt)
			at = append(at, ms.StartedAt.Sub(tt.start))
		}
		if tt.wantAt != nil && fmt.Sprint(at) != fmt.Sprint(tt.wantAt) {
			t.Errorf("%s: measured at %v, want %v", tt.name, at, tt.wantAt)
		}
		if tt.name == "indefinite metric meets the bad hour" && (len(asked) == 0 || asked[len(asked)-1].Before(badFrom)) {
			t.Errorf("%s: last measurement at %v, want inside the bad hour", tt.name, asked)
		}
		if got.StartedAt == nil || !got.StartedAt.Equal(tt.start) {
			t.Errorf("%s: startedAt %v, want the backtest's start %v", tt.name, got.StartedAt, tt.start)
		}
	}
}

func TestBacktestSeries(t *testing.T) {
	badFrom, badTo := t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	m := metric("m", func(m *Metric) { m.Interval = 10 * time.Minute; m.Count = i32(3) })
	m.Source = history(badFrom, badTo)
	m.Judge = phaseJudge{}
	got := BacktestSeries(context.Background(), &Plan{Metrics: []Metric{m}}, t0, t0.Add(5*time.Hour), time.Hour, Options{})
	var phases []api.Phase
	for _, r := range got {
		phases = append(phases, r.Analysis.Phase)
	}
	// Starts at 0h, 1h, 2h, 3h, 4h: the 1h start reaches 1h20m (good);
	// the 2h start is inside the bad hour.
	want := []api.Phase{api.PhaseSuccessful, api.PhaseSuccessful, api.PhaseFailed, api.PhaseSuccessful, api.PhaseSuccessful}
	if fmt.Sprint(phases) != fmt.Sprint(want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if len(got) > 0 && !got[2].Start.Equal(badFrom) {
		t.Errorf("third start %v, want %v", got[2].Start, badFrom)
	}
}

func BenchmarkBacktestDay(b *testing.B) {
	// 24 h at one-minute steps: 1,440 measurements of an instant source.
	m := metric("m", indefinite)
	m.Interval = time.Minute
	m.Judge = phaseJudge{}
	m.Source = SourceFunc(func(context.Context, time.Time) Observation {
		return Observation{Value: api.PhaseSuccessful, Display: "good"}
	})
	for b.Loop() {
		got := Backtest(context.Background(), &Plan{Metrics: []Metric{m}}, t0, t0.Add(24*time.Hour-time.Second), Options{})
		if got.MetricResults[0].Count != 1440 {
			b.Fatalf("count %d, want 1440", got.MetricResults[0].Count)
		}
	}
}
