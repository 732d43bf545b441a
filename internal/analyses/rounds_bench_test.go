package analyses

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// BenchmarkEvaluate is a round of one metric whose source answers at
// once, kept (the oldest of --max-finished evicted for it) or not (none
// old enough to be evicted): the service's own work in a round of
// /v1/evaluate, the engine's included.
func BenchmarkEvaluate(b *testing.B) {
	for _, bc := range []struct {
		name         string
		minRetention time.Duration
	}{{"kept", time.Nanosecond}, {"not-kept", time.Hour}} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := NewAnalyses(AnalysesOptions{MaxRunning: 1, MaxFinished: 1000, Retention: time.Hour, MinRetention: bc.minRetention,
				MaxRetainedBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(a.Close)
			p := plan(b, 1)
			p.Metrics[0].Source = analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
				return analysis.Observation{Value: 1.0, Display: "1"}
			})
			so := StartOptions{Args: map[string]string{"namespace": "echo"}, Series: "s"}
			ctx := context.Background()
			answer := func(result api.Analysis, kept, late bool) {}
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Evaluate(ctx, p, so, answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
