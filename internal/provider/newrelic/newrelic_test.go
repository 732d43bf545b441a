package newrelic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
	"github.com/canaryd/canaryd/internal/provider/providertest"
)

// apiKey and account are the test's credentials (Argo's tests' key). No
// test sends them anywhere but a loopback stand-in.
const (
	apiKey  = "NRAK-ABCDEFG01234567890ABCDEFGHI"
	account = "12345"
)

var at = time.Unix(1599076435, 0)

// backend is a NerdGraph stand-in: it checks each request as Argo's client
// sends it (the path, the key, the GraphQL query and its variables) and
// answers with a recorded answer from testdata.
type backend struct {
	mu     sync.Mutex
	t      *testing.T
	srv    *httptest.Server
	status int
	file   string
	delay  time.Duration
	data   []byte
	key    string
	// got is the last request's variables.
	got map[string]any
}

func newBackend(t *testing.T) *backend {
	b := &backend{t: t, status: 200, key: apiKey}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) set(file string, status int, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.status, b.delay, b.data = file, status, delay, nil
}

func (b *backend) variables() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, status, delay, data, key := b.t, b.file, b.status, b.delay, b.data, b.key
	b.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
		t.Errorf("request: %s %s", r.Method, r.URL)
	}
	if r.Header.Get("Api-Key") != key || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", r.Header)
	}
	var req struct {
		Query     string
		Variables map[string]any
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || !strings.Contains(req.Query, "nrql(query: $query, timeout: $timeout)") {
		t.Errorf("body: %s", body)
	}
	b.mu.Lock()
	b.got = req.Variables
	b.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if data == nil {
		var err error
		if data, err = os.ReadFile(filepath.Join("testdata", file)); err != nil {
			t.Error(err)
		}
	}
	if strings.HasSuffix(file, ".json") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/html")
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// creds writes a credentials directory whose Secret name sends to b.
func creds(t *testing.T, name string, keys map[string]string) (*credentials.Dir, string) {
	t.Helper()
	root := t.TempDir()
	writeSecret(t, root, name, keys)
	d, err := credentials.New(root, credentials.Options{MaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return d, root
}

func keysFor(b *backend) map[string]string {
	return map[string]string{"personal-api-key": apiKey, "account-id": account, "base-url-nerdgraph": b.srv.URL + "/graphql"}
}

func writeSecret(t *testing.T, root, name string, keys map[string]string) {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func newProvider(t *testing.T, o newrelic.Options) *newrelic.Provider {
	t.Helper()
	p, err := newrelic.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

type outcome struct {
	phase   api.Phase
	value   string
	message string
}

// run measures config once and judges the result with the conditions, as
// the engine does: an error is an Error measurement.
func run(t *testing.T, p *newrelic.Provider, config, success, failure string) (analysis.Observation, outcome) {
	t.Helper()
	src, md, errs := p.Source(json.RawMessage(config))
	if len(errs) > 0 {
		t.Fatalf("Source(%s): %v", config, errs)
	}
	var m newrelic.Metric
	_ = json.Unmarshal([]byte(config), &m)
	if md[newrelic.MetadataQuery] != m.Query {
		t.Errorf("metadata %v", md)
	}
	obs := src.Measure(context.Background(), at)
	if obs.Err != nil {
		return obs, outcome{phase: api.PhaseError, message: obs.Err.Error()}
	}
	c, cerrs := condition.Compile(success, failure)
	if len(cerrs) > 0 {
		t.Fatal(cerrs)
	}
	phase, err := c.Judge(obs.Value)
	o := outcome{phase: phase, value: obs.Display}
	if err != nil {
		o.phase, o.message = api.PhaseError, err.Error()
	}
	return obs, o
}

const query = `{"query": "FROM Transaction SELECT count(*) WHERE appName = 'checkout' SINCE 5 minutes ago"}`

// TestArgoCases holds each recorded answer to the result a condition sees
// and the phase Argo Rollouts v1.10.0 gives (metricproviders/newrelic:
// processResponse makes one row the result and several the list, no row
// or an empty one an Error; newrelic_test.go TestRunSuccessfully,
// TestRunWithTimeseries, TestRunWithFacet, TestRunWithEmptyResult; and
// newrelic-client-go v2.81.0's Do for errors).
func TestArgoCases(t *testing.T) {
	const ok, notOK = "result.count == 10", "result.count != 10"
	tests := []struct {
		name, file       string
		status           int
		success, failure string
		want             outcome
	}{
		{"one row", "value.json", 200, ok, notOK, outcome{phase: api.PhaseSuccessful, value: `{"count":10}`}},
		{"one row that fails", "value.json", 200, "result.count > 10", "result.count <= 10", outcome{phase: api.PhaseFailed, value: `{"count":10}`}},
		{"a facet", "facet.json", 200, "result.count == 10 and result['average.duration'] < 15.0", "result.count != 10 or result['average.duration'] >= 15.0",
			outcome{phase: api.PhaseSuccessful, value: `{"average.duration":12.34,"count":10}`}},
		{"a time series", "timeseries.json", 200, "result[0].count == 10", "result[2].count < 20",
			outcome{phase: api.PhaseSuccessful, value: `[{"beginTimeSeconds":1599076135,"count":10,"endTimeSeconds":1599076195},{"beginTimeSeconds":1599076195,"count":20,"endTimeSeconds":1599076255},{"beginTimeSeconds":1599076255,"count":30,"endTimeSeconds":1599076315}]`}},
		// A null value is nil to the conditions.
		{"a null value", "null_value.json", 200, "result['average.duration'] == nil", "result['average.duration'] != nil", outcome{phase: api.PhaseSuccessful, value: `{"average.duration":null}`}},
		// No data: "no results returned from NRQL query".
		{"an empty row", "empty_row.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from NRQL query"}},
		{"no rows", "no_results.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from NRQL query"}},
		{"null results", "null_results.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from NRQL query"}},
		// Errors in the answer: their messages.
		{"a syntax error", "syntax_error.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "NRQL Syntax Error: Error at line 1 position 8, unexpected 'FROMX'"}},
		{"a NRQL timeout", "nrql_timeout.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "NRDB query duration exceeded the timeout"}},
		{"a bad key answered 200", "bad_api_key.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "Invalid API key"}},
		// A deprecation warning is not an error.
		{"deprecated", "deprecated.json", 200, ok, notOK, outcome{phase: api.PhaseSuccessful, value: `{"count":10}`}},
		// Error statuses, as the client words them.
		{"401", "error_401.json", 401, ok, notOK, outcome{phase: api.PhaseError, message: "401 response returned: Invalid credentials provided. Missing API key or an invalid API key was provided."}},
		{"404", "not_json.html", 404, ok, notOK, outcome{phase: api.PhaseError, message: "resource not found"}},
		{"500", "error_500.json", 500, ok, notOK, outcome{phase: api.PhaseError, message: "500 response returned: Internal Server Error"}},
		{"503 not JSON", "error_503.html", 503, ok, notOK, outcome{phase: api.PhaseError, message: "503 response returned"}},
		// Malformed answers: JSON's message.
		{"truncated", "truncated.json", 200, ok, notOK, outcome{phase: api.PhaseError, message: "unexpected end of JSON input"}},
		{"not JSON", "not_json.html", 200, ok, notOK, outcome{phase: api.PhaseError, message: "invalid character '<' looking for beginning of value"}},
		{"results that are not rows", "results_not_rows.json", 200, ok, notOK, outcome{phase: api.PhaseError}},
	}
	b := newBackend(t)
	d, _ := creds(t, "newrelic", keysFor(b))
	p := newProvider(t, newrelic.Options{Credentials: d})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.set(tt.file, tt.status, 0)
			_, got := run(t, p, query, tt.success, tt.failure)
			if got.phase != tt.want.phase || got.value != tt.want.value || (tt.want.message != "" && got.message != tt.want.message) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if strings.Contains(got.message, apiKey) {
				t.Errorf("the key is in the message %q", got.message)
			}
		})
	}
}

// TestRequest: the variables are Argo's: the account as a number, the
// query, and the timeout (5 by default).
func TestRequest(t *testing.T) {
	b := newBackend(t)
	b.set("value.json", 200, 0)
	d, _ := creds(t, "newrelic", keysFor(b))
	p := newProvider(t, newrelic.Options{Credentials: d})
	run(t, p, query, "true", "")
	v := b.variables()
	if v["accountId"] != 12345.0 || !strings.HasPrefix(v["query"].(string), "FROM Transaction") || v["timeout"] != 5.0 {
		t.Errorf("variables %v", v)
	}
	run(t, p, `{"query": "FROM Transaction SELECT count(*)", "timeout": 30}`, "true", "")
	if v := b.variables(); v["timeout"] != 30.0 {
		t.Errorf("variables %v", v)
	}
}

// TestBounds: an answer of too many values or too many bytes, and one
// that is too slow, are Errors with their reason.
func TestBounds(t *testing.T) {
	b := newBackend(t)
	d, _ := creds(t, "newrelic", keysFor(b))

	p := newProvider(t, newrelic.Options{Credentials: d, MaxResultValues: 5})
	b.set("timeseries.json", 200, 0)
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "more than the 5 values") {
		t.Errorf("too many values: %+v", got)
	}

	p = newProvider(t, newrelic.Options{Credentials: d, MaxResultValues: 1})
	b.set("value.json", 200, 0)
	b.mu.Lock()
	b.data = []byte(`{"data":{"actor":{"account":{"nrql":{"results":[{"count":"` + strings.Repeat("x", 200_000) + `"}]}}}}}`)
	b.mu.Unlock()
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "longer than the") {
		t.Errorf("too large: %+v", got)
	}

	p = newProvider(t, newrelic.Options{Credentials: d, MaxTimeout: 100 * time.Millisecond})
	b.set("value.json", 200, 5*time.Second)
	start := time.Now()
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "no answer within the timeout (100ms") {
		t.Errorf("slow: %+v", got)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("slow: took %s", time.Since(start))
	}
}

