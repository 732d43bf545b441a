package docs

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/test/internal/harness"
)

// world is what the examples run against: canaryd built from the tree,
// serving the demo's templates in front of a real Prometheus that holds the
// demo's data.
type world struct {
	root  string
	bin   string // a directory holding canaryd, for PATH
	tools string // a directory holding the examples' curl, for PATH
	shim  string // a directory holding serveShim as canaryd, for serve blocks
	prom  string // Prometheus' URL
	// datadog stands for Datadog's API (datadogSite in the examples):
	// it answers every query with one recorded answer.
	datadog string
	// cloudWatch stands for CloudWatch (localStack in the examples).
	cloudWatch string
	// influxdb and nerdGraph stand for InfluxDB and NerdGraph
	// (influxdbAddress and nerdGraphURL in the examples).
	influxdb, nerdGraph string
	base                string // canaryd serve's URL
	// releases stands for canaryd's GitHub releases: it serves make
	// dist's files as harness.ReleasesURL/download/VERSION/FILE.
	releases string
	serve    *harness.Canaryd
	// secret and delivery: a signed webhook delivery, and the secret
	// that signed it, for the examples that verify one.
	secret   string
	delivery delivery
}

// scratchFiles are the files the examples name that the repository does not
// hold, written into each example's scratch directory.
var scratchFiles = map[string]string{
	// A template with three problems (pipelines.md, canaryd validate).
	"template.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: broken
spec:
  metrics:
    - name: success-rate
      count: 3
      failureLimt: 1
      successCondition: result[0] >=
      provider:
        prometheus:
          query: vector(1)
`,
	// A document to post (webhooks.md).
	"analysis.yaml": `metrics:
  - name: up
    successCondition: result[0] == 1
    provider:
      prometheus:
        query: vector(1)
`,
	// The pipeline's copy of the seed template (pipelines.md, GitLab CI).
	".canaryd/success-rate.yaml": "@testdata/specs/success-rate-args.yaml",
	// An Argo document using canaryd's judge (judge.md).
	"latency.yaml": `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: latency
spec:
  metrics:
    - name: latency-vs-stable
      provider:
        judge:
          canary: vector(1)
          baseline: vector(1)
          lookback: 1h
          step: 1m
`,
}

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

func startWorld(t *testing.T) *world {
	t.Helper()
	w := &world{root: repoRoot(t), bin: harness.CanarydDir(t), tools: t.TempDir()}
	// curl as the examples run it: an HTTP error fails the command, as
	// with --fail-with-body, so that an example cannot pass on a 4xx
	// (an example that says --fail or -f, as a download does, keeps it:
	// curl takes one of the two).
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("the examples need curl: %v", err)
	}
	script := "#!/bin/sh\nfor a in \"$@\"; do\n\tcase \"$a\" in --fail | --fail-with-body | -f* | -[!-]*f*) exec " + curl + " \"$@\" ;; esac\ndone\n" +
		"exec " + curl + " --fail-with-body \"$@\"\n"
	if err := os.WriteFile(filepath.Join(w.tools, "curl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w.shim = t.TempDir()
	if err := os.WriteFile(filepath.Join(w.shim, "canaryd"), []byte(serveShim), 0o755); err != nil {
		t.Fatal(err)
	}
	w.prom = promtest.Start(t).URL
	w.datadog = startDatadog(t)
	w.cloudWatch = startCloudWatch(t)
	w.influxdb, w.nerdGraph = startInfluxDB(t), startNerdGraph(t)
	// README's Install and the release pages download a release.
	w.releases = harness.ServeRelease(t)

	// A receiver of webhooks, for the examples that verify a delivery.
	deliveries := make(chan delivery, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case deliveries <- delivery{id: r.Header.Get("webhook-id"), ts: r.Header.Get("webhook-timestamp"), sig: r.Header.Get("webhook-signature"), body: body}:
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	w.secret = "whsec_" + base64.StdEncoding.EncodeToString(key) + "\n"
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, []byte(w.secret), 0o600); err != nil {
		t.Fatal(err)
	}

	w.serve = harness.StartCanaryd(t, harness.CanarydOptions{
		PrometheusURL: w.prom,
		Templates:     filepath.Join(w.root, "testdata", "templates"),
		Open:          true,
		Args: []string{
			// The destinations of docs/webhooks.md's examples (never
			// reached: example.com's hosts do not answer webhooks).
			"--webhook-allow=https://hooks.example.com/ci",
			"--webhook-allow=" + receiver.URL + "/",
			"--webhook-secret-file=" + secretFile,
		},
	})
	w.base = w.serve.URL

	resp, err := http.Post(w.base+"/v1/analyses?webhook="+url.QueryEscape(receiver.URL+"/delivery"),
		"application/yaml", strings.NewReader(scratchFiles["analysis.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("starting an analysis with a webhook: %s\n%s", resp.Status, w.logs())
	}
	select {
	case w.delivery = <-deliveries:
	case <-time.After(30 * time.Second):
		t.Fatalf("no webhook delivery within 30 s:\n%s", w.logs())
	}
	return w
}

// delivery is a webhook request as its receiver got it.
type delivery struct {
	id, ts, sig string
	body        []byte
}

func (w *world) logs() string { return w.serve.Logs() }

// scratch makes a directory that holds the repository's top-level entries
// (as symbolic links) and scratchFiles, for one example to run in: what it
// writes (result.json, tokens) stays out of the tree.
func (w *world) scratch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(w.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(w.root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range scratchFiles {
		if from, ok := strings.CutPrefix(content, "@"); ok {
			b, err := os.ReadFile(filepath.Join(w.root, from))
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A delivery to verify, as webhooks.md's examples take it.
	for name, content := range map[string][]byte{"webhook-secret": []byte(w.secret), "body.json": w.delivery.body} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// templates/ as canaryd validate's example names it.
	if err := os.Symlink(filepath.Join(w.root, "testdata", "templates"), filepath.Join(dir, "templates")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// env is an example's environment: canaryd on PATH, and the addresses a
// pipeline would have in its variables.
func (w *world) env() []string {
	return append(environ(),
		"PATH="+strings.Join([]string{w.bin, w.tools, os.Getenv("PATH")}, string(os.PathListSeparator)),
		"BASE="+w.base,
		"CANARYD_URL="+w.base,
		"CANARYD_TOKEN=not-needed-here",
		"PROMETHEUS_URL="+w.prom,
		// A delivery's headers, as webhooks.md's verification takes them.
		"id="+w.delivery.id, "ts="+w.delivery.ts, "sig="+w.delivery.sig,
	)
}

// substitute replaces the demo's and the recipes' addresses in an example
// with the test's.
func (w *world) substitute(s string) string {
	return strings.NewReplacer(
		"http://127.0.0.1:18080", w.base,
		"http://localhost:8080", w.base,
		"http://canaryd.canary.svc:8080", w.base,
		"http://canaryd:8080", w.base,
		"http://127.0.0.1:19090", w.prom,
		datadogSite, w.datadog,
		localStack, w.cloudWatch,
		influxdbAddress, w.influxdb,
		nerdGraphURL, w.nerdGraph,
		"http://localhost:9090", w.prom,
		harness.ReleasesURL, w.releases,
	).Replace(s)
}

// environ is the test's environment without canaryd's configuration.
func environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CANARYD_") && !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+os.Getenv("PATH"))
}

// datadogSite is the Datadog site the examples name (docs/providers/
// datadog.md); the test's stand-in takes its place.
const datadogSite = "https://api.datadoghq.eu"

// startDatadog starts a stand-in for Datadog's metrics query API: it
// answers a query that sends both keys with an error rate of 0.2%, as v1
// and as v2 answer, and anything else with Datadog's 403.
func startDatadog(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("DD-API-KEY") == "" || r.Header.Get("DD-APPLICATION-KEY") == "":
			rw.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(rw, `{"errors": ["Forbidden"]}`)
		case r.URL.Path == "/api/v1/query":
			_, _ = io.WriteString(rw, `{"status":"ok","series":[{"pointlist":[[1599076140000,0.0021],[1599076160000,0.002]]}]}`)
		case r.URL.Path == "/api/v2/query/scalar":
			_, _ = io.WriteString(rw, `{"data":{"type":"scalar_response","attributes":{"columns":[{"name":"a","type":"number","values":[0.002]}]}}}`)
		default:
			rw.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
