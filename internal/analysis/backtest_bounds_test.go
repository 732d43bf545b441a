package analysis

import (
	"slices"
	"testing"
	"time"
)

// TestBacktestStarts: a series starts at start and every apart before
// end; start alone without every; no more than the limit.
func TestBacktestStarts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(minutes ...int) []time.Time {
		var out []time.Time
		for _, m := range minutes {
			out = append(out, t0.Add(time.Duration(m)*time.Minute))
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		end          time.Time
		every        time.Duration
		limit        int
		want         []time.Time
		wantAllFound bool
	}{
		{"every 10m over 30m", t0.Add(30 * time.Minute), 10 * time.Minute, 5, at(0, 10, 20), true},
		{"every 10m over 25m", t0.Add(25 * time.Minute), 10 * time.Minute, 5, at(0, 10, 20), true},
		{"no every", t0.Add(30 * time.Minute), 0, 5, at(0), true},
		{"a window shorter than every", t0.Add(5 * time.Minute), 10 * time.Minute, 5, at(0), true},
		{"more than the limit", t0.Add(30 * time.Minute), 10 * time.Minute, 2, at(0, 10), false},
		{"the limit exactly", t0.Add(30 * time.Minute), 10 * time.Minute, 3, at(0, 10, 20), true},
	} {
		got, ok := BacktestStarts(t0, tc.end, tc.every, tc.limit)
		if !slices.Equal(got, tc.want) || ok != tc.wantAllFound {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.wantAllFound)
		}
	}
}

// TestMeasurementsWithin: each metric's schedule, its initial delay,
// interval and count, within the span.
func TestMeasurementsWithin(t *testing.T) {
	count := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name   string
		metric Metric
		want   int
	}{
		{"every minute, up to 5", Metric{Interval: time.Minute, Count: count(5)}, 5},
		{"every minute, no count", Metric{Interval: time.Minute}, 11},
		{"after a delay of 4m", Metric{Interval: time.Minute, InitialDelay: 4 * time.Minute}, 7},
		{"a delay past the span", Metric{Interval: time.Minute, InitialDelay: 11 * time.Minute}, 0},
		{"once", Metric{}, 1},
	} {
		plan := &Plan{Metrics: []Metric{tc.metric, tc.metric}}
		if got := plan.MeasurementsWithin(10 * time.Minute); got != 2*tc.want {
			t.Errorf("%s: two metrics take %d measurements, want %d", tc.name, got, 2*tc.want)
		}
	}
}
