package analysis

import (
	"context"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// The in-process benchmark's size and length, from the environment so that
// make bench-once runs it small and short.
const (
	millionAnalysesEnv = "CANARYD_BENCH_SCHED_ANALYSES" // default 1,000,000
	millionDurationEnv = "CANARYD_BENCH_SCHED_DURATION" // default 2m: two intervals
	millionIntervalEnv = "CANARYD_BENCH_SCHED_INTERVAL" // default 60s
)

// millionSettle is how long after the collection that follows the starts
// the measured interval begins.
const millionSettle = 5 * time.Second

// atOnce is a source that answers at once, without I/O.
type atOnce struct{}

var one any = 1.0

func (atOnce) Measure(context.Context, time.Time) Observation {
	return Observation{Value: one, Display: "1"}
}

// passJudge passes every value.
type passJudge struct{}

func (passJudge) Judge(any) (api.Phase, error) { return api.PhaseSuccessful, nil }

// latencies is a histogram of lateness in microseconds, up to a second,
// with a bucket over it; safe for concurrent use, without allocation.
type latencies struct {
	us   [1_000_001]atomic.Int64
	over atomic.Int64
	n    atomic.Int64
}

func (l *latencies) add(d time.Duration) {
	l.n.Add(1)
	if us := d.Microseconds(); us <= 1_000_000 {
		l.us[us].Add(1)
		return
	}
	l.over.Add(1)
}

// quantile returns the q-quantile, to the microsecond; a second when it
// is over.
func (l *latencies) quantile(q float64) time.Duration {
	if l.n.Load() == 0 {
		return 0
	}
	want := int64(q * float64(l.n.Load()))
	var seen int64
	for us := range l.us {
		if seen += l.us[us].Load(); seen > want {
			return time.Duration(us) * time.Microsecond
		}
	}
	return time.Second
}

func envInt(b *testing.B, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return d
	}
	return def
}

// BenchmarkMillionAnalyses runs a million analyses in-process on one
// Scheduler (DefaultWorkers) on the wall clock: one metric whose source
// answers at once, every 60 s, ten times; their starts spread over the
// first interval (or over half the run when it is shorter). Once all have
// started, a collection has settled the heap they grew and the
// measurements it delayed have been taken (millionSettle), it measures for
// the rest of the run (most of another interval by default): the lateness of
// the measurements taken then (from when each was due to when its source
// was asked), the allocations per measurement (the measurement's own: the
// scheduler's part allocates nothing, see BenchmarkScheduler), the
// collections, and the heap per analysis.
func BenchmarkMillionAnalyses(b *testing.B) {
	n := envInt(b, millionAnalysesEnv, 1_000_000)
	duration := envDuration(b, millionDurationEnv, 2*time.Minute)
	interval := envDuration(b, millionIntervalEnv, time.Minute)
	spread := min(interval, duration/2)
	plan := &Plan{Metrics: []Metric{{Name: "m", Interval: interval, Count: i32(10), Source: atOnce{}, Judge: passJudge{},
		ConsecutiveErrorLimit: DefaultConsecutiveErrorLimit, Retention: DefaultMeasurementRetention}}}
	for range b.N {
		sched := NewScheduler(nil, 0)
		steady := new(latencies)
		// The measurements counted are those due once the starts, the
		// collection after them and settle more are over (steadyFrom, Unix
		// nanoseconds): those due while a collection of the million's
		// heap runs start late, and delay those due just after it.
		var measured, steadyFrom atomic.Int64
		steadyFrom.Store(math.MaxInt64)
		lateness := func(d time.Duration) {
			measured.Add(1)
			if now := time.Now(); now.Add(-d).UnixNano() >= steadyFrom.Load() {
				steady.add(d)
			}
		}
		runs := make([]*Run, n)
		start := time.Now()
		const step = 10 * time.Millisecond
		per := max(n/int(spread/step), 1)
		for i := 0; i < n; {
			for end := min(i+per, n); i < end; i++ {
				runs[i] = Start(context.Background(), plan, Options{Scheduler: sched, Lateness: lateness})
			}
			time.Sleep(time.Until(start.Add(time.Duration(i/per) * step)))
		}
		started := time.Since(start)
		runtime.GC()
		settle := min(millionSettle, (duration-spread)/4)
		time.Sleep(settle)
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		steadyFrom.Store(time.Now().UnixNano())
		atSteady := measured.Load()
		time.Sleep(duration - spread - settle)
		steadyFrom.Store(math.MaxInt64)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		taken := measured.Load() - atSteady
		runtime.GC()
		var live runtime.MemStats
		runtime.ReadMemStats(&live)
		b.StopTimer()
		for _, r := range runs {
			r.Terminate()
		}
		for _, r := range runs {
			<-r.Done()
		}
		b.ReportMetric(float64(n), "analyses")
		b.ReportMetric(started.Seconds(), "start-s")
		b.ReportMetric(float64(steady.n.Load()), "measurements")
		b.ReportMetric(float64(steady.quantile(0.50).Microseconds())/1000, "lateness-p50-ms")
		b.ReportMetric(float64(steady.quantile(0.99).Microseconds())/1000, "lateness-p99-ms")
		b.ReportMetric(float64(steady.over.Load()), "late-over-1s")
		if taken > 0 {
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(taken), "allocs/measurement")
		}
		b.ReportMetric(float64(after.NumGC-before.NumGC), "gc-cycles")
		b.ReportMetric(float64(live.HeapAlloc)/float64(n)/1024, "heap-KiB/analysis")
		b.StartTimer()
	}
}
