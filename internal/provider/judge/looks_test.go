package judge

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/series"
)

func TestCumulative(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := time.Minute
	// at makes a series' points from values at instants 0, 1, 2…; a
	// missing point is absent.
	const absent = -1
	at := func(values ...float64) series.Series {
		var s series.Series
		for k, v := range values {
			if v != absent {
				s.Points = append(s.Points, series.Point{T: start.Add(time.Duration(k) * step), V: v})
			}
		}
		return s
	}
	tests := []struct {
		name   string
		series []series.Series
		n      int
		want   []float64
	}{
		{"no series: nothing counted", nil, 3, []float64{0, 0, 0, 0}},
		{"counts from the value at start", []series.Series{at(100, 110, 125, 125)}, 3, []float64{0, 10, 25, 25}},
		{"a reset counts the new value from zero", []series.Series{at(100, 110, 4, 9)}, 3, []float64{0, 10, 14, 19}},
		{"a reset to zero", []series.Series{at(100, 110, 0, 7)}, 3, []float64{0, 10, 10, 17}},
		{"two resets", []series.Series{at(50, 60, 5, 2, 12)}, 4, []float64{0, 10, 15, 17, 27}},
		{"a missing point carries the previous count", []series.Series{at(100, absent, absent, 130)}, 3, []float64{0, 0, 0, 30}},
		{"a reset across missing points", []series.Series{at(100, 120, absent, 5)}, 3, []float64{0, 20, 20, 25}},
		{"a series that appears later counts from zero", []series.Series{at(absent, absent, 3, 8)}, 3, []float64{0, 0, 3, 8}},
		{"a series that ends keeps its count", []series.Series{at(0, 5, absent, absent)}, 3, []float64{0, 5, 5, 5}},
		{"NaN is a missing point", []series.Series{at(10, math.NaN(), 14)}, 2, []float64{0, 0, 4}},
		{"series are counted apart and summed: one pod's restart", []series.Series{
			at(1000, 1010, 1020, 1030), at(500, 505, 2, 7),
		}, 3, []float64{0, 15, 27, 42}},
		{"a sum's drop is a reset of the whole", []series.Series{at(1500, 1515, 1022, 1037)}, 3, []float64{0, 15, 1037, 1052}},
		{"points past the last look are not counted", []series.Series{at(0, 1, 2, 3, 4)}, 2, []float64{0, 1, 2}},
		{"fractional values", []series.Series{at(0.5, 1.25, 0.25)}, 2, []float64{0, 0.75, 1}},
	}
	for _, tt := range tests {
		got := cumulative(series.Set{Series: tt.series}, start, step, tt.n)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCumulativeTimestamps checks that points are placed by their
// instant, rounded to the millisecond as Prometheus answers them.
func TestCumulativeTimestamps(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC)
	step := 250 * time.Millisecond
	var s series.Series
	for k, v := range []float64{7, 8, 10} {
		s.Points = append(s.Points, series.Point{T: start.Add(time.Duration(k) * step).Round(time.Millisecond), V: v})
	}
	if got, want := cumulative(series.Set{Series: []series.Series{s}}, start, step, 2), []float64{0, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
