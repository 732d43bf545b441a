package judge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	stats "github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/series"
)

// Metadata of a counts measurement, besides MetadataReason, the windows
// (from the analysis' start to the last look) and the classification:
// internal/judge's keys (stats.MetadataEValue and the others).
const (
	MetadataEValue    = stats.MetadataEValue
	MetadataLooks     = stats.MetadataLooks
	MetadataDecision  = stats.MetadataDecision
	MetadataThreshold = stats.MetadataThreshold
	MetadataRatio     = stats.MetadataRatio
	MetadataTolerance = stats.MetadataTolerance
	MetadataDirection = stats.MetadataDirection
	// MetadataDispersion is the dispersion φ at the last look (at least
	// 1), by which the count test tempers the evidence.
	MetadataDispersion = "dispersion"
)

// CountOptions make a CountSource.
type CountOptions struct {
	// CanaryBad, CanaryTotal, BaselineBad and BaselineTotal are the four
	// counters' sources: Prometheus sources, range-queried through their
	// series.Source.
	CanaryBad, CanaryTotal, BaselineBad, BaselineTotal analysis.Source
	// Config is the count test's.
	Config stats.CountConfig
	// Critical marks a critical metric's Failed (and Nodata) critical.
	Critical bool
	// MaxValues bounds the points of a measurement's range queries (a
	// counter's series times its looks): the datasource's
	// --max-result-values. Zero means limits.MaxResultValues.
	MaxValues int
	// HistoryLookback, when positive, asks for the baseline's history
	// over that long before the analysis' start, in intervals of
	// HistoryStep (counts.history): read once an analysis, it sets the
	// count test's prior of the dispersion (stats.CountConfig.History).
	HistoryLookback, HistoryStep time.Duration
}

// CountSource measures a counts metric: at each measurement it
// range-queries the four counters from the analysis' start to the
// measurement's instant, one look an interval, and runs the count test
// over the looks (see doc.go's "Counts"). It is safe for concurrent use.
type CountSource struct {
	o         CountOptions
	histories histories
}

// NewCountSource returns a CountSource for o.
func NewCountSource(o CountOptions) *CountSource {
	if o.MaxValues <= 0 {
		o.MaxValues = limits.MaxResultValues
	}
	o.Config = o.Config.WithDefaults()
	if o.HistoryStep <= 0 || o.HistoryLookback < o.HistoryStep {
		o.HistoryLookback, o.HistoryStep = 0, 0
	}
	return &CountSource{o: o}
}

// BoundByContext reports whether Measure returns when its context is done:
// when the four counters' sources do.
func (s *CountSource) BoundByContext() bool {
	return bound(s.o.CanaryBad) && bound(s.o.CanaryTotal) && bound(s.o.BaselineBad) && bound(s.o.BaselineTotal)
}

// errNoSchedule is the error of a measurement without the analysis' start.
var errNoSchedule = errors.New("counts: the measurement has no analysis start to count from: " +
	"a counts metric is measured in an analysis or a backtest, not in a single round (/v1/evaluate)")

// looks is the number of looks of a measurement as of at in an analysis
// that started at start, one every step (step 0: the metric has no
// interval, and its one look is at at).
func looks(start, at time.Time, step time.Duration) (int, time.Duration) {
	if step <= 0 {
		step = at.Sub(start)
	}
	if step <= 0 || !at.After(start) {
		return 0, step
	}
	return int(at.Sub(start) / step), step
}

// Measure counts each side's events from the analysis' start to at and
// runs the count test over the looks; at the metric's last measurement it
// applies the last look's rule (stats.CountTest.Conclude). With a history
// (CountOptions.HistoryLookback), the baseline's history before the start
// is read first, once an analysis.
func (s *CountSource) Measure(ctx context.Context, at time.Time) analysis.Observation {
	sched, ok := analysis.ScheduleFrom(ctx)
	if !ok {
		return analysis.Observation{Err: errNoSchedule}
	}
	if at.IsZero() {
		at = time.Now()
	}
	start := sched.Start
	n, step := looks(start, at, sched.Interval)
	end := start.Add(time.Duration(n) * step)
	md := map[string]string{
		MetadataCanaryWindow:   interval(start, end),
		MetadataBaselineWindow: interval(start, end),
		MetadataLooks:          strconv.Itoa(n),
	}
	if n+1 > s.o.MaxValues {
		return analysis.Observation{Metadata: md, Err: fmt.Errorf(
			"counts: %d looks, one every %s since the analysis started at %s, are more than the %d values a query may return (--max-result-values): make the metric's interval longer",
			n, step, start.UTC().Format(time.RFC3339), s.o.MaxValues)}
	}
	cfg := s.o.Config
	if s.o.HistoryLookback > 0 {
		h, err := s.histories.get(ctx, start, func() (history, error) { return s.fetchHistory(ctx, start) })
		if err != nil {
			return analysis.Observation{Metadata: md, Err: err}
		}
		cfg.History = h.counts
		md[MetadataHistoryIntervals] = strconv.Itoa(len(h.counts))
		if h.counts == nil {
			md[MetadataHistory] = h.noData()
		}
	}
	cum, err := s.counters(ctx, start, end, n, step)
	if err != nil {
		return analysis.Observation{Metadata: md, Err: err}
	}
	test, err := stats.NewCountTest(cfg)
	if err != nil {
		return analysis.Observation{Metadata: md, Err: fmt.Errorf("counts: %w", err)}
	}
	var r stats.CountResult
	for k := 1; k <= n; k++ {
		r, err = test.Observe(stats.CountLook{
			Canary:   stats.Counts{Bad: cum[0][k], Total: cum[1][k]},
			Baseline: stats.Counts{Bad: cum[2][k], Total: cum[3][k]},
		})
		if err != nil {
			var fe *stats.FieldError
			if errors.As(err, &fe) {
				err = fmt.Errorf("counts.%s at look %d (%s): %s", fe.Field, k, start.Add(time.Duration(k)*step).UTC().Format(time.RFC3339), fe.Message)
			}
			return analysis.Observation{Metadata: md, Err: err}
		}
	}
	observed := r.Decision
	switch {
	case sched.Last:
		// The last look's rule: continue becomes Successful, or
		// Inconclusive when the evidence is suggestive; and a side that
		// served no event by then leaves nothing to judge.
		r = test.Conclude()
		if noEvents(r) && r.Decision != stats.DecisionFailed {
			r.Decision = stats.DecisionInconclusive
		}
	case n == 0:
		// No look yet: the test as it starts.
		r = test.Conclude()
		r.Decision = stats.DecisionContinue
	}
	v := countVerdict(r, observed, s.o.Config, sched.Last, s.o.Critical, step)
	s.describe(md, r, v)
	return analysis.Observation{Value: countValue(r, s.o.Config, v), Display: countDisplay(r, v), Metadata: md}
}

