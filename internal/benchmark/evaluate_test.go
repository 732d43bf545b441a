package benchmark

import (
	"bufio"
	"encoding/json"
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
// sets the number of rounds (2,000).
//
// Beside the times, it reports the CPU that canaryd serve and the gateway
// each spent a round (evaluate-cpu-us, proxy-cpu-us: their processes'
// user and system time over the timed rounds, from /proc, in clock ticks
// of 10 ms), which the load of a shared machine stretches less than it
// stretches the times: on two busy cores a microsecond of CPU is several
// of wall time.
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
		for i := range pairs {
			for k := range legs {
				leg := (i + k) % len(legs)
				took[leg] = append(took[leg], legs[leg]())
			}
		}
		serveCPU, proxyCPU = processCPU(servePid)-serveCPU, processCPU(proxyPid)-proxyCPU
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
	}
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
