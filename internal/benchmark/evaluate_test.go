package benchmark

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/proctest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// BenchmarkEvaluateVsDirect measures what canaryd adds to the query it
// wraps: POST /v1/evaluate of the seed's success-rate metric against a real
// Prometheus, beside the same query sent straight to Prometheus, in
// interleaved rounds (rotating which goes first) so that all see the same
// conditions. It reports p50 and p99 of each and their ratios (targets:
// p50 ratio ≤ 1.10, p99 ratio ≤ 1.25), and canaryd's beside the do-nothing
// gateway's below (gateway-p50-ratio, target ≤ 1.10). CANARYD_BENCH_PAIRS
// sets the number of rounds (2,000), CANARYD_BENCH_SERVE_GOMAXPROCS the
// GOMAXPROCS of canaryd serve alone.
//
// Beside the times, it reports the CPU that canaryd serve and the gateway
// each spent a round (evaluate-cpu-us, proxy-cpu-us: their processes'
// user and system time over the timed rounds, from /proc, in clock ticks
// of 10 ms), which the load of a shared machine stretches less than it
// stretches the times: on two busy cores a microsecond of CPU is several
// of wall time. And what each spent a round in system calls and wake-ups
// (evaluate-writes/round, -reads/round, -switches/round, and the proxy's:
// procCalls), and the load average the run ended at (load-avg-1m), to
// which the ratios are most sensitive.
//
// A third leg is the floor of any gateway: a process that reads the
// request, sends the same query with Go's client and copies the answer
// back, parsing, checking and logging nothing (serveProxy). What it adds
// over the direct query is the extra process and loopback hop, which
// canaryd cannot avoid either; what canaryd adds over it is its own work.
//
// Two queries are measured: the seed's, which a small Prometheus answers in
// under half a millisecond on loopback (so the hop is most of the ratio),
// and the same success rate averaged over the last hour at one-second
// steps (a subquery), which costs Prometheus a few milliseconds, as queries
// over real traffic do, and shows what canaryd adds as a share of a query
// of that cost.
func BenchmarkEvaluateVsDirect(b *testing.B) {
	prom := promtest.Start(b)
	base, servePid := startServe(b, prom.URL)
	seed := promtest.SeedQuery("echo-good")
	for _, q := range []struct{ name, query string }{
		{"query=seed", seed},
		{"query=seed-hour-average", "avg_over_time((" + seed + ")[1h:1s])"},
	} {
		b.Run(q.name, func(b *testing.B) { evaluateVsDirect(b, prom.URL, base, servePid, q.query) })
	}
}

func evaluateVsDirect(b *testing.B, promURL, base string, servePid int, query string) {
	pairs := 2000
	if s := os.Getenv("CANARYD_BENCH_PAIRS"); s != "" {
		pairs, _ = strconv.Atoi(s)
	}
	prom := struct{ URL string }{promURL}
	proxyAddr := freeAddr(b)
	proxyPid := startHelper(b, proxyAddr, proxyEnv, proxyAddr+" "+prom.URL, proxyQueryEnv+"="+query)
	body, _ := json.Marshal(map[string]any{"metrics": []any{map[string]any{
		"name":             "non-5xx-rate",
		"successCondition": "result[0] >= 0.99",
		"provider":         map[string]any{"prometheus": map[string]any{"query": query}},
	}}})
	// Neither side asks for gzip: canaryd asks Prometheus for instant
	// queries uncompressed (compressing a few hundred bytes costs more
	// than it saves), and the direct query must be sent the same way, or
	// the comparison would measure compression rather than canaryd.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}

	post := func(name, url, contentType, body, want string) time.Duration {
		start := time.Now()
		resp, err := client.Post(url, contentType, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), want) {
			b.Fatalf("%s: %d %s", name, resp.StatusCode, got)
		}
		return d
	}
	queryForm := func() string {
		return url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	}
	legs := []func() time.Duration{
		func() time.Duration {
			return post("evaluate", base+"/v1/evaluate", "application/json", string(body), `"phase":"Successful"`)
		},
		func() time.Duration {
			return post("direct", prom.URL+"/api/v1/query", "application/x-www-form-urlencoded", queryForm(), `"status":"success"`)
		},
		func() time.Duration {
			return post("proxy", "http://"+proxyAddr+"/v1/evaluate", "application/json", string(body), `"status":"success"`)
		},
	}
	// Warm every path: connections, compiled conditions, Prometheus' caches.
	for range 50 {
		for _, leg := range legs {
			leg()
		}
	}
	for b.Loop() {
		took := make([][]time.Duration, len(legs))
		serveCPU, proxyCPU := processCPU(servePid), processCPU(proxyPid)
		serveCalls, proxyCalls := processCalls(servePid), processCalls(proxyPid)
		for i := range pairs {
			for k := range legs {
				leg := (i + k) % len(legs)
				took[leg] = append(took[leg], legs[leg]())
			}
		}
		serveCPU, proxyCPU = processCPU(servePid)-serveCPU, processCPU(proxyPid)-proxyCPU
		serveCalls, proxyCalls = processCalls(servePid).minus(serveCalls), processCalls(proxyPid).minus(proxyCalls)
		b.ReportMetric(loadAverage(), "load-avg-1m")
		for _, t := range took {
			sortDurations(t)
		}
		ev, dq, px := took[0], took[1], took[2]
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		ratio := func(a, b []time.Duration, p float64) float64 {
			return float64(percentile(a, p)) / float64(percentile(b, p))
		}
		b.ReportMetric(ms(percentile(ev, 0.50)), "evaluate-p50-ms")
		b.ReportMetric(ms(percentile(ev, 0.99)), "evaluate-p99-ms")
		b.ReportMetric(ms(percentile(dq, 0.50)), "direct-p50-ms")
		b.ReportMetric(ms(percentile(dq, 0.99)), "direct-p99-ms")
		b.ReportMetric(ms(percentile(px, 0.50)), "proxy-p50-ms")
		b.ReportMetric(ms(percentile(px, 0.99)), "proxy-p99-ms")
		b.ReportMetric(ratio(ev, dq, 0.50), "p50-ratio")
		b.ReportMetric(ratio(ev, dq, 0.99), "p99-ratio")
		b.ReportMetric(ratio(px, dq, 0.50), "proxy-p50-ratio")
		b.ReportMetric(ratio(px, dq, 0.99), "proxy-p99-ratio")
		// canaryd beside the do-nothing gateway, measured side by side
		// (target: p50 ≤ 1.10).
		b.ReportMetric(ratio(ev, px, 0.50), "gateway-p50-ratio")
		b.ReportMetric(ratio(ev, px, 0.99), "gateway-p99-ratio")
		perRound := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(pairs) }
		b.ReportMetric(perRound(serveCPU), "evaluate-cpu-us")
		b.ReportMetric(perRound(proxyCPU), "proxy-cpu-us")
		for _, c := range []struct {
			name  string
			calls procCalls
		}{{"evaluate", serveCalls}, {"proxy", proxyCalls}} {
			b.ReportMetric(float64(c.calls.writes)/float64(pairs), c.name+"-writes/round")
			b.ReportMetric(float64(c.calls.reads)/float64(pairs), c.name+"-reads/round")
			b.ReportMetric(float64(c.calls.switches)/float64(pairs), c.name+"-switches/round")
		}
	}
}

