package benchmark

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/proctest"
)

// The scale of BenchmarkServeAnalyses, as docs/performance.md gives its
// figures, and the environment variables that change it for a quick run.
const (
	serveAnalyses    = 100000
	serveInterval    = time.Minute
	serveCount       = 10
	serveClients     = 8
	serveAnalysesEnv = "CANARYD_BENCH_SERVE_ANALYSES"
	serveIntervalEnv = "CANARYD_BENCH_SERVE_INTERVAL"
	// serveSpreadEnv spreads the POSTs evenly over a duration (the
	// i-th is not sent before i/n of it has passed), so that the
	// measurements fall due evenly; 0, the default, posts them as fast
	// as canaryd takes them.
	serveSpreadEnv = "CANARYD_BENCH_SERVE_SPREAD"
	// stubArrivalsEnv makes the stub Prometheus record when each query
	// arrived (recordArrivals).
	stubArrivalsEnv = "CANARYD_BENCH_STUB_ARRIVALS"
	// serveTraceEnv names a file that gets, for reading side by side,
	// canaryd's gctrace lines and each measurement's lateness, each
	// line after the wall time it stands for (Unix milliseconds): "gc
	// <read at> <gctrace line>" and "late <due> <recorded µs>
	// <arrival µs, -1 when not found>".
	serveTraceEnv = "CANARYD_BENCH_SERVE_TRACE"
)

// serveTrace opens the file of serveTraceEnv; nil when it is not set.
func serveTrace(b *testing.B) io.Writer {
	path := os.Getenv(serveTraceEnv)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := &lockedWriter{w: bufio.NewWriter(f)}
	b.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		_ = w.w.Flush()
		_ = f.Close()
	})
	return w
}