// counters range-queries the four counters from start to end, the last
// of n looks one every step, and counts each at every look (none when n
// is 0).
func (s *CountSource) counters(ctx context.Context, start, end time.Time, n int, step time.Duration) ([4][]float64, error) {
	var cum [4][]float64
	if n == 0 {
		return cum, nil
	}
	m := pointsPerLook(step, n, s.o.MaxValues)
	points := n*m + 1
	q := series.Query{Start: start, End: end, Step: step / time.Duration(m), MaxPoints: points, MaxSeries: max(1, s.o.MaxValues/points)}
	var errs [4]error
	var wg sync.WaitGroup
	for i, src := range [4]analysis.Source{s.o.CanaryBad, s.o.CanaryTotal, s.o.BaselineBad, s.o.BaselineTotal} {
		wg.Add(1)
		// Ends when the query returns: it is made with ctx.
		go func() {
			defer wg.Done()
			cum[i], errs[i] = counter(ctx, src, q, n, m)
		}()
	}
	wg.Wait()
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, fmt.Errorf("counts.%s: %w", counterFields[i], err))
		}
	}
	return cum, errors.Join(all...)
}

// describe writes a measurement's verdict and the count test's numbers
// into its metadata.
func (s *CountSource) describe(md map[string]string, r stats.CountResult, v countVerdictOf) {
	md[analysis.MetadataClassification] = v.classification
	if v.critical {
		md[analysis.MetadataCritical] = "true"
	}
	md[MetadataReason] = v.reason
	md[MetadataEValue] = strconv.FormatFloat(r.EValue, 'g', 3, 64)
	md[MetadataPValue] = strconv.FormatFloat(r.PValue, 'g', 3, 64)
	md[MetadataDecision] = r.Decision
	md[MetadataThreshold] = strconv.FormatFloat(r.Threshold, 'g', -1, 64)
	md[MetadataRatio] = strconv.FormatFloat(r.Ratio.Estimate, 'g', 4, 64) + "," +
		strconv.FormatFloat(r.Ratio.Lower, 'g', 4, 64) + "," + strconv.FormatFloat(r.Ratio.Upper, 'g', 4, 64)
	md[MetadataTolerance] = strconv.FormatFloat(s.o.Config.Tolerance, 'g', -1, 64)
	md[MetadataDirection] = string(s.o.Config.Direction)
	md[MetadataDispersion] = strconv.FormatFloat(r.Dispersion, 'g', 3, 64)
}

// counterFields name the four counters, in CountSource's order.
var counterFields = [4]string{"canary.bad", "canary.total", "baseline.bad", "baseline.total"}

// Resolution is the longest step at which a counter is read between two
// looks: a common scrape interval. A reset is seen at the point it is read
// at, and the events between the point before it and the reset are lost
// (they are in no value read); reading the counter at its scrapes keeps
// all of them.
const Resolution = 15 * time.Second

// pointsPerLook is how many points of a counter are read per look, m, so
// that the step of the range queries, step/m, is a whole number of
// milliseconds of at most Resolution, and the n looks' n·m+1 points are
// within maxValues; as near to that as they allow (m = 1: one point a
// look).
func pointsPerLook(step time.Duration, n, maxValues int) int {
	ms := int64(step / time.Millisecond)
	if step%time.Millisecond != 0 || ms <= 0 || n <= 0 {
		return 1
	}
	best := 1
	for m := int64(1); m <= ms && int64(n)*m+1 <= int64(maxValues); m++ {
		if ms%m != 0 {
			continue
		}
		best = int(m)
		if time.Duration(ms/m)*time.Millisecond <= Resolution {
			break
		}
	}
	return best
}

// counter range-queries one counter, m points a look, and counts its
// events since the start at each of the n looks.
func counter(ctx context.Context, src analysis.Source, q series.Query, n, m int) ([]float64, error) {
	rs, ok := src.(series.Source)
	if !ok {
		return nil, errors.New("the counter's source cannot be range-queried")
	}
	set, err := rs.QuerySeries(ctx, q)
	if err != nil {
		return nil, err
	}
	if set.More > 0 {
		return nil, fmt.Errorf("the query returned %d series, more than the %d that %d looks each may have within --max-result-values: aggregate them (sum by a few labels)",
			len(set.Series)+set.More, q.MaxSeries, n+1)
	}
	fine := cumulative(set, q.Start, q.Step, n*m)
	out := make([]float64, n+1)
	for k := range out {
		out[k] = fine[k*m]
	}
	return out, nil
}

func interval(start, end time.Time) string {
	const layout = time.RFC3339
	return start.UTC().Format(layout) + "/" + end.UTC().Format(layout)
}
