package harness

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/proctest"
)

// canarydModule is the module line of the repository's root go.mod.
const canarydModule = "module github.com/canaryd/canaryd\n"

// Two namespaces of promtest's fixture: with the templates' threshold of
// 99% successful requests, EchoGood passes and EchoBad fails.
const (
	EchoGood = "echo-good"
	EchoBad  = "echo-bad"
)

// readyTimeout bounds canaryd's start.
const readyTimeout = 60 * time.Second

// BaseTemplatesDir is where the Kustomize base keeps the AnalysisTemplates
// it serves, relative to the repository root.
const BaseTemplatesDir = "deploy/kustomize/base/templates"

// build is the canaryd binary shared by the tests of one test binary.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs the tests of a package and removes what they shared: call it
// from TestMain as os.Exit(harness.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	releaseCleanup()
	return code
}

// RepoRoot returns canaryd's repository root: the nearest directory above
// the working directory whose go.mod is canaryd's.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), canarydModule) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("harness: no go.mod starting %q above the working directory", canarydModule)
		}
		dir = parent
	}
}

// BinaryEnv names a prebuilt canaryd, by absolute path, to test instead of
// building one: for a CI job that has built it already, or to test a
// release.
const BinaryEnv = "CANARYD_TEST_BINARY"

// CanarydBinary builds cmd/canaryd from the repository, once per test
// binary, and returns its path; or returns $CANARYD_TEST_BINARY when set.
func CanarydBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(BinaryEnv); bin != "" {
		if !filepath.IsAbs(bin) {
			t.Fatalf("harness: %s=%s: give an absolute path", BinaryEnv, bin)
		}
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("harness: %s: %v", BinaryEnv, err)
		}
		return bin
	}
	root := RepoRoot(t)
	goTool := lookPath(t, "go", "install Go from https://go.dev/dl/ or your distribution")
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "canaryd-test-bin-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "canaryd")
		cmd := exec.Command(goTool, "build", "-o", build.path, "./cmd/canaryd")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/canaryd: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("harness: %v", build.err)
	}
	return build.path
}

// CanarydDir returns a directory holding the binary of CanarydBinary under
// the name canaryd, to put on a recipe's PATH.
func CanarydDir(t testing.TB) string {
	t.Helper()
	bin := CanarydBinary(t)
	if filepath.Base(bin) == "canaryd" {
		return filepath.Dir(bin)
	}
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "canaryd")); err != nil {
		t.Fatalf("harness: %v", err)
	}
	return dir
}

// Canaryd is a running `canaryd serve`.
type Canaryd struct {
	// URL is its address, http://127.0.0.1:PORT.
	URL string
	// Token is the one bearer token it accepts.
	Token string
	proc  *proctest.Process
}

// CanarydOptions configure StartCanaryd.
type CanarydOptions struct {
	// PrometheusURL is the default Prometheus.
	PrometheusURL string
	// Templates is the --templates directory; "" for none.
	Templates string
	// Open starts it without --auth-token-file, as for callers that cannot
	// send a header (Flagger's webhooks); Token is then "".
	Open bool
	// Args are more flags for serve (--webhook-allow, for example).
	Args []string
}

// StartCanaryd starts `canaryd serve` on a free loopback port, with a
// fresh bearer token (--auth-token-file) unless opts.Open, and waits until
// it is ready. It is stopped when the test ends.
func StartCanaryd(t testing.TB, opts CanarydOptions) *Canaryd {
	t.Helper()
	bin := CanarydBinary(t)
	dir := t.TempDir()
	args := []string{"serve",
		"--listen=127.0.0.1:0",
		"--prometheus-url=" + opts.PrometheusURL,
		"--shutdown-grace=2s",
		// Argo's 10 s wait after an Error measurement would make an
		// outage's verdict (consecutiveErrorLimit 4) take 40 s.
		"--error-retry=100ms",
	}
	token := ""
	if !opts.Open {
		token = randomToken(t)
		tokenFile := filepath.Join(dir, "tokens")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatalf("harness: %v", err)
		}
		args = append(args, "--auth-token-file="+tokenFile)
	}
	if opts.Templates != "" {
		args = append(args, "--templates="+opts.Templates)
	}
	args = append(args, opts.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Env = environWithout("CANARYD_")
	logs, w := io.Pipe()
	cmd.Stderr = w
	cmd.Stdout = w
	proc, err := proctest.Start(cmd)
	if err != nil {
		t.Fatalf("harness: starting canaryd: %v", err)
	}
	t.Cleanup(func() {
		proc.Stop()
		_ = w.Close()
	})

	// Reads canaryd's JSON log lines into proc.Output until canaryd exits
	// and the cleanup closes the pipe; hands over the bound address.
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = proc.Output.Write([]byte(line + "\n"))
			var entry struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" && entry.Address != "" {
				select {
				case addr <- entry.Address:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, logs)
	}()

	c := &Canaryd{Token: token, proc: proc}
	select {
	case a := <-addr:
		c.URL = "http://" + a
	case <-proc.Exited():
		t.Fatalf("harness: canaryd exited before listening: %v\n%s", proc.Err(), proc.Output.String())
	case <-time.After(readyTimeout):
		t.Fatalf("harness: canaryd did not log its address within %v:\n%s", readyTimeout, proc.Output.String())
	}
	if err := proc.WaitReady(c.URL+"/readyz", readyTimeout); err != nil {
		t.Fatalf("harness: canaryd: %v\n%s", err, proc.Output.String())
	}
	return c
}

// Logs returns what canaryd has logged so far, for failure messages.
func (c *Canaryd) Logs() string { return c.proc.Output.String() }

// ExampleTemplatesDir holds the templates that the examples add to the
// base's, relative to the repository root.
const ExampleTemplatesDir = "deploy/examples/templates"

// interval matches a metric's interval.
var interval = regexp.MustCompile(`(?m)^(\s+interval:) *\S+ *$`)

// Templates returns a --templates directory holding the AnalysisTemplates
// of the Kustomize base (BaseTemplatesDir) and those the examples add
// (ExampleTemplatesDir), with every metric's interval made 1 s and nothing
// else changed. A gate runs its template to the end, and the recipes'
// tests run many: each takes seconds instead of a minute. The interval
// changes no verdict: the fixture's rates are constant.
func Templates(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	dst := t.TempDir()
	for _, dir := range []string{BaseTemplatesDir, ExampleTemplatesDir} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("harness: no templates in %s (%v)", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("harness: %v", err)
			}
			out := filepath.Join(dst, filepath.Base(f))
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("harness: %s and another templates directory both have %s", dir, filepath.Base(f))
			}
			if err := os.WriteFile(out, interval.ReplaceAll(b, []byte("$1 1s")), 0o600); err != nil {
				t.Fatalf("harness: %v", err)
			}
		}
	}
	return dst
}

// environWithout returns the environment less the variables starting
// with prefix, so that a developer's CANARYD_* settings change no test.
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
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

func randomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("harness: %v", err)
	}
	return hex.EncodeToString(b)
}