// lockedWriter is a writer for several goroutines, a line each write.
type lockedWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// recordArrivals records, for every query h answers, when it arrived by
// the instant it asks for (its time parameter, the measurement's start as
// canaryd recorded it, to the microsecond), and answers GET /arrivals with
// them: a line "instant arrival" each, in Unix microseconds.
func recordArrivals(h http.Handler) http.Handler {
	var mu sync.Mutex
	arrivals := map[int64]int64{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UnixMicro()
		if r.Method == http.MethodGet && r.URL.Path == "/arrivals" {
			mu.Lock()
			defer mu.Unlock()
			bw := bufio.NewWriter(w)
			for at, arrived := range arrivals {
				fmt.Fprintf(bw, "%d %d\n", at, arrived)
			}
			_ = bw.Flush()
			return
		}
		if t, err := strconv.ParseFloat(r.FormValue("time"), 64); err == nil {
			mu.Lock()
			arrivals[int64(math.Round(t*1e6))] = now
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// arrivalOf finds when the query of the measurement that started at
// started arrived: the query's time parameter is a float of seconds, good
// to a fraction of a microsecond, so the neighbouring microseconds are
// looked at too.
func arrivalOf(arrivals map[int64]int64, started time.Time) (time.Time, bool) {
	us := started.UnixMicro()
	for _, k := range []int64{us, us + 1, us - 1} {
		if at, ok := arrivals[k]; ok {
			return time.UnixMicro(at), true
		}
	}
	return time.Time{}, false
}

// fetchArrivals reads what recordArrivals recorded.
func fetchArrivals(client *http.Client, stub string) (map[int64]int64, error) {
	resp, err := client.Get(stub + "/arrivals")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[int64]int64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		at, arrived, _ := strings.Cut(sc.Text(), " ")
		a, err1 := strconv.ParseInt(at, 10, 64)
		b, err2 := strconv.ParseInt(arrived, 10, 64)
		if err1 == nil && err2 == nil {
			out[a] = b
		}
	}
	return out, sc.Err()
}

// serveSpec is the document every analysis posts: the seed's success rate
// against the stand-in, measured every %s, %d times.
const serveSpec = `metrics:
- name: non-5xx-rate
  interval: %s
  count: %d
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: sum(rate(istio_requests_total{response_code!~"5.."}[1m])) / sum(rate(istio_requests_total[1m]))
`

// BenchmarkServeAnalyses runs `canaryd serve --store memory:` as a process
// of its own and creates CANARYD_BENCH_SERVE_ANALYSES (100,000) analyses
// of the seed's success rate (interval CANARYD_BENCH_SERVE_INTERVAL, 60 s;
// count 10) through POST /v1/analyses, from 8 clients with keep-alive,
// against a stub Prometheus in a process of its own that answers at once.
// Once every analysis has taken its second measurement, it reports:
//
//   - create-s: how long the POSTs took, all of them;
//   - lateness-p50-ms, lateness-p99-ms: how long after its schedule
//     (the previous measurement's finish plus the interval) each
//     measurement after the first started, as the analyses record it;
//     arrival-lateness-p50-ms, arrival-lateness-p99-ms, how long after
//     it its query arrived at the stub (which records each query's
//     arrival by the instant it asks for: the measurement's start);
//     metric-lateness-p99-le-ms, the bucket of canaryd's own histogram
//     (canaryd_measurement_lateness_seconds, every measurement) that
//     holds its p99;
//   - heap-KiB/analysis: the live heap (as the last garbage collection
//     marked it, from GODEBUG=gctrace=1) and goroutine stacks, and
//     rss-KiB/analysis, canaryd's resident set from /proc, over those of
//     the idle process, per running analysis;
//   - retained-KiB/analysis: what canaryd's ledgers count them at
//     (canaryd_analyses_retained_bytes, bounded by --max-retained-bytes);
//   - healthz-max-ms: the slowest of the /healthz probes made every 100 ms
//     while the analyses run; gc-max-pause-ms the longest stop-the-world
//     pause of a collection (gctrace's), and gc-cycles their number;
//   - gc-cycles-measured, alloc-B/measurement, allocs/measurement: the
//     collections while the second measurements fell due (the /healthz
//     probes' window, after the POSTs), and the bytes and objects canaryd
//     allocated then (its go_memstats_alloc_bytes_total and
//     go_memstats_mallocs_total) per measurement taken
//     (canaryd_measurements_total): the garbage a measurement leaves.
//
// CANARYD_BENCH_SERVE_SPREAD spreads the POSTs over a duration rather
// than send them as fast as canaryd takes them. CANARYD_BENCH_SERVE_TRACE
// names a file for canaryd's collections and every measurement's
// lateness, by wall time, to see which late measurements fell due
// during a collection. Run it with -benchtime 1x;
// it takes about the creation time plus two intervals.
func BenchmarkServeAnalyses(b *testing.B) {
	n := serveAnalyses
	if s := os.Getenv(serveAnalysesEnv); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of analyses", serveAnalysesEnv, s)
		}
	}
	interval := serveInterval
	if s := os.Getenv(serveIntervalEnv); s != "" {
		var err error
		if interval, err = time.ParseDuration(s); err != nil || interval < time.Second {
			b.Fatalf("%s=%q: want a duration of at least 1s", serveIntervalEnv, s)
		}
	}
	var spread time.Duration
	if s := os.Getenv(serveSpreadEnv); s != "" {
		var err error
		if spread, err = time.ParseDuration(s); err != nil || spread < 0 {
			b.Fatalf("%s=%q: want a duration", serveSpreadEnv, s)
		}
	}
	bin := proctest.Build(b, "../../cmd/canaryd")
	addr := freeAddr(b)
	startHelper(b, addr, stubAddrEnv, addr, stubArrivalsEnv+"=1")
	stub := "http://" + addr
	for b.Loop() {
		runServe(b, bin, stub, n, interval, spread)
	}
}

// serveProcess is a canaryd serve process and what its standard error
// says of its garbage collections.
type serveProcess struct {
	cmd  *exec.Cmd
	base string
	gc   gcTrace
	done chan struct{}
}

