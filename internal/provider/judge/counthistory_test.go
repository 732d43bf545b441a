package judge

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/series"
)

// askedCounter is a counter that records the range queries it is asked,
// safe for concurrent use, and fails them while fail is set.
type askedCounter struct {
	counterFunc
	mu    sync.Mutex
	asked []series.Query
	fail  error
}

func (c *askedCounter) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	c.mu.Lock()
	c.asked = append(c.asked, q)
	err := c.fail
	c.mu.Unlock()
	if err != nil {
		return series.Set{}, err
	}
	return c.counterFunc.QuerySeries(ctx, q)
}

// historyQueries are the queries asked that end at the analysis' start:
// the history's.
func (c *askedCounter) historyQueries() []series.Query {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []series.Query
	for _, q := range c.asked {
		if q.End.Equal(countsStart) {
			out = append(out, q)
		}
	}
	return out
}

// bursty is a baseline's bad events: perMinute on average before the
// start, all of them in one burst every 12 minutes; after the start, a
// steady perMinute.
func bursty(perMinute float64) counterFunc {
	return counterFunc{f: func(t time.Time) float64 {
		m := t.Sub(countsStart).Minutes()
		if m >= 0 {
			return 1000 + perMinute*m
		}
		return 1000 + perMinute*12*math.Ceil(m/12)
	}}
}

func historyOptions(baselineBad analysis.Source, baselineTotal analysis.Source) CountOptions {
	return CountOptions{CanaryBad: rate(5), CanaryTotal: rate(1000), BaselineBad: baselineBad, BaselineTotal: baselineTotal,
		HistoryLookback: 24 * time.Hour, HistoryStep: 5 * time.Minute}
}

// TestCountHistory: the baseline's history before the start sets the
// dispersion from the first look: steady bad events give φ = 1, bursts a
// φ well above it, no data the default prior (as without a history), which
// the metadata says.
func TestCountHistory(t *testing.T) {
	dispersion := func(o CountOptions) (float64, map[string]string) {
		t.Helper()
		obs := measureCounts(t, o, time.Minute, false)
		if obs.Err != nil {
			t.Fatal(obs.Err)
		}
		phi, _ := obs.Value.(map[string]any)["dispersion"].(float64)
		if obs.Metadata[MetadataDispersion] != strconv.FormatFloat(phi, 'g', 3, 64) {
			t.Fatalf("dispersion %q, result %v", obs.Metadata[MetadataDispersion], obs.Value)
		}
		return phi, obs.Metadata
	}
	total := &askedCounter{counterFunc: rate(10000)}
	without, md := dispersion(CountOptions{CanaryBad: rate(5), CanaryTotal: rate(1000), BaselineBad: rate(50), BaselineTotal: rate(10000)})
	if _, ok := md[MetadataHistoryIntervals]; ok || without <= 2 {
		t.Errorf("without a history: φ %v, metadata %v", without, md)
	}
	steady, md := dispersion(historyOptions(rate(50), total))
	if steady != 1 || md[MetadataHistoryIntervals] != "288" || md[MetadataHistory] != "" {
		t.Errorf("a steady history: φ %v (want 1), metadata %v", steady, md)
	}
	if qs := total.historyQueries(); len(qs) != 1 || !qs[0].Start.Equal(countsStart.Add(-24*time.Hour)) || qs[0].Step != 5*time.Minute || qs[0].MaxPoints != 289 {
		t.Errorf("history queries %+v, want one of 289 points from a day before the start", qs)
	}
	burst, md := dispersion(historyOptions(bursty(50), rate(10000)))
	if burst < 5 || md[MetadataHistoryIntervals] != "288" {
		t.Errorf("a bursty history: φ %v (want above 5), metadata %v", burst, md)
	}
	none, md := dispersion(historyOptions(counterFunc{}, counterFunc{f: func(time.Time) float64 { return 0 }}))
	if none != without || md[MetadataHistoryIntervals] != "0" || !strings.HasPrefix(md[MetadataHistory], "no data: Prometheus has no events of the baseline's counters from 2025-12-31T00:00:00Z to 2026-01-01T00:00:00Z") {
		t.Errorf("no history: φ %v (want %v, as without), metadata %v", none, without, md)
	}
}

