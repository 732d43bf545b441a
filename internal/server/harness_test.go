package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/web"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/store"
	"github.com/canaryd/canaryd/internal/templates"
	"github.com/canaryd/canaryd/internal/webhook"
)

// TestMain checks, after every test, that no goroutine is left (goleak):
// each run must end with its analysis (completed, terminated or aborted),
// each stream, backtest and webhook delivery with its request or its
// analysis. The tests' own HTTP client closes its idle connections at the
// end of every test (see start), so that nothing needs to be ignored.
//
// When the whole suite ran, it also checks that every response documented
// by openapi.yaml was produced and checked against it at least once. The
// tests run with pgtest's shared cluster, which the tests of a store
// (store_test.go) use; it is stopped after them.
func TestMain(m *testing.M) {
	pgtest.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if code == 0 && flag.Lookup("test.run").Value.String() == "" {
			if missing := uncoveredResponses(); len(missing) > 0 {
				fmt.Fprintf(os.Stderr, "responses documented in openapi.yaml that no test produced:\n  %s\n", strings.Join(missing, "\n  "))
				code = 1
			}
		}
		os.Exit(code)
	}))
}

// uncoveredResponses lists the documented responses ("METHOD /path
// status") that no test checked. Only a 500 may go unproduced, and only
// where no test can reach it: TestPanicIsA500 produces the one of
// POST /v1/analyses; the others come from the same middleware.
func uncoveredResponses() []string {
	c, err := loadContract()
	if err != nil {
		return []string{err.Error()}
	}
	var missing []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				key := method + " " + path + " " + status
				if c.covered[key] || (status == "500" && key != "POST /v1/analyses 500") {
					continue
				}
				missing = append(missing, key)
			}
		}
	}
	slices.Sort(missing)
	return missing
}

// options configure a test server; the zero value is a server on the
// datasources given, with the limits of production.
type options struct {
	prometheus   []string
	clock        clock.Clock
	maxRunning   int
	maxFinished  int
	retention    time.Duration
	tokens       []string
	webhookAllow []string
	// webhookKey signs webhooks; unsigned when nil.
	webhookKey []byte
	// webhookMaxElapsed is the retry budget of a webhook event; 5s when
	// 0. Backoffs are a few milliseconds, so retries take no time.
	webhookMaxElapsed time.Duration
	sources           prometheus.Func
	// webAllow are the web provider's --web-allow prefixes; web metrics
	// are refused without any.
	webAllow  []string
	heartbeat time.Duration
	// templates is a directory of named templates to serve; none when "".
	templates string
	// limits are the server's; production's when zero.
	limits limits.Limits
	// maxBacktests, maxStreams, maxRounds and maxReportRenders are the
	// Analyses' limits; production's when 0.
	maxBacktests, maxStreams, maxRounds, maxReportRenders int
	// maxDecodes bounds the bodies decoded at once, maxDecodeWaiters and
	// decodeWait the bodies waiting for a slot; production's when 0.
	maxDecodes, maxDecodeWaiters int
	decodeWait                   time.Duration
	// maxRetainedBytes and minRetention bound the results held;
	// production's when 0.
	maxRetainedBytes int64
	minRetention     time.Duration
	// streamBuffer is how far a stream may fall behind; production's
	// when 0.
	streamBuffer int
	// webhookBacklog is how many analyses may have webhook deliveries
	// owed; production's when 0.
	webhookBacklog int
	// maxDuration bounds each analysis; a minute when 0.
	maxDuration time.Duration
	// webhookAttemptTimeout bounds one webhook attempt; 2s when 0.
	webhookAttemptTimeout time.Duration
	// tokenSet, when set, replaces tokens: a set the test replaces.
	tokenSet *server.Tokens
	// store keeps the analyses (AnalysesOptions.Store), with leases of
	// leaseTTL; memory alone when nil.
	store    store.Store
	leaseTTL time.Duration
	// prometheusExternalURL is AnalysesOptions.PrometheusExternalURL.
	prometheusExternalURL string
	// scheduler is AnalysesOptions.Scheduler: the engine's default when
	// nil.
	scheduler *analysis.Scheduler
}

// testServer is the API on a real loopback listener (streams and hang-ups
// need a real connection), with its own registry and an observed logger.
type testServer struct {
	t        *testing.T
	url      string
	analyses *analyses.Analyses
	registry *promclient.Registry
	logs     *observer.ObservedLogs
	// store serves the templates of options.templates; nil without.
	store *templates.Store
}