// gcTrace collects GODEBUG=gctrace=1's lines.
type gcTrace struct {
	mu     sync.Mutex
	cycles int
	live   uint64 // the heap marked live by the latest cycle, in bytes
	stacks uint64 // the goroutine stacks at the latest cycle, in bytes
	pause  time.Duration
	// trace, when set, gets each gctrace line (serveTraceEnv).
	trace io.Writer
}

// gctrace's line: "gc 12 @3.1s 2%: 0.02+1.2+0.01 ms clock, ..., 4->5->3 MB,
// 6 MB goal, 1 MB stacks, ...". The clock's first and third terms are the
// stop-the-world phases.
var gcLine = regexp.MustCompile(`^gc \d+ @[0-9.]+s \d+%: ([0-9.]+)\+[0-9.]+\+([0-9.]+) ms clock, .*, \d+->\d+->(\d+) MB, \d+ MB goal, (\d+) MB stacks`)

func (g *gcTrace) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if g.trace != nil && strings.HasPrefix(sc.Text(), "gc ") {
			fmt.Fprintf(g.trace, "gc %d %s\n", time.Now().UnixMilli(), sc.Text())
		}
		m := gcLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ms := func(s string) time.Duration { f, _ := strconv.ParseFloat(s, 64); return time.Duration(f * 1e6) }
		mb := func(s string) uint64 { v, _ := strconv.ParseUint(s, 10, 64); return v << 20 }
		g.mu.Lock()
		g.cycles++
		g.live, g.stacks = mb(m[3]), mb(m[4])
		g.pause = max(g.pause, ms(m[1]), ms(m[2]))
		g.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

func (g *gcTrace) snapshot() (cycles int, live, stacks uint64, pause time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cycles, g.live, g.stacks, g.pause
}

