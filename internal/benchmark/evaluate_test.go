package benchmark

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/promtest"
)

// BenchmarkEvaluateVsDirect measures what canaryd adds to the query it
// wraps: POST /v1/evaluate of the seed's success-rate metric against a real
// Prometheus, beside the same query sent straight to Prometheus, in
// interleaved pairs (alternating which goes first) so that both see the same
// conditions. It reports p50 and p99 of each and their ratios (targets:
// p50 ratio ≤ 1.10, p99 ratio ≤ 1.25). CANARYD_BENCH_PAIRS sets the number
// of pairs (2,000).
func BenchmarkEvaluateVsDirect(b *testing.B) {
	pairs := 2000
	if s := os.Getenv("CANARYD_BENCH_PAIRS"); s != "" {
		pairs, _ = strconv.Atoi(s)
	}
	prom := promtest.Start(b)
	base := startServe(b, prom.URL)
	query := promtest.SeedQuery("echo-good")
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

	evaluate := func() time.Duration {
		start := time.Now()
		resp, err := client.Post(base+"/v1/evaluate", "application/json", strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"phase":"Successful"`) {
			b.Fatalf("evaluate: %d %s", resp.StatusCode, got)
		}
		return d
	}
	direct := func() time.Duration {
		form := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)}}
		start := time.Now()
		resp, err := client.PostForm(prom.URL+"/api/v1/query", form)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"0.995"`) {
			b.Fatalf("direct: %d %s", resp.StatusCode, got)
		}
		return d
	}
	// Warm both paths: connections, compiled conditions, Prometheus' caches.
	for range 50 {
		evaluate()
		direct()
	}
	for b.Loop() {
		ev := make([]time.Duration, 0, pairs)
		dq := make([]time.Duration, 0, pairs)
		for i := range pairs {
			if i%2 == 0 {
				ev = append(ev, evaluate())
				dq = append(dq, direct())
			} else {
				dq = append(dq, direct())
				ev = append(ev, evaluate())
			}
		}
		sortDurations(ev)
		sortDurations(dq)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		b.ReportMetric(ms(percentile(ev, 0.50)), "evaluate-p50-ms")
		b.ReportMetric(ms(percentile(ev, 0.99)), "evaluate-p99-ms")
		b.ReportMetric(ms(percentile(dq, 0.50)), "direct-p50-ms")
		b.ReportMetric(ms(percentile(dq, 0.99)), "direct-p99-ms")
		b.ReportMetric(float64(percentile(ev, 0.50))/float64(percentile(dq, 0.50)), "p50-ratio")
		b.ReportMetric(float64(percentile(ev, 0.99))/float64(percentile(dq, 0.99)), "p99-ratio")
	}
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// startServe builds canaryd, starts `canaryd serve` on a free loopback port
// against prometheusURL, and returns its base URL.
func startServe(tb testing.TB, prometheusURL string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "canaryd")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/canaryd").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--prometheus-url", prometheusURL)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	// Ends when the process exits and closes its stderr.
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Address
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		tb.Fatal("canaryd serve did not report its address")
		return ""
	}
}
