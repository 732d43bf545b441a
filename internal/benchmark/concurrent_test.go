package benchmark

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

// Environment variables that make the test binary a helper process instead
// of running tests: the benchmarks start their helpers as processes of
// their own, so that their memory and CPU are not counted as canaryd's or
// the benchmark's.
const (
	// stubAddrEnv makes it a stub Prometheus listening there.
	stubAddrEnv = "CANARYD_BENCH_STUB_ADDR"
	// proxyEnv makes it the thinnest possible gateway to a Prometheus (see
	// serveProxy): "LISTEN PROMETHEUS_URL", the query in proxyQueryEnv.
	proxyEnv      = "CANARYD_BENCH_PROXY"
	proxyQueryEnv = "CANARYD_BENCH_PROXY_QUERY"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(stubAddrEnv); addr != "" {
		h := stubHandler()
		if os.Getenv(stubArrivalsEnv) != "" {
			h = recordArrivals(h)
		}
		serve(addr, h)
		return
	}
	if v := os.Getenv(proxyEnv); v != "" {
		addr, prom, _ := strings.Cut(v, " ")
		serve(addr, proxyHandler(prom, os.Getenv(proxyQueryEnv)))
		return
	}
	os.Exit(m.Run())
}

func serve(addr string, h http.Handler) {
	if err := http.ListenAndServe(addr, h); err != nil {
		fmt.Fprintln(os.Stderr, "benchmark helper:", err)
		os.Exit(1)
	}
}

