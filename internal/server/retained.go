package server

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/limits"
)

// Retained results.
//
// What the analyses hold in memory is bounded in bytes as well as in
// number: each run keeps an estimate of its size (a ledger), kept up as
// its measurements are recorded and set exactly from its final state when
// it completes, and the Analyses keep the sum. Finished analyses are
// evicted oldest first when the sum is over MaxRetainedBytes or they are
// more than MaxFinished, but never one finished less than MinRetention
// ago: a new analysis is refused (429) instead, so that no caller can
// evict another's result before it has had the time to read it.

// Defaults of the retention bounds of AnalysesOptions (limits).
const (
	DefaultMaxRetainedBytes = limits.MaxRetainedBytes
	DefaultMinRetention     = limits.MinRetention
)

// Errors of Analyses.Start when nothing held can be evicted.
var (
	// ErrRetainedFull: the results held are at --max-retained-bytes, and
	// every finished analysis is younger than --min-retention.
	ErrRetainedFull = errors.New("the results held are at their limit in bytes")
	// ErrFinishedFull: --max-finished finished analyses are held, every
	// one younger than --min-retention.
	ErrFinishedFull = errors.New("the finished analyses held are at their limit")
)

// Sizes of the estimate: what a record costs beyond the bytes of its
// strings (the struct, its pointers and times, a map's buckets).
const (
	analysisOverhead    = 1024
	metricOverhead      = 256
	measurementOverhead = 160
	entryOverhead       = 32
)

// ledger is a run's share of the retained bytes. Its measurements are
// counted as the engine keeps them: a metric with a retention keeps its
// last measurements only, so the sizes of those it dropped are taken off.
// Only the run's observer touches kept; size is read by anyone.
type ledger struct {
	total *atomic.Int64 // the Analyses' sum
	size  atomic.Int64
	// kept are the sizes of each metric's measurements kept, oldest
	// first, for the metrics with a retention, by name.
	kept      map[string]*sizes
	retention map[string]int
}

type sizes struct{ q []int64 }

// newLedger counts a run of plan that has measured nothing yet.
func newLedger(total *atomic.Int64, plan *analysis.Plan, id string, so StartOptions) *ledger {
	l := &ledger{total: total, kept: map[string]*sizes{}, retention: map[string]int{}}
	n := int64(analysisOverhead+len(id)+len(so.Template)) + sizeOfMap(so.Args)
	for _, m := range plan.Metrics {
		n += int64(metricOverhead+len(m.Name)) + sizeOfMap(m.Metadata)
		if m.Retention > 0 {
			l.retention[m.Name] = m.Retention
		}
	}
	l.add(n)
	return l
}

func (l *ledger) add(n int64) {
	l.size.Add(n)
	l.total.Add(n)
}

// measured counts a measurement the engine has recorded for metric.
func (l *ledger) measured(metric string, m *api.Measurement) {
	n := sizeOfMeasurement(m)
	l.add(n)
	keep, ok := l.retention[metric]
	if !ok {
		return
	}
	s := l.kept[metric]
	if s == nil {
		s = &sizes{}
		l.kept[metric] = s
	}
	s.q = append(s.q, n)
	if over := len(s.q) - keep; over > 0 {
		var dropped int64
		for _, d := range s.q[:over] {
			dropped += d
		}
		s.q = append(s.q[:0], s.q[over:]...)
		l.add(-dropped)
	}
}

// completed sets the size from the final state, which is what is kept.
func (l *ledger) completed(final *api.Analysis) {
	l.add(sizeOfAnalysis(final) - l.size.Load())
	l.kept, l.retention = nil, nil
}

// release takes the run's size off the sum, when it is evicted.
func (l *ledger) release() { l.total.Add(-l.size.Load()) }

func sizeOfAnalysis(a *api.Analysis) int64 {
	if a == nil {
		return analysisOverhead
	}
	n := int64(analysisOverhead + len(a.ID) + len(a.Message) + len(a.Template))
	n += sizeOfMap(a.Args)
	for i := range a.MetricResults {
		r := &a.MetricResults[i]
		n += int64(metricOverhead+len(r.Name)+len(r.Message)) + sizeOfMap(r.Metadata)
		for j := range r.Measurements {
			n += sizeOfMeasurement(&r.Measurements[j])
		}
	}
	return n
}

func sizeOfMeasurement(m *api.Measurement) int64 {
	if m == nil {
		return 0
	}
	return int64(measurementOverhead+len(m.Value)+len(m.Message)) + sizeOfMap(m.Metadata)
}

func sizeOfMap(m map[string]string) int64 {
	var n int64
	for k, v := range m {
		n += int64(entryOverhead + len(k) + len(v))
	}
	return n
}

// retentionFull says why a new analysis cannot start, naming the limit.
func (a *Analyses) retentionFull(err error) string {
	if errors.Is(err, ErrFinishedFull) {
		return fmt.Sprintf("%d finished analyses are held, the most this canaryd keeps (--max-finished), and each finished less than "+
			"--min-retention (%s) ago, so none is evicted for a new one; retry later", a.opts.MaxFinished, a.opts.MinRetention)
	}
	return fmt.Sprintf("the results held here take about %s, more than the %s this canaryd keeps (--max-retained-bytes), and the "+
		"analyses that hold them are running or finished less than --min-retention (%s) ago, so none is evicted for a new one; retry later",
		formatBytes(a.retained.Load()), formatBytes(a.opts.MaxRetainedBytes), a.opts.MinRetention)
}

// formatBytes writes a size the way the flags take it.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
