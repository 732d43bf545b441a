package promtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/proctest"
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

	proc *proctest.Process
}

// Stop stops Prometheus now, before the test ends: what an outage looks
// like to a client, a refused connection. The test's cleanup does it
// otherwise; stopping twice is harmless.
func (s *Server) Stop() { s.proc.Stop() }

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
		port, err := proctest.FreePort()
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
		p, err := proctest.Start(exec.Command(prometheus, args...))
		if err != nil {
			t.Fatalf("promtest: starting prometheus: %v", err)
		}
		url := "http://" + addr
		err = p.WaitReady(url+"/-/ready", readyTimeout)
		if err == nil {
			t.Cleanup(func() {
				p.Stop()
				if t.Failed() {
					t.Logf("promtest: prometheus log:\n%s", p.Output.String())
				}
			})
			return &Server{URL: url, Now: now, proc: p}
		}
		p.Stop()
		lastLog = p.Output.String()
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
