package judge_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	judgesource "github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/series"
)

// TestMeasureRecordsSamples checks what a measurement keeps for a report
// to draw: each side's sample, sorted, at most MaxSampleValues values of
// it, its size, and the estimate of the shift inside its interval.
func TestMeasureRecordsSamples(t *testing.T) {
	var canary, baseline []float64
	for i := range 500 {
		canary = append(canary, 130+float64((i*37)%41)/10)
		baseline = append(baseline, 100+float64((i*53)%43)/10)
	}
	canary = append(canary, math.NaN())
	src := judgesource.New(judgesource.Options{Canary: fixed(values(canary...), nil), Baseline: fixed(values(baseline[:30]...), nil), Lookback: time.Hour})
	md := src.Measure(context.Background(), at).Metadata
	for _, side := range []struct {
		key, nKey string
		n         int
		least     float64
		greatest  float64
	}{{judgesource.MetadataCanarySample, judgesource.MetadataCanarySampleN, 500, 130, 134}, {judgesource.MetadataBaselineSample, judgesource.MetadataBaselineSampleN, 30, 100, 104.2}} {
		parts := strings.Split(md[side.key], ",")
		if len(parts) != min(side.n, judgesource.MaxSampleValues) || md[side.nKey] != strconv.Itoa(side.n) {
			t.Errorf("%s: %d values kept of %s, want %d of %d", side.key, len(parts), md[side.nKey], min(side.n, judgesource.MaxSampleValues), side.n)
		}
		prev := math.Inf(-1)
		for _, p := range parts {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f < prev {
				t.Fatalf("%s: %q is not a sorted list of numbers", side.key, md[side.key])
			}
			prev = f
		}
		if parts[0] != strconv.FormatFloat(side.least, 'g', 6, 64) {
			t.Errorf("%s: starts at %s, the least is %g", side.key, parts[0], side.least)
		}
	}
	est, _ := strconv.ParseFloat(md[judgesource.MetadataEstimate], 64)
	lo, hi, _ := strings.Cut(md[judgesource.MetadataInterval], ",")
	l, _ := strconv.ParseFloat(lo, 64)
	h, _ := strconv.ParseFloat(hi, 64)
	if !(l <= est && est <= h) || est < 25 || md[judgesource.MetadataConfidenceLevel] != "0.98" || md[judgesource.MetadataPValue] == "" {
		t.Errorf("estimate %q, interval %q, level %q, p %q", md[judgesource.MetadataEstimate], md[judgesource.MetadataInterval],
			md[judgesource.MetadataConfidenceLevel], md[judgesource.MetadataPValue])
	}
	if n := len(md[judgesource.MetadataCanarySample]); n > judgesource.MaxSampleValues*16 {
		t.Errorf("the canary's sample takes %d bytes", n)
	}
}

// rangeSide is a side whose range queries answer one series of a point
// at each end of the range asked, and records the range.
type rangeSide struct {
	analysis.Source
	asked *series.Query
}

func (s rangeSide) QuerySeries(_ context.Context, q series.Query) (series.Set, error) {
	*s.asked = q
	return series.Set{Series: []series.Series{{Labels: "{}", Points: []series.Point{{T: q.Start, V: 1}, {T: q.End, V: 2}}}}, More: 1, Step: q.Step}, nil
}

// TestQuerySeriesSides checks a judge metric's series: the canary's and
// the baseline's, a control's baseline queried its offset earlier and
// drawn over the canary's time.
func TestQuerySeriesSides(t *testing.T) {
	var c, b series.Query
	src := judgesource.New(judgesource.Options{Canary: rangeSide{fixed(values(1), nil), &c}, Baseline: rangeSide{fixed(values(1), nil), &b}, Offset: 24 * time.Hour})
	q := series.Query{Start: at.Add(-time.Hour), End: at, Step: time.Minute, MaxSeries: 8, MaxPoints: 240}
	set, err := src.QuerySeries(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Start.Equal(q.Start) || !b.Start.Equal(q.Start.Add(-24*time.Hour)) || !b.End.Equal(at.Add(-24*time.Hour)) {
		t.Errorf("canary asked from %s, baseline from %s to %s", c.Start, b.Start, b.End)
	}
	if len(set.Series) != 2 || set.Series[0].Side != "canary" || set.Series[1].Side != "baseline" || set.More != 2 {
		t.Fatalf("series %+v", set)
	}
	if !set.Series[1].Points[0].T.Equal(q.Start) {
		t.Errorf("the baseline's first point is at %s, want it moved to %s", set.Series[1].Points[0].T, q.Start)
	}

	// A side that cannot run over a range is an error; the other's series
	// are kept.
	src = judgesource.New(judgesource.Options{Canary: rangeSide{fixed(values(1), nil), &c}, Baseline: fixed(values(1), nil)})
	set, err = src.QuerySeries(context.Background(), q)
	if err == nil || !strings.Contains(err.Error(), "baseline") || len(set.Series) != 1 {
		t.Errorf("%v, %d series", err, len(set.Series))
	}
}
