package judge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	stats "github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/series"
)

// counterFunc is a counter whose value at t is f(t), nil for no series;
// it answers range queries as Prometheus does, one point a step.
type counterFunc struct {
	f     func(t time.Time) float64
	err   error
	asked *[]series.Query
}

func (c counterFunc) Measure(context.Context, time.Time) analysis.Observation {
	return analysis.Observation{Err: errors.New("not an instant query")}
}

func (c counterFunc) QuerySeries(_ context.Context, q series.Query) (series.Set, error) {
	if err := q.Check(); err != nil {
		return series.Set{}, err
	}
	if c.asked != nil {
		*c.asked = append(*c.asked, q)
	}
	if c.err != nil || c.f == nil {
		return series.Set{}, c.err
	}
	var s series.Series
	for t := q.Start; !t.After(q.End); t = t.Add(q.Step) {
		s.Points = append(s.Points, series.Point{T: t.Round(time.Millisecond), V: c.f(t)})
	}
	return series.Set{Series: []series.Series{s}}, nil
}

var countsStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rate is a counter of perMinute events a minute from a value of 1000 at
// countsStart.
func rate(perMinute float64) counterFunc {
	return counterFunc{f: func(t time.Time) float64 { return 1000 + perMinute*t.Sub(countsStart).Minutes() }}
}

func measureCounts(t *testing.T, o CountOptions, at time.Duration, last bool) analysis.Observation {
	t.Helper()
	ctx := analysis.WithSchedule(context.Background(), analysis.Schedule{Start: countsStart, Interval: time.Minute, Last: last})
	return NewCountSource(o).Measure(ctx, countsStart.Add(at))
}

func TestCountSource(t *testing.T) {
	var asked []series.Query
	regression := CountOptions{CanaryBad: rate(20), CanaryTotal: counterFunc{f: rate(1000).f, asked: &asked}, BaselineBad: rate(50), BaselineTotal: rate(10000)}
	aa := CountOptions{CanaryBad: rate(5), CanaryTotal: rate(1000), BaselineBad: rate(50), BaselineTotal: rate(10000)}
	noCanary := CountOptions{CanaryBad: counterFunc{}, CanaryTotal: counterFunc{}, BaselineBad: rate(50), BaselineTotal: rate(10000)}
	tests := []struct {
		name     string
		o        CountOptions
		at       time.Duration
		last     bool
		decision string
		class    string
		look     int
		display  string // a prefix
	}{
		{"at the start: no look yet", regression, 0, false, "continue", "Nodata", 0,
			"continue (no data) at look 0: canary 0 bad of 0, baseline 0 of 0"},
		{"a fourfold rate fails", regression, 10*time.Minute + 20*time.Second, false, "Failed", "High", 10,
			"Failed at look 10: canary 200 bad of 10,000, baseline 500 of 100,000; rate ratio 4 ["},
		{"A/A continues", aa, 5 * time.Minute, false, "continue", "Pass", 5,
			"continue at look 5: canary 25 bad of 5,000, baseline 250 of 50,000; rate ratio 1 ["},
		{"A/A at its last look", aa, 5 * time.Minute, true, "Successful", "Pass", 5,
			"Successful at look 5 (the last): canary 25 bad of 5,000"},
		{"no canary series", noCanary, 5 * time.Minute, false, "continue", "Nodata", 5,
			"continue (no data) at look 5: canary 0 bad of 0, baseline 250 of 50,000"},
		{"no canary series at the last look", noCanary, 5 * time.Minute, true, "Inconclusive", "Nodata", 5,
			"Inconclusive at look 5 (the last): canary 0 bad of 0"},
	}
	for _, tt := range tests {
		obs := measureCounts(t, tt.o, tt.at, tt.last)
		if obs.Err != nil {
			t.Errorf("%s: %v", tt.name, obs.Err)
			continue
		}
		v := obs.Value.(map[string]any)
		if v["decision"] != tt.decision || v["classification"] != tt.class || v["look"] != tt.look || !strings.HasPrefix(obs.Display, tt.display) {
			t.Errorf("%s: %v, %v at look %v: %q\nwant %s, %s at look %d: %q…", tt.name, v["decision"], v["classification"], v["look"], obs.Display,
				tt.decision, tt.class, tt.look, tt.display)
		}
		if obs.Metadata[analysis.MetadataClassification] != tt.class || obs.Metadata[MetadataReason] != v["reason"] || v["reason"] == "" {
			t.Errorf("%s: metadata %v", tt.name, obs.Metadata)
		}
	}
	// The range: from the start, four points a look (15 s), the last
	// look's instant its end (not the measurement's).
	if len(asked) == 0 {
		t.Fatal("no range query")
	}
	if q := asked[0]; !q.Start.Equal(countsStart) || !q.End.Equal(countsStart.Add(10*time.Minute)) || q.Step != 15*time.Second || q.MaxPoints != 41 {
		t.Errorf("range query %+v", q)
	}
}