// procCalls are a process' read and write system calls (/proc/PID/io's
// syscr and syscw: reads and writes of files, pipes, sockets and
// eventfds) and its threads' context switches, voluntary or not (each
// wait for I/O, a lock or a futex, or a preemption): what its wake-ups
// cost is counted there rather than in its CPU time.
type procCalls struct{ reads, writes, switches int64 }

func (c procCalls) minus(d procCalls) procCalls {
	return procCalls{c.reads - d.reads, c.writes - d.writes, c.switches - d.switches}
}

// processCalls reads pid's procCalls so far; zero where /proc has none.
func processCalls(pid int) procCalls {
	var c procCalls
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		c.reads, c.writes = procField(string(data), "syscr:"), procField(string(data), "syscw:")
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name())); err == nil {
			c.switches += procField(string(data), "voluntary_ctxt_switches:") + procField(string(data), "nonvoluntary_ctxt_switches:")
		}
	}
	return c
}

// procField is the number after name at the start of a line of text.
func procField(text, name string) int64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// loadAverage is the machine's load average over the last minute, which
// the ratios above depend on: on a busy machine the two processes wait
// for the cores, and the gateway's fewer wake-ups wait less.
func loadAverage() float64 {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// proxyHandler is the floor of a gateway to prom: it reads the request,
// sends query to prom as an instant query now, uncompressed, as canaryd
// does, and copies the answer back, status and body.
func proxyHandler(prom, query string) http.Handler {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		form := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)}}
		resp, err := client.PostForm(prom+"/api/v1/query", form)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// startServe builds canaryd, starts `canaryd serve` on a free loopback port
// against prometheusURL, and returns its base URL and process id.
func startServe(tb testing.TB, prometheusURL string) (string, int) {
	tb.Helper()
	cmd := exec.Command(proctest.Build(tb, "../../cmd/canaryd"), "serve", "--listen", "127.0.0.1:0", "--prometheus-url", prometheusURL)
	// CANARYD_BENCH_SERVE_GOMAXPROCS runs canaryd serve, and it alone,
	// with that GOMAXPROCS: what Go's scheduler spends spreading a round's
	// goroutines over the cores shows beside the gateway's.
	if p := os.Getenv("CANARYD_BENCH_SERVE_GOMAXPROCS"); p != "" {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+p)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	// Ends when the process exits and closes its stderr. Past the address,
	// the log is read and dropped unparsed: decoding each round's lines
	// would take the benchmark's CPU while it times the rounds.
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Address
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return "http://" + a, cmd.Process.Pid
	case <-time.After(30 * time.Second):
		tb.Fatal("canaryd serve did not report its address")
		return "", 0
	}
}
