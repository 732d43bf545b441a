package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// serveLogs collects the JSON log lines of a serve under test and hands
// over the bound address from its "listening" line.
type serveLogs struct {
	mu    sync.Mutex
	lines []map[string]any
	raw   strings.Builder
	addr  chan string
}

func newServeLogs() *serveLogs { return &serveLogs{addr: make(chan string, 1)} }

// follow reads log lines from r until it ends. Each line must be JSON.
func (l *serveLogs) follow(t *testing.T, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
		}
		l.mu.Lock()
		l.lines = append(l.lines, entry)
		l.raw.WriteString(line + "\n")
		l.mu.Unlock()
		if entry["msg"] == "listening" {
			if a, ok := entry["address"].(string); ok {
				l.addr <- a
			}
		}
	}
}

func (l *serveLogs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.raw.String()
}

// waitAddress returns the address serve logged, or fails the test.
func (l *serveLogs) waitAddress(t *testing.T, exited <-chan int) string {
	t.Helper()
	select {
	case a := <-l.addr:
		return a
	case code := <-exited:
		t.Fatalf("canaryd serve exited with %d before listening:\n%s", code, l.text())
	case <-time.After(30 * time.Second):
		t.Fatalf("canaryd serve did not log its address:\n%s", l.text())
	}
	return ""
}

// seedSpec is the seed template with a 50 ms interval.
func seedSpec(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/specs/success-rate-args.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(data), "interval: 30s", "interval: 50ms", 1)
}

// foreverSpec measures every 50 ms until it is stopped.
func foreverSpec() string {
	return `metrics:
- name: forever
  interval: 50ms
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: 'sum(rate(istio_requests_total{destination_workload_namespace="echo-good"}[1m]))'
`
}

func postAnalysis(t *testing.T, base, query, body string) (int, api.Analysis) {
	t.Helper()
	status, a, err := tryPostAnalysis(base, query, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, a
}

// tryPostAnalysis is postAnalysis for goroutines other than the test's.
func tryPostAnalysis(base, query, body string) (int, api.Analysis, error) {
	resp, err := http.Post(base+"/v1/analyses"+query, "application/yaml", strings.NewReader(body))
	if err != nil {
		return 0, api.Analysis{}, fmt.Errorf("POST /v1/analyses%s: %w", query, err)
	}
	defer resp.Body.Close()
	var a api.Analysis
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &a); err != nil {
		return resp.StatusCode, a, fmt.Errorf("POST /v1/analyses%s: %d %s", query, resp.StatusCode, data)
	}
	return resp.StatusCode, a, nil
}

