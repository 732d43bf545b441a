package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// installPrometheus is what a machine without Prometheus needs.
const installPrometheus = "install it with: apt-get install -y prometheus"

// readyTimeout bounds the start of a child process, Prometheus or canaryd.
const readyTimeout = 60 * time.Second

// bindAttempts bounds the retries when another process takes the free port
// found for a child between the finding and its bind.
const bindAttempts = 5

// Prometheus is a running Prometheus holding the fixture's data.
type Prometheus struct {
	// URL is its address, http://127.0.0.1:PORT.
	URL  string
	proc *process
}

// StartPrometheus backfills the fixture (EchoGood, EchoBad) with promtool
// and starts Prometheus on a free loopback port. It is stopped when the
// test ends, or earlier by Stop.
func StartPrometheus(t testing.TB) *Prometheus {
	t.Helper()
	prometheus := lookPath(t, "prometheus", installPrometheus)
	promtool := lookPath(t, "promtool", installPrometheus)

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	om := filepath.Join(dir, "fixture.om")
	if err := os.WriteFile(om, []byte(fixture(time.Now())), 0o600); err != nil {
		t.Fatalf("harness: %v", err)
	}
	// Blocks must exist before Prometheus opens its storage.
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		t.Fatalf("harness: promtool backfill: %v\n%s", err, out)
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global:\n  scrape_interval: 15s\n"), 0o600); err != nil {
		t.Fatalf("harness: %v", err)
	}

	var lastErr error
	for range bindAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("harness: finding a free port: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		proc, err := start(exec.Command(prometheus,
			"--config.file="+config,
			"--storage.tsdb.path="+data,
			"--web.listen-address="+addr,
			"--log.level=warn",
		))
		if err != nil {
			t.Fatalf("harness: starting prometheus: %v", err)
		}
		p := &Prometheus{URL: "http://" + addr, proc: proc}
		t.Cleanup(p.proc.stop)
		lastErr = waitReady(proc, p.URL+"/-/ready")
		if lastErr == nil {
			return p
		}
		proc.stop()
		if !strings.Contains(proc.output.String(), "address already in use") {
			break
		}
	}
	t.Fatalf("harness: prometheus did not become ready: %v", lastErr)
	return nil
}

// Stop stops Prometheus now: what a Prometheus outage looks like to
// canaryd, a refused connection.
func (p *Prometheus) Stop() { p.proc.stop() }

// waitReady polls url until it answers 200, the process exits, or
// readyTimeout passes.
func waitReady(proc *process, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := proc.exitErr(); !errors.Is(err, errRunning) {
			return fmt.Errorf("%v before it was ready:\n%s", err, proc.output.String())
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v:\n%s", url, readyTimeout, proc.output.String())
		case <-tick.C:
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lookPath finds a program or fails the test with how to install it.
func lookPath(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("harness: %s not found on PATH; %s", name, install)
	}
	return path
}