func TestCountSourceFailed(t *testing.T) {
	o := CountOptions{CanaryBad: rate(20), CanaryTotal: rate(1000), BaselineBad: rate(50), BaselineTotal: rate(10000), Critical: true}
	obs := measureCounts(t, o, 10*time.Minute, false)
	v := obs.Value.(map[string]any)
	ratio := v["ratio"].(map[string]any)
	if ratio["estimate"].(float64) != 4 || ratio["lower"].(float64) <= 1 || obs.Metadata[analysis.MetadataCritical] != "true" || v["critical"] != true {
		t.Errorf("value %v, metadata %v", v, obs.Metadata)
	}
	if v["eValue"].(float64) < v["threshold"].(float64) || v["threshold"] != 20.0 {
		t.Errorf("e-value %v, threshold %v", v["eValue"], v["threshold"])
	}
	if c := v["canary"].(map[string]any); c["bad"] != 200.0 || c["total"] != 10000.0 {
		t.Errorf("canary counts %v", c)
	}
	// direction decrease: the same counts do not fail, and a canary
	// with a quarter of the baseline's rate is Low.
	o.Config = stats.CountConfig{Direction: stats.DirectionDecrease}
	if v := measureCounts(t, o, 10*time.Minute, false).Value.(map[string]any); v["decision"] == "Failed" {
		t.Errorf("decrease: %v", v)
	}
	o.CanaryBad, o.BaselineBad = rate(5), rate(200)
	if v := measureCounts(t, o, 10*time.Minute, false).Value.(map[string]any); v["decision"] != "Failed" || v["classification"] != "Low" {
		t.Errorf("decrease, a lower canary: %v", v)
	}
}

func TestCountSourceErrors(t *testing.T) {
	aa := CountOptions{CanaryBad: rate(5), CanaryTotal: rate(1000), BaselineBad: rate(50), BaselineTotal: rate(10000)}
	tests := []struct {
		name string
		o    CountOptions
		ctx  context.Context
		at   time.Duration
		want string
	}{
		{"no schedule", aa, context.Background(), time.Minute, "no analysis start to count from"},
		{"more looks than values", func() CountOptions { o := aa; o.MaxValues = 5; return o }(),
			analysis.WithSchedule(context.Background(), analysis.Schedule{Start: countsStart, Interval: time.Minute}), 10 * time.Minute,
			"counts: 10 looks, one every 1m0s since the analysis started at 2026-01-01T00:00:00Z, are more than the 5 values a query may return (--max-result-values): make the metric's interval longer"},
		{"a query's error names its counter", func() CountOptions {
			o := aa
			o.BaselineTotal = counterFunc{err: errors.New("bad_data: parse error")}
			return o
		}(),
			analysis.WithSchedule(context.Background(), analysis.Schedule{Start: countsStart, Interval: time.Minute}), 3 * time.Minute,
			"counts.baseline.total: bad_data: parse error"},
		{"more bad than total", func() CountOptions { o := aa; o.CanaryBad = rate(2000); return o }(),
			analysis.WithSchedule(context.Background(), analysis.Schedule{Start: countsStart, Interval: time.Minute}), 3 * time.Minute,
			"counts.canary.bad at look 1 (2026-01-01T00:01:00Z): more bad events (2000) than total events (1000)"},
	}
	for _, tt := range tests {
		obs := NewCountSource(tt.o).Measure(tt.ctx, countsStart.Add(tt.at))
		if obs.Err == nil || !strings.Contains(obs.Err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, obs.Err, tt.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 14: "14", 1020: "1,020", 9870: "9,870", 1234567: "1,234,567", 2.5: "2.5", -1500: "-1,500"} {
		if got := formatCount(f); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestPointsPerLook(t *testing.T) {
	tests := []struct {
		step      time.Duration
		n, max, m int
	}{
		{time.Minute, 10, 10000, 4},          // 15 s
		{30 * time.Second, 10, 10000, 2},     // 15 s
		{10 * time.Second, 10, 10000, 1},     // already finer
		{90 * time.Second, 10, 10000, 6},     // 15 s
		{61 * time.Second, 10, 10000, 5},     // 12.2 s: 61 s has no divisor giving 15 s
		{time.Minute, 3000, 10000, 3},        // 20 s: four points a look would be too many
		{time.Minute, 9999, 10000, 1},        // one point a look
		{200 * time.Millisecond, 10, 100, 1}, // sub-second
		{time.Minute + time.Nanosecond, 10, 10000, 1},
	}
	for _, tt := range tests {
		if got := pointsPerLook(tt.step, tt.n, tt.max); got != tt.m {
			t.Errorf("pointsPerLook(%s, %d, %d) = %d, want %d", tt.step, tt.n, tt.max, got, tt.m)
		}
	}
}