// stubHandler answers every instant query at once with one sample.
func stubHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"0.995"]}]}}`, time.Now().Unix())
	})
}

// startHelper starts the test binary as a helper process with the
// environment variable name=value, waits until it answers HTTP at addr,
// and returns its process id. The helper is killed when the test ends.
func startHelper(tb testing.TB, addr, name, value string, env ...string) int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), name+"="+value), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			return cmd.Process.Pid
		}
		if i > 200 {
			tb.Fatalf("%s=%s did not start: %v", name, value, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// stubPrometheus starts the stub in a child process and returns its URL
// and process id.
func stubPrometheus(tb testing.TB) (string, int) {
	addr := freeAddr(tb)
	return "http://" + addr, startHelper(tb, addr, stubAddrEnv, addr)
}

// concurrentSpec is the spec every analysis runs; %d is its count.
const concurrentSpec = `metrics:
- name: non-5xx-rate
  interval: 1s
  count: %d
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: sum(rate(istio_requests_total{response_code!~"5.."}[1m])) / sum(rate(istio_requests_total[1m]))
`

// BenchmarkConcurrentAnalyses starts CANARYD_BENCH_ANALYSES (10,000)
// analyses, each measuring every second CANARYD_BENCH_COUNT times (10;
// more shows the steady state better: a ten-second run sees a handful of
// garbage collections) against a stub
// Prometheus, their starts spread over one second, and reports how late
// measurements were against their schedule (p50, p99), the memory each
// running analysis holds, the CPU used (canaryd's, and the stub's beside
// it: both share the machine) and the GC cycles run. Run it with
// -benchtime 1x.
//
// It runs twice: with each analysis compiling its own condition programs,
// as the service does today, and with the programs shared through a
// condition.Programs (compile.WithPrograms), as it does once the server passes
// one to compile.Compile.
func BenchmarkConcurrentAnalyses(b *testing.B) {
	n := 10000
	if s := os.Getenv("CANARYD_BENCH_ANALYSES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	count := 10
	if s := os.Getenv("CANARYD_BENCH_COUNT"); s != "" {
		count, _ = strconv.Atoi(s)
	}
	stub, stubPID := stubPrometheus(b)
	doc, problems := spec.Parse([]byte(fmt.Sprintf(concurrentSpec, count)))
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	for _, variant := range []struct {
		name     string
		programs func() *condition.Programs
	}{
		{"programs=each", func() *condition.Programs { return nil }},
		{"programs=shared", func() *condition.Programs { return condition.NewPrograms(0) }},
	} {
		b.Run(variant.name, func(b *testing.B) {
			// A provider of its own: the variant after the first must not
			// find its connections already open.
			provider, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "stub", URL: stub}}})
			if err != nil {
				b.Fatal(err)
			}
			defer provider.CloseIdleConnections()
			for b.Loop() {
				runConcurrent(b, n, doc, provider, compile.WithPrograms(variant.programs()), stubPID)
			}
		})
	}
}

func runConcurrent(b *testing.B, n int, doc *spec.Document, provider *prometheus.Provider, opt compile.Option, stubPID int) {
	plans := make([]*analysis.Plan, n)
	providers := promAndJudge(provider.Source)
	for i := range plans {
		compiled, problems := compile.Compile(doc, nil, providers, opt)
		if len(problems) > 0 {
			b.Fatal(problems)
		}
		plans[i] = compiled.Plan
	}
	runtime.GC()
	before := memory()
	cpuBefore, stubBefore := cpuTime(), processCPU(stubPID)
	var gcBefore runtime.MemStats
	runtime.ReadMemStats(&gcBefore)
	wallStart := time.Now()

	runs := make([]*analysis.Run, n)
	spread := time.Second / time.Duration(n)
	for i := range runs {
		runs[i] = analysis.Start(context.Background(), plans[i], analysis.Options{ID: strconv.Itoa(i)})
		time.Sleep(spread)
	}
	// Mid-run, every analysis is alive: measure what they hold. The
	// forced collection stalls the analyses as no collection of the
	// service's own would (it is a full cycle and a full sweep, requested
	// here and nowhere else), so measurements due while it runs are left
	// out of the lateness.
	time.Sleep(4 * time.Second)
	gcStart := time.Now()
	runtime.GC()
	during := memory()
	gcEnd := time.Now()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func(r *analysis.Run) { defer wg.Done(); <-r.Done() }(r)
	}
	wg.Wait()
	wall := time.Since(wallStart)
	cpu, stubCPU := cpuTime()-cpuBefore, processCPU(stubPID)-stubBefore
	var gcAfter runtime.MemStats
	runtime.ReadMemStats(&gcAfter)

	var lateness []time.Duration
	excluded := 0
	failed := 0
	errorsSeen := map[string]int{}
	for _, r := range runs {
		a := r.Snapshot()
		for _, m := range a.MetricResults[0].Measurements {
			if m.Phase == api.PhaseError {
				errorsSeen[m.Message]++
			}
		}
		if a.Phase != api.PhaseSuccessful {
			failed++
		}
		ms := a.MetricResults[0].Measurements
		for k := 1; k < len(ms); k++ {
			due := ms[k-1].FinishedAt.Add(time.Second)
			if !due.Before(gcStart) && due.Before(gcEnd) {
				excluded++
				continue
			}
			lateness = append(lateness, ms[k].StartedAt.Sub(due))
		}
	}
	for msg, count := range errorsSeen {
		b.Logf("%d Error measurements: %s", count, msg)
	}
	if failed > 0 {
		b.Fatalf("%d of %d analyses did not succeed", failed, n)
	}
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	b.ReportMetric(float64(percentile(lateness, 0.50))/1e6, "lateness-p50-ms")
	b.ReportMetric(float64(percentile(lateness, 0.99))/1e6, "lateness-p99-ms")
	b.ReportMetric(float64(during.heap-before.heap)/float64(n)/1024, "heap-KiB/analysis")
	b.ReportMetric(float64(during.rss-before.rss)/float64(n)/1024, "rss-KiB/analysis")
	b.ReportMetric(cpu.Seconds()/wall.Seconds()*100, "cpu-%")
	b.ReportMetric(stubCPU.Seconds()/wall.Seconds()*100, "stub-cpu-%")
	b.ReportMetric(float64(gcAfter.NumGC-gcBefore.NumGC), "gc-cycles")
	b.ReportMetric(float64(excluded), "excluded-measurements")
	b.ReportMetric(float64(n), "analyses")
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p)]
}

type mem struct{ heap, rss uint64 }

// memory returns the Go heap and stacks in use and the process' resident
// set size.
func memory() mem {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := mem{heap: ms.HeapInuse + ms.StackInuse}
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				m.rss = kb * 1024
			}
		}
	}
	return m
}

// processCPU is another process' user and system CPU time so far, from
// /proc (0 where there is none).
func processCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th of them, in clock
	// ticks (100 a second on Linux).
	end := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// cpuTime is the process' user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
