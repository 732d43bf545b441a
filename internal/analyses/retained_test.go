package analyses

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// TestLedger checks the estimate of an analysis' size: it grows with what
// each measurement holds, forgets the measurements a metric's retention
// drops, is set from the final state on completion, and leaves the sum
// when the analysis is evicted.
func TestLedger(t *testing.T) {
	var total atomic.Int64
	plan := &analysis.Plan{Metrics: []analysis.Metric{{Name: "kept-2", Retention: 2}, {Name: "all"}}}
	l := NewLedger(&total, plan, "id", "t", map[string]string{"a": "b"})
	base := l.size.Load()
	if base < analysisOverhead || total.Load() != base {
		t.Fatalf("a new run: size %d, sum %d; want at least %d, and the sum its size", base, total.Load(), analysisOverhead)
	}
	big := &api.Measurement{Value: strings.Repeat("9", 10_000)}
	for range 5 {
		l.Measured("kept-2", big)
		l.Measured("all", big)
	}
	// kept-2 keeps 2 of its 5, all keeps its 5.
	want := base + 7*sizeOfMeasurement(big)
	if got := l.size.Load(); got != want || total.Load() != want {
		t.Errorf("after 5 measurements of each metric: size %d, sum %d; want %d", got, total.Load(), want)
	}
	final := &api.Analysis{ID: "id", MetricResults: []api.MetricResult{{Name: "all", Measurements: []api.Measurement{*big}}}}
	l.Completed(final)
	if got := l.size.Load(); got != SizeOfAnalysis(final) || total.Load() != got {
		t.Errorf("completed: size %d, sum %d; want the final state's %d", got, total.Load(), SizeOfAnalysis(final))
	}
	if got := SizeOfAnalysis(final); got < 10_000 {
		t.Errorf("an analysis holding a 10 kB value is estimated at %d bytes", got)
	}
	l.Release()
	if total.Load() != 0 {
		t.Errorf("after release the sum is %d, want 0", total.Load())
	}

	// A round, held completed at once, counts as a run completed with it.
	kept := CompletedLedger(&total, final)
	if got := kept.Size(); got != SizeOfAnalysis(final) || total.Load() != got {
		t.Errorf("held completed: size %d, sum %d; want the final state's %d", got, total.Load(), SizeOfAnalysis(final))
	}
	kept.Release()
	if total.Load() != 0 {
		t.Errorf("after release the sum is %d, want 0", total.Load())
	}
}