// TestConfiguration: a configuration of the wrong shape, an empty query,
// a negative timeout, a profile that is not a Secret's name and missing or
// bad credentials are problems naming the field, never showing the key.
func TestConfiguration(t *testing.T) {
	b := newBackend(t)
	d, root := creds(t, "newrelic", keysFor(b))
	writeSecret(t, root, "no-account", map[string]string{"personal-api-key": apiKey})
	writeSecret(t, root, "bad-account", map[string]string{"personal-api-key": apiKey, "account-id": "abcdef"})
	writeSecret(t, root, "bad-url", map[string]string{"personal-api-key": apiKey, "account-id": account, "base-url-nerdgraph": "example.com/query"})
	p := newProvider(t, newrelic.Options{Credentials: d})
	for _, tt := range []struct{ config, field, message string }{
		{`{"query": 5}`, "provider.newRelic.query", ""},
		{`{"query": "x", "timeout": "5s"}`, "provider.newRelic.timeout", ""},
		{`{"query": "x", "account": 1}`, "provider.newRelic.account", ""},
		{`{"query": ""}`, "provider.newRelic.query", "the query is empty"},
		{`{"query": "x", "timeout": -1}`, "provider.newRelic.timeout", "timeout value needs to be a positive value"},
		{`{"query": "x", "profile": "Bad_Name"}`, "provider.newRelic.profile", "not a Secret's name"},
		{`{"query": "x", "profile": "missing"}`, "provider.newRelic.profile", `no Secret "missing"`},
		{`{"query": "x", "profile": "no-account"}`, "provider.newRelic.profile", "no-account/account-id"},
		{`{"query": "x", "profile": "bad-account"}`, "provider.newRelic.profile", "could not parse account ID"},
		{`{"query": "x", "profile": "bad-url"}`, "provider.newRelic.profile", "base-url-nerdgraph"},
	} {
		src, _, errs := p.Source(json.RawMessage(tt.config))
		if src != nil || len(errs) == 0 || errs[0].Field != tt.field || !strings.Contains(errs[0].Message, tt.message) {
			t.Errorf("Source(%s) = %v; want a problem on %s: %s", tt.config, errs, tt.field, tt.message)
		}
		for _, e := range errs {
			if strings.Contains(e.Message, apiKey) {
				t.Errorf("the key is in %q", e.Message)
			}
		}
	}
	none := newProvider(t, newrelic.Options{})
	if _, _, errs := none.Source(json.RawMessage(query)); len(errs) != 1 || errs[0].Field != "provider.newRelic" || !strings.Contains(errs[0].Message, "--credentials-dir") {
		t.Errorf("no directory: %v", errs)
	}
	check := newProvider(t, newrelic.Options{CheckOnly: true})
	if src, _, errs := check.Source(json.RawMessage(query)); src != nil || len(errs) != 0 {
		t.Errorf("check only: %v %v", src, errs)
	}
	if why := p.PresentOnly(json.RawMessage(query)); !strings.Contains(why, "past") {
		t.Errorf("PresentOnly = %q", why)
	}
}