// postTemplateGate posts body to the gate of a named template.
func postTemplateGate(t *testing.T, base, name, body string) (int, api.Analysis) {
	t.Helper()
	resp, err := http.Post(base+"/v1/gates/"+name+"?timeout=500ms", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a api.Analysis
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("POST /v1/gates/%s: %d %s", name, resp.StatusCode, data)
	}
	return resp.StatusCode, a
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeInProcess runs `canaryd serve` through run, as main does, on
// 127.0.0.1:0 with its configuration from the environment, serves an
// analysis against a real Prometheus, and stops it by cancelling the
// context, as SIGTERM does.
func TestServeInProcess(t *testing.T) {
	prom := promtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getenv := func(k string) string {
		return map[string]string{
			"CANARYD_LISTEN":         "127.0.0.1:0",
			"CANARYD_PROMETHEUS_URL": prom.URL,
			"CANARYD_SHUTDOWN_GRACE": "200ms",
			"CANARYD_TEMPLATES":      "../../testdata/templates",
		}[k]
	}
	logs, exited, followed := serveInProcess(t, ctx, nil, getenv)
	base := "http://" + logs.waitAddress(t, exited)

	status, a := postAnalysis(t, base, "?wait=true&arg.namespace=echo-bad", seedSpec(t))
	if status != http.StatusOK || a.Phase != api.PhaseFailed {
		t.Errorf("echo-bad: %d %s, want 200 Failed", status, a.Phase)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The templates' metrics are on the service's registry.
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(metrics), "canaryd_templates_loaded 2") {
		t.Errorf("/metrics: %d, want 200 with canaryd_templates_loaded 2", resp.StatusCode)
	}
	// latency-p99 measures once a minute: its gate times out.
	if status, a := postTemplateGate(t, base, "latency-p99", `{"args": {"service": "none"}}`); status != http.StatusServiceUnavailable ||
		a.Phase != api.PhaseError || !strings.HasPrefix(a.Message, "gate timed out") || a.Template != "latency-p99" {
		t.Errorf("gate latency-p99 with ?timeout=500ms: %d %s %q, want 503 Error, gate timed out", status, a.Phase, a.Message)
	}

	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d after a clean shutdown, want 0:\n%s", code, logs.text())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("canaryd serve did not stop within 10s of its context ending")
	}
	<-followed
	for _, want := range []string{`"msg":"draining: readiness off, no new analyses"`, `"msg":"stopped"`, `"msg":"analysis finished"`} {
		if !strings.Contains(logs.text(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stderr strings.Builder
	start := time.Now()
	code := run(context.Background(), []string{"serve", "--listen", ln.Addr().String()}, func(string) string { return "" }, nil, io.Discard, &stderr)
	if code != exitServeFailed {
		t.Errorf("exit code %d on a busy port, want %d", code, exitServeFailed)
	}
	if !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("stderr does not name the busy port:\n%s", stderr.String())
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("a busy port took %s to fail", time.Since(start))
	}
}

func TestServeBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"every problem at once", []string{"serve", "--listen", "x", "--retention", "0s"}, map[string]string{"CANARYD_MAX_ANALYSES": "-1"},
			[]string{`--listen: "x" is not host:port`, "--retention: must be positive", "--max-analyses: must be at least 1"}},
		{"a datasource the provider refuses", []string{"serve", "--prometheus-url", "http://a:9090", "--prometheus-url", "http://A:9090/"}, nil,
			[]string{"same URL"}},
	} {
		var stderr strings.Builder
		code := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, nil, io.Discard, &stderr)
		if code != exitUsage {
			t.Errorf("%s: exit code %d, want %d", tc.name, code, exitUsage)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, w, stderr.String())
			}
		}
	}
}

func TestServeHelp(t *testing.T) {
	var stderr strings.Builder
	if code := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, nil, io.Discard, &stderr); code != 0 {
		t.Errorf("serve -h: exit code %d, want 0", code)
	}
	if !strings.Contains(stderr.String(), "--shutdown-grace") && !strings.Contains(stderr.String(), "-shutdown-grace") {
		t.Errorf("serve -h does not list the flags:\n%s", stderr.String())
	}
}

// startProcess starts the built binary with args (and env added to the
// environment, debug logs on), following its logs. The process is killed at
// the end of the test if it is still running; exited reports its exit code.
func startProcess(t *testing.T, args []string, env ...string) (cmd *exec.Cmd, logs *serveLogs, exited <-chan int) {
	t.Helper()
	cmd = exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), "CANARYD_LOG_LEVEL=debug"), env...)
	logs, exited = followProcess(t, cmd)
	return cmd, logs, exited
}

// followProcess starts cmd, following its standard error as logs. The
// process is killed at the end of the test if it is still running;
// exited reports its exit code.
func followProcess(t *testing.T, cmd *exec.Cmd) (logs *serveLogs, exited <-chan int) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	logs = newServeLogs()
	// Ends when the process exits and its stderr closes; then reports the
	// exit code. A line too long for the scanner ends follow early; the
	// rest is drained so that the process never blocks on a full pipe.
	go func() {
		logs.follow(t, stderr)
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		done <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return logs, done
}

// serveInProcess runs `canaryd serve` with args through run, as main does,
// with getenv as its environment, until ctx is cancelled, following its
// logs. exited reports run's exit code; followed is closed once the logs
// have been read to their end.
func serveInProcess(t *testing.T, ctx context.Context, args []string, getenv func(string) string) (logs *serveLogs, exited <-chan int, followed <-chan struct{}) {
	t.Helper()
	pr, pw := io.Pipe()
	logs = newServeLogs()
	read := make(chan struct{})
	// Ends when pw is closed after run returns.
	go func() { defer close(read); logs.follow(t, pr) }()
	code := make(chan int, 1)
	// Ends when ctx is cancelled and the drain is over.
	go func() {
		c := run(ctx, append([]string{"serve"}, args...), getenv, strings.NewReader(""), io.Discard, pw)
		pw.Close()
		code <- c
	}()
	return logs, code, read
}
