package analyses

import (
	"math"
	"sync/atomic"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// Retained results: what the analyses hold in memory is bounded in bytes
// as well as in number. Each run keeps an estimate of its size (a Ledger),
// kept up as its measurements are recorded and set exactly from its final
// state when it completes; the service keeps the sum, and evicts finished
// analyses to stay under its bound.

// Sizes of the estimate: what a record costs beyond the bytes of its
// strings (the struct, its pointers and times, a map's buckets). A
// finished analysis of one metric and ten measurements takes 2.9 KB of
// heap, and is counted at that (BenchmarkLedger); a running one holds its
// place in the scheduler besides, bounded by --max-analyses.
const (
	analysisOverhead    = 928
	metricOverhead      = 256
	measurementOverhead = 160
	entryOverhead       = 32
)

// Ledger is a run's share of the retained bytes. Its measurements are
// counted as the engine keeps them: a metric with a retention keeps its
// last measurements only, so the sizes of those it dropped are taken off.
// Only the run's observer touches kept; size is read by anyone.
type Ledger struct {
	total *atomic.Int64 // the Analyses' sum
	size  atomic.Int64
	// kept are the sizes of the measurements each metric with a
	// retention keeps, in the plan's order: every run has one, and most
	// metrics have the default retention.
	kept []keptSizes
}

// keptSizes are the sizes of the last measurements of a metric that keeps
// keep of them: a ring, allocated at its first measurement, whose oldest
// is at next once it is full.
type keptSizes struct {
	metric string
	keep   int
	next   int
	ring   []int32
}

// NewLedger counts the run id of plan, of template with args, that has
// measured nothing yet, in total (the sum of every run held).
func NewLedger(total *atomic.Int64, plan *analysis.Plan, id, template string, args map[string]string) *Ledger {
	l := &Ledger{total: total}
	n := int64(analysisOverhead+len(id)+len(template)) + sizeOfMap(args)
	for _, m := range plan.Metrics {
		n += int64(metricOverhead+len(m.Name)) + sizeOfMap(m.Metadata)
		if m.Retention > 0 {
			if l.kept == nil {
				l.kept = make([]keptSizes, 0, len(plan.Metrics))
			}
			l.kept = append(l.kept, keptSizes{metric: m.Name, keep: m.Retention})
		}
	}
	l.add(n)
	return l
}

// CompletedLedger returns the ledger of an analysis held as it is, final
// and completed, already: as NewLedger and then Completed count it, in one
// step.
func CompletedLedger(total *atomic.Int64, final *api.Analysis) *Ledger {
	l := &Ledger{total: total}
	l.add(SizeOfAnalysis(final))
	return l
}

func (l *Ledger) add(n int64) {
	l.size.Add(n)
	l.total.Add(n)
}

// Measured counts a measurement the engine has recorded for metric. Only
// the run's observer calls it.
func (l *Ledger) Measured(metric string, m *api.Measurement) {
	n := sizeOfMeasurement(m)
	l.add(n)
	for i := range l.kept {
		if k := &l.kept[i]; k.metric == metric {
			l.add(-k.replace(int32(min(n, math.MaxInt32))))
			return
		}
	}
}

// replace keeps the size n of a new measurement and returns the size of
// the one the engine drops for it (0 while fewer than keep are kept).
func (k *keptSizes) replace(n int32) int64 {
	if len(k.ring) < k.keep {
		if k.ring == nil {
			k.ring = make([]int32, 0, k.keep)
		}
		k.ring = append(k.ring, n)
		return 0
	}
	dropped := k.ring[k.next]
	k.ring[k.next] = n
	k.next = (k.next + 1) % k.keep
	return int64(dropped)
}

// Completed sets the size from the final state, which is what is kept.
func (l *Ledger) Completed(final *api.Analysis) {
	l.add(SizeOfAnalysis(final) - l.size.Load())
	l.kept = nil
}

// Release takes the run's size off the sum, when it is evicted.
func (l *Ledger) Release() { l.total.Add(-l.size.Load()) }

// Size is the run's estimated size.
func (l *Ledger) Size() int64 { return l.size.Load() }

// SizeOfAnalysis estimates the bytes a holds.
func SizeOfAnalysis(a *api.Analysis) int64 {
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
