package analyses

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkLedger holds 20,000 finished analyses of one metric and ten
// measurements and reports what each takes of the heap beside what its
// ledger counts it at (retained.go): the estimate that
// --max-retained-bytes bounds.
func BenchmarkLedger(b *testing.B) {
	const n = 20000
	for b.Loop() {
		a, err := NewAnalyses(AnalysesOptions{MaxRunning: n, MaxFinished: n, Retention: time.Hour, MaxRetainedBytes: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		p := plan(b, 10)
		args := map[string]string{"namespace": "echo"}
		runs := make([]*Run, n)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range runs {
			if runs[i], err = a.Start(p, StartOptions{Template: "success-rate", Args: args}); err != nil {
				b.Fatal(err)
			}
		}
		for _, r := range runs {
			<-r.Done()
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/analysis")
		b.ReportMetric(float64(a.held.Bytes().Load())/n, "ledger-B/analysis")
		runtime.KeepAlive(runs)
	}
}
