package promtest

import (
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"
)

// installHint is the exact command that provides both binaries (Debian's
// prometheus package ships promtool too).
const installHint = "apt-get install -y prometheus"

// readyTimeout bounds Prometheus' start-up.
const readyTimeout = 60 * time.Second

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
	// Now is the moment the default fixture was generated around (the
	// start of Start); queries "now" have data for two hours either side.
	Now time.Time

	proc *process
}

// Stop stops Prometheus now, before the test ends: what an outage looks
// like to a client, a refused connection. The test's cleanup does it
// otherwise; stopping twice is harmless.
func (s *Server) Stop() { s.proc.stop() }

// Config is everything Start can be told.
type Config struct {
	// Fixtures are OpenMetrics texts to backfill. None means Fixture(now).
	// A missing final "# EOF" is added.
	Fixtures []string
	// ExtraConfig is YAML appended to Prometheus' configuration file, after
	// its global section: remote_read, for example, to make queries carry
	// warnings.
	ExtraConfig string
	// Flags are extra command-line flags for prometheus.
	Flags []string
}

// Start backfills the fixtures (none: the generated default around now)
// and starts Prometheus on them. It fails the test, never skips it, when
// prometheus or promtool is missing.
func Start(t testing.TB, fixtures ...string) *Server {
	t.Helper()
	return StartConfig(t, Config{Fixtures: fixtures})
}

// StartConfig is Start with the rest of the configuration.
func StartConfig(t testing.TB, cfg Config) *Server {
	t.Helper()
	prometheus := lookPath(t, "prometheus")
	promtool := lookPath(t, "promtool")

	now := time.Now()
	fixtures := cfg.Fixtures
	if len(fixtures) == 0 {
		fixtures = []string{Fixture(now)}
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for i, f := range fixtures {
		if !strings.HasSuffix(strings.TrimRight(f, "\n"), "# EOF") {
			f = strings.TrimRight(f, "\n") + "\n# EOF\n"
		}
		path := filepath.Join(dir, fmt.Sprintf("fixture-%d.om", i))
		if err := os.WriteFile(path, []byte(f), 0o600); err != nil {
			t.Fatalf("promtest: %v", err)
		}
		out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", path, data).CombinedOutput()
		if err != nil {
			t.Fatalf("promtest: promtool tsdb create-blocks-from openmetrics (fixture %d): %v\n%s", i, err, out)
		}
	}

	configFile := filepath.Join(dir, "prometheus.yml")
	config := "global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n" + cfg.ExtraConfig
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatalf("promtest: %v", err)
	}

	// The port is found by binding :0 and letting go; another process may
	// take it before Prometheus does, so a bind failure is retried.
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("promtest: finding a free port: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		args := append([]string{
			"--config.file=" + configFile,
			"--storage.tsdb.path=" + data,
			"--web.listen-address=" + addr,
			// Retention counts back from the newest block, not from now: a
			// fixture of last year next to today's data must not be deleted.
			"--storage.tsdb.retention.time=100y",
			// Prometheus' default, stated because instant queries depend on it.
			"--query.lookback-delta=5m",
		}, cfg.Flags...)
		p, err := startProcess(prometheus, args)
		if err != nil {
			t.Fatalf("promtest: starting prometheus: %v", err)
		}
		url := "http://" + addr
		err = p.waitReady(url)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("promtest: prometheus log:\n%s", p.log.String())
				}
			})
			return &Server{URL: url, Now: now, proc: p}
		}
		p.stop()
		lastLog = p.log.String()
		if !strings.Contains(lastLog, "address already in use") {
			t.Fatalf("promtest: prometheus did not become ready: %v\n%s", err, lastLog)
		}
	}
	t.Fatalf("promtest: prometheus could not bind a port:\n%s", lastLog)
	return nil
}

func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("promtest: %s not found on PATH (%v); integration tests need a real Prometheus, install it with: %s", name, err, installHint)
	}
	return path
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a running prometheus in its own process group.
type process struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done is closed
	once sync.Once     // stop's
}

func startProcess(path string, args []string) (*process, error) {
	p := &process{log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	// Ends when the process exits, which stop guarantees.
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) waitReady(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("prometheus exited: %v", p.err)
		case <-ctx.Done():
			return errors.New("not ready after " + readyTimeout.String())
		case <-tick.C:
		}
	}
}

// stop ends the whole process group: SIGTERM, then SIGKILL after a grace
// period. Only the first call does anything.
func (p *process) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
		// Anything else left in the group (there should be nothing).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// syncBuffer collects the process' output; the process writes while the
// test may read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