func start(t *testing.T, o options) *testServer {
	t.Helper()
	if o.maxRunning == 0 {
		o.maxRunning = 100
	}
	if o.maxFinished == 0 {
		o.maxFinished = 1000
	}
	if o.retention == 0 {
		o.retention = time.Hour
	}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	reg := promclient.NewRegistry()
	sources := o.sources
	if sources == nil {
		ds := make([]prometheus.Datasource, len(o.prometheus))
		for i, u := range o.prometheus {
			ds[i] = prometheus.Datasource{URL: u}
		}
		p, err := prometheus.New(prometheus.Options{Datasources: ds, Registerer: reg})
		if err != nil {
			t.Fatalf("prometheus.New: %v", err)
		}
		t.Cleanup(p.CloseIdleConnections)
		sources = p.Source
	}
	webProvider, err := web.New(web.Options{Allow: o.webAllow})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	t.Cleanup(webProvider.CloseIdleConnections)
	providers := server.PromAndJudge(sources).Register("web", webProvider)
	if o.webhookMaxElapsed == 0 {
		o.webhookMaxElapsed = 5 * time.Second
	}
	if o.maxDuration == 0 {
		o.maxDuration = time.Minute
	}
	if o.webhookAttemptTimeout == 0 {
		o.webhookAttemptTimeout = 2 * time.Second
	}
	hooks, err := webhook.New(webhook.Options{
		Allow:          o.webhookAllow,
		Secret:         o.webhookKey,
		MaxElapsed:     o.webhookMaxElapsed,
		InitialBackoff: 5 * time.Millisecond,
		MaxBackoff:     20 * time.Millisecond,
		AttemptTimeout: o.webhookAttemptTimeout,
		MaxBacklog:     o.webhookBacklog,
		Logger:         log,
		Registerer:     reg,
	})
	if err != nil {
		t.Fatalf("webhook.New: %v", err)
	}
	if o.store != nil {
		// Bounded and counted as canaryd serve's is.
		if o.store, err = store.Metered(o.store, store.MeteredOptions{Registerer: reg}); err != nil {
			t.Fatalf("store.Metered: %v", err)
		}
	}
	var (
		store  server.TemplateStore
		loaded *templates.Store
	)
	if o.templates != "" {
		st, err := templates.Load(templates.Options{
			Dir:       o.templates,
			Providers: providers,
			Check: func(doc *spec.Document) []api.FieldError {
				_, errs := compile.Compile(doc, nil, providers)
				return errs
			},
			Logger:     log,
			Registerer: reg,
		})
		if err != nil {
			t.Fatalf("templates.Load: %v", err)
		}
		store, loaded = st, st
	}
	// One planner, as canaryd serve has: the requests' and the resumed
	// analyses'.
	planner := compile.NewPlanner(compile.PlannerOptions{Providers: providers,
		Run:       []compile.Option{compile.WithLimits(o.limits.SpecLimits(o.maxDuration))},
		Backtest:  []compile.Option{compile.WithLimits(o.limits.SpecLimits(0))},
		Templates: server.TemplateLookup(store)})
	svc, err := analyses.NewAnalyses(analyses.AnalysesOptions{
		Logger:                log,
		Registerer:            reg,
		Clock:                 o.clock,
		Scheduler:             o.scheduler,
		MaxRunning:            o.maxRunning,
		MaxFinished:           o.maxFinished,
		Retention:             o.retention,
		ErrorRetryInterval:    50 * time.Millisecond,
		MaxDuration:           o.maxDuration,
		Webhooks:              hooks,
		MaxBacktests:          o.maxBacktests,
		MaxStreams:            o.maxStreams,
		MaxRounds:             o.maxRounds,
		MaxRetainedBytes:      o.maxRetainedBytes,
		MinRetention:          o.minRetention,
		StreamBuffer:          o.streamBuffer,
		Store:                 o.store,
		Planner:               planner,
		LeaseTTL:              o.leaseTTL,
		PrometheusExternalURL: o.prometheusExternalURL,
		MaxReportRenders:      o.maxReportRenders,
	})
	if err != nil {
		t.Fatalf("NewAnalyses: %v", err)
	}
	t.Cleanup(svc.Close)
	handler, err := server.New(server.Options{
		Logger:            log,
		Registerer:        reg,
		Gatherer:          reg,
		Analyses:          svc,
		Planner:           planner,
		AuthTokens:        o.tokens,
		Tokens:            o.tokenSet,
		Limits:            o.limits,
		HeartbeatInterval: o.heartbeat,
		Templates:         store,
		MaxDecodes:        o.maxDecodes,
		MaxDecodeWaiters:  o.maxDecodeWaiters,
		DecodeWait:        o.decodeWait,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	srv := httptest.NewServer(handler)
	// The client's keep-alive connections are the test's, not canaryd's.
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	// Cleanups run last first: the analyses are aborted and the webhook
	// deliveries still pending abandoned (as on a shutdown whose grace has
	// run out), then the server closes.
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		svc.Drain(ctx)
		svc.WaitWebhooks(ctx)
	})
	return &testServer{t: t, url: srv.URL, analyses: svc, registry: reg, logs: logs, store: loaded}
}

