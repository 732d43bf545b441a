package recipes

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/test/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// inCluster is canaryd's address in the examples: the Service of the
// example overlay.
const inCluster = "http://canaryd.canary.svc:8080"

// exampleNamespace is the namespace the examples judge; the tests judge
// the fixture's echo-good and echo-bad instead.
const exampleNamespace = "echo"

// scriptTimeout bounds one run of a recipe's shell: a gate on the
// shortened templates takes a few seconds.
const scriptTimeout = 2 * time.Minute

// examplesDir returns deploy/examples.
func examplesDir(t *testing.T) string {
	return filepath.Join(harness.RepoRoot(t), "deploy", "examples")
}

func readExample(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// world is what a recipe runs against: a Prometheus with the fixture, a
// canaryd with a token serving the base's and the examples' templates, and
// an open one (no token) serving the same.
type world struct {
	prom   *promtest.Server
	authed *harness.Canaryd
	open   *harness.Canaryd
}

func newWorld(t *testing.T) world {
	t.Helper()
	prom := promtest.Start(t)
	templates := harness.Templates(t)
	return world{
		prom:   prom,
		authed: harness.StartCanaryd(t, harness.CanarydOptions{PrometheusURL: prom.URL, Templates: templates}),
		open:   harness.StartCanaryd(t, harness.CanarydOptions{PrometheusURL: prom.URL, Templates: templates, Open: true}),
	}
}

// logs returns both canaryds' logs, for failure messages.
func (w world) logs() string {
	return "canaryd (token) log:\n" + w.authed.Logs() + "canaryd (open) log:\n" + w.open.Logs()
}

// needTools fails the test when a program the recipes' shell uses is
// missing, with how to install it.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("%s not found on PATH; install it with: apt-get install -y %s", n, n)
		}
	}
}

// result is how a recipe's shell ended.
type result struct {
	code   int
	output string
}

// runShell runs script with the given interpreter and arguments (the
// script's path is appended), in dir, with exactly env: a recipe sees the
// variables its tool would set and PATH, nothing of the test's own.
func runShell(t *testing.T, shell []string, script, dir string, env map[string]string) result {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(f, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	args := append(append([]string(nil), shell[1:]...), f)
	cmd := exec.CommandContext(ctx, shell[0], args...)
	cmd.Dir = dir
	cmd.Env = []string{}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("script did not finish within %v:\n%s\noutput:\n%s", scriptTimeout, script, out.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return result{0, out.String()}
	case errors.As(err, &exit):
		return result{exit.ExitCode(), out.String()}
	default:
		t.Fatalf("running script: %v", err)
		return result{}
	}
}

// basePath is the PATH a recipe's shell gets: the system's, with dirs
// first.
func basePath(dirs ...string) string {
	return strings.Join(append(dirs, "/usr/local/bin", "/usr/bin", "/bin"), string(os.PathListSeparator))
}

// substitute replaces every expression that re matches in s by its value
// in values, keyed by the expression's first group, and fails the test on
// an expression it has no value for: a recipe may use only what the test
// knows the tool provides.
func substitute(t *testing.T, re *regexp.Regexp, s string, values map[string]string) string {
	t.Helper()
	return re.ReplaceAllStringFunc(s, func(m string) string {
		key := re.FindStringSubmatch(m)[1]
		v, ok := values[key]
		if !ok {
			t.Fatalf("no value for %s (known: %v)", m, keys(values))
		}
		return v
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// inClusterToTest points an example's canaryd URL at the test's canaryd.
func inClusterToTest(t *testing.T, url string, c *harness.Canaryd) string {
	t.Helper()
	if !strings.HasPrefix(url, inCluster+"/") {
		t.Fatalf("url %q does not start with %s/", url, inCluster)
	}
	return c.URL + strings.TrimPrefix(url, inCluster)
}