func startServeProcess(b *testing.B, bin, stub string, n int, trace io.Writer) *serveProcess {
	addr := freeAddr(b)
	cmd := exec.Command(bin, "serve", "--listen", addr, "--store", "memory:", "--prometheus-url", stub,
		"--max-analyses", strconv.Itoa(n+1), "--max-retained-bytes", "16GiB")
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	cmd.SysProcAttr = proctest.SysProcAttr(nil)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, base: "http://" + addr, done: make(chan struct{}), gc: gcTrace{trace: trace}}
	// Ends when the process exits and its standard error closes.
	go func() { defer close(p.done); p.gc.read(stderr) }()
	b.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done; _ = cmd.Wait() })
	for i := 0; ; i++ {
		resp, err := http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if i > 1000 {
			b.Fatalf("canaryd serve did not become ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rss is the process' resident set, from /proc.
func rss(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func runServe(b *testing.B, bin, stub string, n int, interval, spread time.Duration) {
	trace := serveTrace(b)
	p := startServeProcess(b, bin, stub, n, trace)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: serveClients}}
	body := []byte(fmt.Sprintf(serveSpec, interval, serveCount))
	// A first analysis warms up what every analysis shares (the compiled
	// spec, the connections to the stub), so that the idle figures count
	// it.
	if _, err := postAnalysis(client, p.base, body); err != nil {
		b.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	_, live0, stacks0, _ := p.gc.snapshot()
	rss0 := rss(p.cmd.Process.Pid)

	ids := make([]string, n)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range serveClients {
		wg.Add(1)
		// Ends when every analysis has been posted.
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				time.Sleep(time.Until(began.Add(spread * time.Duration(i) / time.Duration(n))))
				id, err := postAnalysis(client, p.base, body)
				if err != nil {
					if failed.Add(1) == 1 {
						b.Errorf("POST /v1/analyses: %v", err)
					}
					continue
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	created := time.Since(began)
	if failed.Load() > 0 {
		b.Fatalf("%d of %d analyses were not created", failed.Load(), n)
	}

	// /healthz is probed while every analysis takes its second
	// measurement: the last one created takes it an interval after it
	// was created, and a little more. The process' counters before and
	// after that window tell the garbage its measurements left.
	cycles0, _, _, _ := p.gc.snapshot()
	window0 := scrapeRuntime(client, p.base)
	healthz := probeHealthz(client, p.base, interval+interval/10+time.Second)
	window1 := scrapeRuntime(client, p.base)
	cycles, live, stacks, pause := p.gc.snapshot()
	rss1 := rss(p.cmd.Process.Pid)

	arrivals, err := fetchArrivals(client, stub)
	if err != nil {
		b.Fatal(err)
	}
	lateness, arrived := serveLateness(b, client, p.base, ids, interval, arrivals, trace)
	metrics, retained := scrapeMetrics(client, p.base)
	per := func(after, before uint64) float64 {
		return (float64(after) - float64(before)) / float64(n) / 1024
	}
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric(float64(n)/created.Seconds(), "creates/s")
	b.ReportMetric(float64(percentile(lateness, 0.50))/1e6, "lateness-p50-ms")
	b.ReportMetric(float64(percentile(lateness, 0.99))/1e6, "lateness-p99-ms")
	b.ReportMetric(float64(percentile(arrived, 0.50))/1e6, "arrival-lateness-p50-ms")
	b.ReportMetric(float64(percentile(arrived, 0.99))/1e6, "arrival-lateness-p99-ms")
	b.ReportMetric(per(live+stacks, live0+stacks0), "heap-KiB/analysis")
	b.ReportMetric(per(rss1, rss0), "rss-KiB/analysis")
	b.ReportMetric(retained/float64(n)/1024, "retained-KiB/analysis")
	b.ReportMetric(float64(healthz)/1e6, "healthz-max-ms")
	b.ReportMetric(float64(pause)/1e6, "gc-max-pause-ms")
	b.ReportMetric(float64(cycles), "gc-cycles")
	b.ReportMetric(float64(cycles-cycles0), "gc-cycles-measured")
	measured := window1.measurements - window0.measurements
	if measured > 0 {
		b.ReportMetric((window1.allocated-window0.allocated)/measured, "alloc-B/measurement")
		b.ReportMetric((window1.allocations-window0.allocations)/measured, "allocs/measurement")
	}
	b.ReportMetric(float64(n), "analyses")
	fmt.Printf("%d analyses (interval %s, count %d) created in %s from %d clients; %d measurements after the first, %d of them found at the stub; live heap %d MiB, stacks %d MiB, RSS %d MiB\n",
		n, interval, serveCount, created.Round(time.Millisecond), serveClients, len(lateness), len(arrived), live>>20, stacks>>20, rss1>>20)
	fmt.Printf("while the second measurements fell due: %.0f measurements, %d collections, %.0f MB allocated\n",
		measured, cycles-cycles0, (window1.allocated-window0.allocated)/1e6)
	if metrics != "" {
		fmt.Printf("canaryd_measurement_lateness_seconds: %s\n", metrics)
		if le, ok := bucketAt(metrics, 0.99); ok {
			b.ReportMetric(le*1000, "metric-lateness-p99-le-ms")
		}
	}
}

// bucketAt returns the upper bound of the histogram bucket (its lines as
// scrapeMetrics joins them) that holds the quantile q.
func bucketAt(lines string, q float64) (float64, bool) {
	type bucket struct{ le, count float64 }
	var buckets []bucket
	var total float64
	for _, line := range strings.Split(lines, "; ") {
		name, value, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		if le, ok := strings.CutPrefix(name, `canaryd_measurement_lateness_seconds_bucket{le="`); ok {
			bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
			if err == nil {
				buckets = append(buckets, bucket{bound, v})
			}
		}
		if name == "canaryd_measurement_lateness_seconds_count" {
			total = v
		}
	}
	for _, b := range buckets {
		if total > 0 && b.count >= q*total {
			return b.le, true
		}
	}
	return 0, false
}

// postAnalysis creates an analysis of body and returns its id.
func postAnalysis(client *http.Client, base string, body []byte) (string, error) {
	resp, err := client.Post(base+"/v1/analyses", "application/yaml", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("%s: %s", resp.Status, data)
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return "", err
	}
	return a.ID, nil
}

// probeHealthz asks /healthz every 100 ms for d and returns the longest
// answer.
func probeHealthz(client *http.Client, base string, d time.Duration) time.Duration {
	var worst time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		t := time.Now()
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return time.Duration(math.MaxInt64)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		worst = max(worst, time.Since(t))
	}
	return worst
}

// serveLateness reads every analysis and returns, sorted, how late each
// measurement after the first started against its schedule, and how late
// its query arrived at the stub (of those whose arrival was recorded).
func serveLateness(b *testing.B, client *http.Client, base string, ids []string, interval time.Duration, arrivals map[int64]int64, trace io.Writer) (lateness, arrived []time.Duration) {
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for range serveClients {
		wg.Add(1)
		// Ends when every analysis has been read.
		go func() {
			defer wg.Done()
			var mine, mineArrived []time.Duration
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					break
				}
				a, err := getAnalysis(client, base, ids[i])
				if err != nil {
					b.Error(err)
					break
				}
				for _, r := range a.MetricResults {
					ms := r.Measurements
					for k := 1; k < len(ms); k++ {
						if ms[k-1].FinishedAt == nil || ms[k].StartedAt == nil {
							continue
						}
						due := ms[k-1].FinishedAt.Add(interval)
						mine = append(mine, ms[k].StartedAt.Sub(due))
						arrival := time.Duration(-1000)
						if at, ok := arrivalOf(arrivals, *ms[k].StartedAt); ok {
							arrival = at.Sub(due)
							mineArrived = append(mineArrived, arrival)
						}
						if trace != nil {
							fmt.Fprintf(trace, "late %d %d %d\n", due.UnixMilli(), ms[k].StartedAt.Sub(due).Microseconds(), arrival.Microseconds())
						}
					}
				}
			}
			mu.Lock()
			lateness = append(lateness, mine...)
			arrived = append(arrived, mineArrived...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lateness)
	slices.Sort(arrived)
	return lateness, arrived
}

func getAnalysis(client *http.Client, base, id string) (api.Analysis, error) {
	var a api.Analysis
	resp, err := client.Get(base + "/v1/analyses/" + id)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return a, fmt.Errorf("GET %s: %s: %s", id, resp.Status, data)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// runtimeCounters are what canaryd's /metrics says of the garbage its
// work left: the bytes and objects allocated since it started
// (go_memstats_alloc_bytes_total, go_memstats_mallocs_total), and its
// measurements (canaryd_measurements_total, every phase).
type runtimeCounters struct {
	allocated, allocations, measurements float64
}

// scrapeRuntime reads runtimeCounters from /metrics; zeros when it
// cannot.
func scrapeRuntime(client *http.Client, base string) runtimeCounters {
	var c runtimeCounters
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return c
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, _ := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "go_memstats_alloc_bytes_total":
			c.allocated = v
		case name == "go_memstats_mallocs_total":
			c.allocations = v
		case strings.HasPrefix(name, "canaryd_measurements_total{"):
			c.measurements += v
		}
	}
	return c
}

// scrapeMetrics returns canaryd's own lateness histogram's lines from
// /metrics, and the bytes its ledgers count the analyses held at
// (canaryd_analyses_retained_bytes).
func scrapeMetrics(client *http.Client, base string) (lateness string, retained float64) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "canaryd_measurement_lateness_seconds") {
			lines = append(lines, line)
		}
		if v, ok := strings.CutPrefix(line, "canaryd_analyses_retained_bytes "); ok {
			retained, _ = strconv.ParseFloat(v, 64)
		}
	}
	return strings.Join(lines, "; "), retained
}