// response is a whole response, already checked against openapi.yaml.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request builds a request; headers are name, value pairs.
func (s *testServer) request(ctx context.Context, method, path, contentType, body string, headers ...string) *http.Request {
	s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		s.t.Fatalf("request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return req
}

// do sends a request and reads the whole response, checking it against
// openapi.yaml.
func (s *testServer) do(method, path, contentType, body string, headers ...string) response {
	s.t.Helper()
	resp, err := s.send(method, path, contentType, body, headers...)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// send is do for goroutines other than the test's, which must not call
// t.Fatal: it returns the error instead.
func (s *testServer) send(method, path, contentType, body string, headers ...string) (response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		return response{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading the response: %w", method, path, err)
	}
	checkResponse(s.t, req, resp.StatusCode, resp.Header, data)
	return response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func (r response) analysis(t *testing.T) api.Analysis {
	t.Helper()
	var a api.Analysis
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("response is not an analysis (%d): %v\n%s", r.status, err, r.body)
	}
	return a
}

func (r response) problem(t *testing.T) api.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p api.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("response is not a problem (%d): %v\n%s", r.status, err, r.body)
	}
	if p.Status != r.status {
		t.Errorf("problem status %d, response status %d", p.Status, r.status)
	}
	return p
}

// openStream starts a request whose answer is a stream; the caller reads
// it with events and closes it (or cancels ctx) to hang up.
func (s *testServer) openStream(ctx context.Context, method, path, contentType, body, accept string) (*http.Request, *http.Response) {
	s.t.Helper()
	req := s.request(ctx, method, path, contentType, body, "Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		data := readAll(s.t, resp.Body)
		s.t.Fatalf("%s %s: status %d, want 200: %s", method, path, resp.StatusCode, data)
	}
	checkResponse(s.t, req, resp.StatusCode, resp.Header, nil)
	return req, resp
}

// eventReader reads the events of an NDJSON or SSE stream one by one,
// checking each against the Event schema.
type eventReader struct {
	t   *testing.T
	sse bool
	sc  *bufio.Scanner
}

func newEventReader(t *testing.T, resp *http.Response) *eventReader {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &eventReader{t: t, sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), sc: sc}
}

// next returns the next event, or false at the end of the stream.
func (e *eventReader) next() (api.Event, bool) {
	e.t.Helper()
	var name string
	for e.sc.Scan() {
		line := e.sc.Text()
		var data string
		if e.sse {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
				continue
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			default: // blank separators and comments (heartbeats)
				continue
			}
		} else {
			data = line
		}
		checkSchema(e.t, "Event", []byte(data))
		var ev api.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			e.t.Fatalf("event %q: %v", data, err)
		}
		if e.sse && name != string(ev.Type) {
			e.t.Errorf("SSE event name %q, data type %q", name, ev.Type)
		}
		return ev, true
	}
	return api.Event{}, false
}

// all reads the rest of the stream.
func (e *eventReader) all() []api.Event {
	e.t.Helper()
	var out []api.Event
	for {
		ev, ok := e.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// waitFinished polls the analysis until it has finished.
func (s *testServer) waitFinished(id string) api.Analysis {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a := s.do(http.MethodGet, "/v1/analyses/"+id, "", "").analysis(s.t)
		if a.Phase.Completed() {
			return a
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("analysis %s still %s after 20s", id, a.Phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Specs of the tests.

// seed is the seed template (testdata/specs/success-rate-args.yaml) with
// its 30 s interval shortened, so that its three measurements take well
// under a second.
func seed(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/specs/success-rate-args.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "interval: 30s", "interval: 50ms", 1)
	if text == string(data) {
		t.Fatal("the seed template no longer has interval: 30s; update the test")
	}
	return text
}

// forever is a metric that measures until it is terminated.
func forever(namespace string) string {
	return fmt.Sprintf(`metrics:
- name: forever
  interval: 50ms
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: %q
`, promtest.SeedQuery(namespace))
}

// once is a metric measured once, at once.
func once(namespace string) string {
	return fmt.Sprintf(`{"metrics": [{"name": "once", "successCondition": "result[0] >= 0.99",
  "provider": {"prometheus": {"query": %q}}}]}`, promtest.SeedQuery(namespace))
}

const (
	yamlType = "application/yaml"
	jsonType = "application/json"
)