// TestCountHistoryOnce: an analysis asks for its history once, however
// many measurements it takes and however many are taken at once; another
// start asks again; a failed history is an Error naming it, and the next
// measurement asks again.
func TestCountHistoryOnce(t *testing.T) {
	total := &askedCounter{counterFunc: rate(10000)}
	s := NewCountSource(historyOptions(rate(50), total))
	measure := func(start time.Time, at time.Duration) analysis.Observation {
		ctx := analysis.WithSchedule(context.Background(), analysis.Schedule{Start: start, Interval: time.Minute})
		return s.Measure(ctx, start.Add(at))
	}
	var wg sync.WaitGroup
	for k := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if obs := measure(countsStart, time.Duration(k)*time.Minute); obs.Err != nil {
				t.Error(obs.Err)
			}
		}()
	}
	wg.Wait()
	if n := len(total.historyQueries()); n != 1 {
		t.Errorf("16 measurements asked for the history %d times, want once", n)
	}

	total.mu.Lock()
	total.fail = errors.New("server_error: 503")
	total.mu.Unlock()
	later := countsStart.Add(time.Hour)
	obs := measure(later, time.Minute)
	want := "counts.history: the baseline's history before the analysis' start (counts.baseline.total from 2025-12-31T01:00:00Z to 2026-01-01T01:00:00Z) could not be read, " +
		"and the next measurement asks again: server_error: 503"
	if obs.Err == nil || obs.Err.Error() != want {
		t.Errorf("a failed history: %v\nwant %s", obs.Err, want)
	}
	total.mu.Lock()
	total.fail = nil
	total.mu.Unlock()
	if obs := measure(later, 2*time.Minute); obs.Err != nil || obs.Metadata[MetadataHistoryIntervals] != "288" {
		t.Errorf("the next measurement: %v, metadata %v", obs.Err, obs.Metadata)
	}
	// The first analysis' history is still kept.
	if obs := measure(countsStart, 20*time.Minute); obs.Err != nil || len(total.historyQueries()) != 1 {
		t.Errorf("the first analysis again: %v, %d history queries", obs.Err, len(total.historyQueries()))
	}
}

// TestCountHistoryBounds: a history of more points than the datasource's
// --max-result-values is an Error before any query is sent.
func TestCountHistoryBounds(t *testing.T) {
	total := &askedCounter{counterFunc: rate(10000)}
	o := historyOptions(rate(50), total)
	o.MaxValues = 288
	obs := measureCounts(t, o, time.Minute, false)
	want := "counts.history: 288 intervals of 5m0s are more than the 288 values a query may return (--max-result-values): make its step longer"
	if obs.Err == nil || obs.Err.Error() != want || len(total.historyQueries()) != 0 {
		t.Errorf("error %v, %d history queries sent; want %s", obs.Err, len(total.historyQueries()), want)
	}
}

// TestHistoriesKept: the histories of at most MaxHistoryStarts starts are
// kept, the oldest pushed out first.
func TestHistoriesKept(t *testing.T) {
	var hs histories
	fetched := 0
	fetch := func() (history, error) {
		fetched++
		return history{to: countsStart.Add(time.Duration(fetched) * time.Minute)}, nil
	}
	for k := range MaxHistoryStarts + 1 {
		if _, err := hs.get(context.Background(), countsStart.Add(time.Duration(k)*time.Hour), fetch); err != nil {
			t.Fatal(err)
		}
	}
	if len(hs.entries) != MaxHistoryStarts || len(hs.order) != MaxHistoryStarts {
		t.Errorf("%d entries, %d in order; want %d", len(hs.entries), len(hs.order), MaxHistoryStarts)
	}
	if h, _ := hs.get(context.Background(), countsStart.Add(time.Hour), fetch); !h.to.Equal(countsStart.Add(2*time.Minute)) || fetched != MaxHistoryStarts+1 {
		t.Errorf("a kept start fetched again: %+v, %d fetches", h, fetched)
	}
	if h, _ := hs.get(context.Background(), countsStart, fetch); fetched != MaxHistoryStarts+2 || !h.to.Equal(countsStart.Add(time.Duration(fetched)*time.Minute)) {
		t.Errorf("the oldest start was kept: %+v, %d fetches", h, fetched)
	}
}

// TestCountHistoryInvalid: a history the count test refuses (more bad
// events than total events in an interval) is an Error naming the
// baseline's counter and the interval.
func TestCountHistoryInvalid(t *testing.T) {
	obs := measureCounts(t, historyOptions(rate(20000), rate(10000)), time.Minute, false)
	want := "counts.history: baseline.bad at 2025-12-31T00:05:00Z, the end of the history's interval 1: more bad events (100000) than total events (50000)"
	if obs.Err == nil || obs.Err.Error() != want {
		t.Errorf("error %v\nwant %s", obs.Err, want)
	}
}