// TestProfileAndRotation: profile picks the Secret; a rotated key applies
// at the next measurement, without a restart.
func TestProfileAndRotation(t *testing.T) {
	b := newBackend(t)
	b.set("value.json", 200, 0)
	d, root := creds(t, "nr-eu", keysFor(b))
	p := newProvider(t, newrelic.Options{Credentials: d})
	config := `{"profile": "nr-eu", "query": "FROM Transaction SELECT count(*)"}`
	if _, got := run(t, p, config, "true", ""); got.phase != api.PhaseSuccessful {
		t.Fatalf("profile: %+v", got)
	}
	writeSecret(t, root, "nr-eu", map[string]string{"personal-api-key": "NRAK-ROTATED"})
	b.mu.Lock()
	b.key = "NRAK-ROTATED"
	b.mu.Unlock()
	if _, got := run(t, p, config, "true", ""); got.phase != api.PhaseSuccessful {
		t.Errorf("rotated: %+v", got)
	}
}

// TestUnreachable: a transport error is an Error naming the address,
// never the key.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	d, _ := creds(t, "newrelic", map[string]string{"personal-api-key": apiKey, "account-id": account, "base-url-nerdgraph": addr + "/graphql"})
	p := newProvider(t, newrelic.Options{Credentials: d})
	_, got := run(t, p, query, "true", "")
	if got.phase != api.PhaseError || !strings.HasPrefix(got.message, "POST "+addr+"/graphql: ") || strings.Contains(got.message, apiKey) {
		t.Errorf("got %+v", got)
	}
}

// TestConformance runs the providers' conformance suite (providertest)
// over the provider, with credentials that send it to the suite's
// backend.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Registry: func(backend string) *provider.Registry {
			d, _ := creds(t, "newrelic", map[string]string{"personal-api-key": apiKey, "account-id": account, "base-url-nerdgraph": backend + "/graphql"})
			return provider.NewRegistry().Register("newRelic", newProvider(t, newrelic.Options{Credentials: d}))
		},
		Configs: map[string]func(string) json.RawMessage{
			"newRelic": func(string) json.RawMessage { return json.RawMessage(query) },
		},
	})
}
