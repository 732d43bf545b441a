package datadog_test

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider/datadog"
)

// The keys of Argo's tests. No test sends them anywhere but a loopback
// stand-in.
const (
	apiKey = "0123456789abcdef0123456789abcdef"
	appKey = "0123456789abcdef0123456789abcdef01234567"
)

// at is Argo's tests' instant (unixNow = 1599076435).
var at = time.Unix(1599076435, 0)

// backend is a Datadog stand-in: it checks each request as Argo's tests
// do (the path, the window, the headers) and answers with a recorded
// answer from testdata.
type backend struct {
	mu     sync.Mutex
	t      *testing.T
	srv    *httptest.Server
	status int
	file   string
	delay  time.Duration
	// got is the last request's body (v2) or query (v1).
	got string
}

func newBackend(t *testing.T) *backend {
	b := &backend{t: t, status: 200}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// set changes what the stand-in answers.
func (b *backend) set(file string, status int, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.status, b.delay = file, status, delay
}

// sent is the last request's body (v2) or query (v1).
func (b *backend) sent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, status, delay := b.t, b.file, b.status, b.delay
	b.mu.Unlock()
	if r.Header.Get("DD-API-KEY") != apiKey || r.Header.Get("DD-APPLICATION-KEY") != appKey || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", r.Header)
	}
	switch r.URL.Path {
	case "/api/v1/query":
		if r.Method != http.MethodGet {
			t.Errorf("v1: method %s", r.Method)
		}
		b.record(r.URL.RawQuery)
	case "/api/v2/query/scalar":
		if r.Method != http.MethodPost {
			t.Errorf("v2: method %s", r.Method)
		}
		body, _ := io.ReadAll(r.Body)
		b.record(string(body))
	default:
		t.Errorf("path %s", r.URL.Path)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func (b *backend) record(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = s
}

// creds writes a credentials directory whose Secret datadog sends to b.
func creds(t *testing.T, address string) *credentials.Dir {
	t.Helper()
	root := t.TempDir()
	writeSecret(t, root, "datadog", map[string]string{"api-key": apiKey, "app-key": appKey, "address": address})
	d, err := credentials.New(root, credentials.Options{MaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeSecret(t testing.TB, root, name string, keys map[string]string) {
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

func noEnv(string) (string, bool) { return "", false }

func newProvider(t *testing.T, o datadog.Options) *datadog.Provider {
	t.Helper()
	if o.LookupEnv == nil {
		o.LookupEnv = noEnv
	}
	p, err := datadog.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// outcome is what Argo's measurement shows: the phase, the value, and
// (for an Error) the message.
type outcome struct {
	phase   api.Phase
	value   string
	message string
}

// run measures config once at at and judges the result with the
// conditions, as the engine does: an error is an Error measurement.
func run(t *testing.T, p *datadog.Provider, config, success, failure string) (analysis.Observation, outcome) {
	t.Helper()
	src, _, errs := p.Source(json.RawMessage(config))
	if len(errs) > 0 {
		t.Fatalf("Source(%s): %v", config, errs)
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

// TestArgoCases holds each recorded answer to the result a condition sees
// and the phase Argo Rollouts v1.10.0 gives (metricproviders/datadog,
// datadogV1_test.go TestRunSuite, datadogV2_test.go TestRunSuiteV2 and the
// parse functions they exercise).
func TestArgoCases(t *testing.T) {
	const (
		v1      = `{"query": "avg:kubernetes.cpu.user.total{*}"}`
		v1_10m  = `{"query": "avg:kubernetes.cpu.user.total{*}", "interval": "10m"}`
		v2      = `{"query": "avg:kubernetes.cpu.user.total{*}", "apiVersion": "v2"}`
		v2_10m  = `{"query": "avg:kubernetes.cpu.user.total{*}", "apiVersion": "v2", "interval": "10m"}`
		formula = `{"queries": {"a": "avg:error_requests{*}", "b": "avg:total_requests{*}"}, "formula": "a/b", "apiVersion": "v2"}`
		ok      = "result < 0.001"
		notOK   = "result >= 0.001"
	)
	nilFloat := (*float64)(nil)
	tests := []struct {
		name, file, config, success, failure string
		status                               int
		want                                 outcome
		result                               any // the result the conditions see, when measured
	}{
		// v1: the last point of the first series.
		{"v1 last value meets the condition: Successful", "v1_value.json", v1_10m, ok, notOK, 200,
			outcome{phase: api.PhaseSuccessful, value: "0.0003332881882246533"}, 0.0003332881882246533},
		{"v1 last value does not: Failed", "v1_value_high.json", v1, ok, notOK, 200,
			outcome{phase: api.PhaseFailed, value: "0.006121378742186943"}, 0.006121378742186943},
		{"v1 default() with data: the data", "v1_value_high.json", v1, "default(result, 1) < 0.05", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "0.006121378742186943"}, 0.006121378742186943},
		{"v1 several series (an array of series): the first one's last point", "v1_series.json", v1, ok, notOK, 200,
			outcome{phase: api.PhaseFailed, value: "0.0125"}, 0.0125},
		// v1 no data: a nil *float64, the value the series as JSON.
		{"v1 no series, no default: Error, nil or empty", "v1_empty_series.json", v1, "result < 0.05", "", 200,
			outcome{phase: api.PhaseError, value: "[]", message: "metric result is nil or empty: no data returned from the metric provider"}, nilFloat},
		{"v1 no series, default(result, 0): Successful", "v1_empty_series.json", v1, "default(result, 0) < 0.05", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[]"}, nilFloat},
		{"v1 no series, default(result, 1): Failed", "v1_empty_series.json", v1, "default(result, 1) < 0.05", "", 200,
			outcome{phase: api.PhaseFailed, value: "[]"}, nilFloat},
		{"v1 series absent: no data, null", "v1_no_series.json", v1, "isNil(result)", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "null"}, nilFloat},
		{"v1 first series without points: no data, the series as Argo writes them", "v1_empty_pointlist.json", v1, "isNil(result)", "", 200,
			outcome{phase: api.PhaseSuccessful, value: `[{"pointlist":[]},{"pointlist":[[1599076140000,3]]}]`}, nilFloat},
		// v1 malformed: Argo's parse errors.
		{"v1 series not a list: Error", "v1_series_invalid.json", v1, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Could not parse JSON body: json: cannot unmarshal"}, nil},
		{"v1 last point not [time, value]: Error", "v1_short_point.json", v1, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Datapoint does not have 2 values"}, nil},
		{"not JSON: Error", "not_json.html", v1, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Could not parse JSON body: invalid character '<'"}, nil},
		{"truncated JSON: Error", "truncated.json", v1, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Could not parse JSON body: unexpected end of JSON input"}, nil},
		// Error statuses: Argo's messages, quoting the answer.
		{"400: Error", "error_400.json", v1, ok, notOK, 400,
			outcome{phase: api.PhaseError, message: `received non 2xx response code: 400 {"status":"error","error":"error messsage"}`}, nil},
		{"401: authentication Error", "error_401.json", v1, ok, notOK, 401,
			outcome{phase: api.PhaseError, message: `received authentication error response code: 401 {"errors": ["No authenticated user."]}`}, nil},
		{"403: authentication Error", "error_403.json", v2, ok, notOK, 403,
			outcome{phase: api.PhaseError, message: `received authentication error response code: 403 {"errors": ["Forbidden"]}`}, nil},
		{"500: Error", "error_500.json", v2, ok, notOK, 500,
			outcome{phase: api.PhaseError, message: `received non 2xx response code: 500 {"errors": ["Internal Server Error"]}`}, nil},
		{"v2 400: Error", "error_400.json", v2, ok, notOK, 400,
			outcome{phase: api.PhaseError, message: `received non 2xx response code: 400 {"status":"error","error":"error messsage"}`}, nil},
		// v2: the first value of the first column.
		{"v2 value meets the condition: Successful", "v2_value.json", v2_10m, ok, notOK, 200,
			outcome{phase: api.PhaseSuccessful, value: "0.0006332881882246533"}, 0.0006332881882246533},
		{"v2 value does not: Failed", "v2_value_high.json", v2, ok, notOK, 200,
			outcome{phase: api.PhaseFailed, value: "0.006121374442186943"}, 0.006121374442186943},
		{"v2 formula: the formula's value", "v2_value.json", formula, "default(result, 0) < 0.05", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "0.0006332881882246533"}, 0.0006332881882246533},
		{"v2 several values (an array): the first", "v2_array.json", v2, ok, notOK, 200,
			outcome{phase: api.PhaseFailed, value: "0.0125"}, 0.0125},
		// v2 no data.
		{"v2 no values, no default: Error, nil or empty", "v2_empty_values.json", v2, "result < 0.05", "", 200,
			outcome{phase: api.PhaseError, value: "[]", message: "metric result is nil or empty: no data returned from the metric provider"}, nilFloat},
		{"v2 no values, default(result, 0): Successful", "v2_empty_values.json", v2, "default(result, 0) < 0.05", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[]"}, nilFloat},
		{"v2 no values, default(result, 1): Failed", "v2_empty_values.json", v2, "default(result, 1) < 0.05", "", 200,
			outcome{phase: api.PhaseFailed, value: "[]"}, nilFloat},
		{"v2 a null value: no data", "v2_null_value.json", v2, "isNil(result)", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[null]"}, nilFloat},
		{"v2 no columns: no data, the attributes as Argo writes them", "v2_no_columns.json", v2, "isNil(result)", "", 200,
			outcome{phase: api.PhaseSuccessful, value: `{"Columns":[]}`}, nilFloat},
		{"v2 no attributes: no data", "v2_no_attributes.json", v2, "default(result, 0) < 0.05", "", 200,
			outcome{phase: api.PhaseSuccessful, value: `{"Columns":null}`}, nilFloat},
		// v2 malformed and errors.
		{"v2 values not a list: Error", "v2_values_invalid.json", v2, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Could not parse JSON body: json: cannot unmarshal"}, nil},
		{"v2 grouped (by {tag}), a column of groups: Error, as v1.10 cannot read it", "v2_grouped.json", v2, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "Could not parse JSON body: json: cannot unmarshal"}, nil},
		{"v2 errors in the answer: Error", "v2_errors.json", v2, ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "There were errors in your query: Error parsing query: unable to parse avg:foo{"}, nil},
	}
	b := newBackend(t)
	p := newProvider(t, datadog.Options{Credentials: creds(t, b.srv.URL)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.set(tt.file, tt.status, 0)
			obs, got := run(t, p, tt.config, tt.success, tt.failure)
			if got.phase != tt.want.phase || got.value != tt.want.value || !strings.HasPrefix(got.message, tt.want.message) && !strings.Contains(got.message, tt.want.message) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if tt.result != nil && obs.Value != tt.result {
				t.Errorf("the result is %#v (%T), want %#v (%T)", obs.Value, obs.Value, tt.result, tt.result)
			}
			if strings.Contains(got.message, apiKey) || strings.Contains(got.message, appKey) {
				t.Errorf("the message shows a key: %s", got.message)
			}
		})
	}
}

// TestRequests: the window ends at the measurement's instant, the interval
// long (5m by default), in seconds for v1 and milliseconds for v2; v2's
// queries carry the aggregator (last by default), in name order, and the
// formula; v1's query is in the URL as Argo encodes it.
func TestRequests(t *testing.T) {
	b := newBackend(t)
	p := newProvider(t, datadog.Options{Credentials: creds(t, b.srv.URL)})
	for _, tt := range []struct{ config, file, want string }{
		{`{"query": "avg:kubernetes.cpu.user.total{*}"}`, "v1_value.json",
			"from=1599076135&query=avg%3Akubernetes.cpu.user.total%7B%2A%7D&to=1599076435"},
		{`{"query": "avg:kubernetes.cpu.user.total{*}", "interval": "10m", "apiVersion": "v1"}`, "v1_value.json",
			"from=1599075835&query=avg%3Akubernetes.cpu.user.total%7B%2A%7D&to=1599076435"},
		{`{"query": "avg:kubernetes.cpu.user.total{*}", "apiVersion": "v2"}`, "v2_value.json",
			`{"data":{"attributes":{"from":1599076135000,"to":1599076435000,"queries":[{"aggregator":"last","data_source":"metrics","name":"query","query":"avg:kubernetes.cpu.user.total{*}"}],"formulas":[]},"type":"scalar_request"}}`},
		{`{"queries": {"b": "avg:total_requests{*}", "a": "avg:error_requests{*}"}, "formula": "a/b", "aggregator": "sum", "interval": "10m", "apiVersion": "v2"}`, "v2_value.json",
			`{"data":{"attributes":{"from":1599075835000,"to":1599076435000,"queries":[{"aggregator":"sum","data_source":"metrics","name":"a","query":"avg:error_requests{*}"},{"aggregator":"sum","data_source":"metrics","name":"b","query":"avg:total_requests{*}"}],"formulas":[{"formula":"a/b"}]},"type":"scalar_request"}}`},
	} {
		b.set(tt.file, 200, 0)
		if _, got := run(t, p, tt.config, "true", ""); got.phase != api.PhaseSuccessful {
			t.Errorf("%s: %+v", tt.config, got)
		}
		if got := b.sent(); got != tt.want {
			t.Errorf("%s:\nsent %s\nwant %s", tt.config, got, tt.want)
		}
	}
}

// TestBounds: an answer too large, one of too many values, and one too
// slow for its requestTimeout (Argo's TestRequestTimeout) are Error
// measurements naming the bound.
func TestBounds(t *testing.T) {
	b := newBackend(t)
	root := t.TempDir()
	writeSecret(t, root, "datadog", map[string]string{"api-key": apiKey, "app-key": appKey, "address": b.srv.URL})
	dir, _ := credentials.New(root, credentials.Options{})
	p := newProvider(t, datadog.Options{Credentials: dir, MaxResultValues: 2})

	b.set("v1_series.json", 200, 0) // 5 points, over 2
	if _, got := run(t, p, `{"query": "x"}`, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "--max-result-values") {
		t.Errorf("too many values: %+v", got)
	}
	b.set("v2_array.json", 200, 0) // 3 values
	if _, got := run(t, p, `{"query": "x", "apiVersion": "v2"}`, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "--max-result-values") {
		t.Errorf("too many values: %+v", got)
	}

	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"series":[{"pointlist":[`))
		chunk := []byte(strings.Repeat("[1599076140000,0.5],", 1000))
		for i := 0; i < 200; i++ { // 4 MB, more than 2 values' 66 KiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer big.Close()
	writeSecret(t, root, "big", map[string]string{"api-key": apiKey, "app-key": appKey, "address": big.URL})
	if _, got := run(t, p, `{"query": "x", "secretRef": {"name": "big"}}`, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "longer than the 67584 bytes") {
		t.Errorf("too large: %+v", got)
	}

	b.set("v2_value.json", 200, 2*time.Second)
	start := time.Now()
	if _, got := run(t, p, `{"query": "x", "apiVersion": "v2", "requestTimeout": "100ms"}`, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "request timeout (100ms") {
		t.Errorf("slow: %+v", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the slow answer was waited for %s", d)
	}
	capped := newProvider(t, datadog.Options{Credentials: dir, MaxTimeout: 50 * time.Millisecond})
	b.set("v2_value.json", 200, time.Second)
	if _, got := run(t, capped, `{"query": "x", "requestTimeout": "30s"}`, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "request timeout (50ms") {
		t.Errorf("capped: %+v", got)
	}
}

// TestCredentials: the Secret secretRef names, else DD_API_KEY, DD_APP_KEY
// and DD_ADDRESS when all three are set, else the Secret datadog; read
// again for a measurement, so a rotated key applies; a missing one is a
// problem naming the file, never a key; the address defaults to Datadog's.
func TestCredentials(t *testing.T) {
	b := newBackend(t)
	b.set("v1_value.json", 200, 0)
	root := t.TempDir()
	writeSecret(t, root, "team-a", map[string]string{"api-key": apiKey, "app-key": appKey, "address": b.srv.URL + "/"})
	writeSecret(t, root, "no-app-key", map[string]string{"api-key": apiKey, "address": b.srv.URL})
	dir, _ := credentials.New(root, credentials.Options{MaxAge: -1})
	env := map[string]string{"DD_API_KEY": apiKey, "DD_APP_KEY": appKey, "DD_ADDRESS": b.srv.URL}
	lookup := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}

	// A named Secret.
	p := newProvider(t, datadog.Options{Credentials: dir})
	if _, got := run(t, p, `{"query": "x", "secretRef": {"name": "team-a"}}`, "true", ""); got.phase != api.PhaseSuccessful {
		t.Errorf("secretRef team-a: %+v", got)
	}
	// The environment, with no Secret named and no directory.
	pe := newProvider(t, datadog.Options{LookupEnv: lookup(env)})
	if _, got := run(t, pe, `{"query": "x"}`, "true", ""); got.phase != api.PhaseSuccessful {
		t.Errorf("environment: %+v", got)
	}
	// Not all three variables: the environment is not read (Argo's
	// lookupKeysInEnv), and there is no Secret datadog.
	partial := map[string]string{"DD_API_KEY": apiKey, "DD_APP_KEY": appKey}
	pp := newProvider(t, datadog.Options{LookupEnv: lookup(partial), Credentials: dir})
	_, _, errs := pp.Source(json.RawMessage(`{"query": "x"}`))
	if len(errs) != 1 || errs[0].Field != "provider.datadog" || !strings.Contains(errs[0].Message, `"datadog"`) || !strings.Contains(errs[0].Message, "DD_ADDRESS") {
		t.Errorf("no credentials: %v", errs)
	}
	// A Secret without app-key: a problem on secretRef.name naming the file.
	_, _, errs = p.Source(json.RawMessage(`{"query": "x", "secretRef": {"name": "no-app-key"}}`))
	if len(errs) != 1 || errs[0].Field != "provider.datadog.secretRef.name" || !strings.Contains(errs[0].Message, "no-app-key/app-key") {
		t.Errorf("missing app-key: %v", errs)
	}
	// A missing Secret, and a name that would leave the directory.
	for _, name := range []string{"nope", "../team-a", "Team-A"} {
		_, _, errs = p.Source(json.RawMessage(`{"query": "x", "secretRef": {"name": "` + name + `"}}`))
		if len(errs) != 1 || errs[0].Field != "provider.datadog.secretRef.name" {
			t.Errorf("secretRef %q: %v", name, errs)
		}
	}
	for _, e := range errs {
		if strings.Contains(e.Message, apiKey) || strings.Contains(e.Message, appKey) || strings.Contains(e.Message, root) {
			t.Errorf("the problem shows a key or the directory: %s", e.Message)
		}
	}

	// Rotation: the measurement reads the Secret again.
	src, _, errs := p.Source(json.RawMessage(`{"query": "x", "secretRef": {"name": "team-a"}}`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	writeSecret(t, root, "team-a", map[string]string{"app-key": "rotated-app-key"})
	var sent atomic.Value
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Store(r.Header.Get("DD-APPLICATION-KEY"))
		w.WriteHeader(403)
		_, _ = w.Write([]byte(`{"errors": ["Forbidden: ` + r.Header.Get("DD-APPLICATION-KEY") + `"]}`))
	}))
	defer echo.Close()
	writeSecret(t, root, "team-a", map[string]string{"address": echo.URL})
	obs := src.Measure(context.Background(), at)
	if sent.Load() != "rotated-app-key" {
		t.Errorf("sent the app key %v, want the rotated one", sent.Load())
	}
	if obs.Err == nil || strings.Contains(obs.Err.Error(), "rotated-app-key") || !strings.Contains(obs.Err.Error(), "403") {
		t.Errorf("an answer echoing the key: %v", obs.Err)
	}
	// The file removed: the measurement is an Error naming it.
	_ = os.Remove(filepath.Join(root, "team-a", "app-key"))
	if obs := src.Measure(context.Background(), at); obs.Err == nil || !strings.Contains(obs.Err.Error(), "team-a/app-key") {
		t.Errorf("removed key: %v", obs.Err)
	}
}

// TestDefaultAddress: without an address the requests go to Datadog's
// API, which no test reaches: the address is only checked to be it.
func TestDefaultAddress(t *testing.T) {
	root := t.TempDir()
	writeSecret(t, root, "datadog", map[string]string{"api-key": apiKey, "app-key": appKey})
	writeSecret(t, root, "userinfo", map[string]string{"api-key": apiKey, "app-key": appKey, "address": "https://u:p@api.datadoghq.eu"})
	writeSecret(t, root, "ftp", map[string]string{"api-key": apiKey, "app-key": appKey, "address": "ftp://api.datadoghq.eu"})
	dir, _ := credentials.New(root, credentials.Options{})
	p := newProvider(t, datadog.Options{Credentials: dir})
	src, _, errs := p.Source(json.RawMessage(`{"query": "x"}`))
	if len(errs) > 0 || src == nil {
		t.Fatal(errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing is sent
	if obs := src.Measure(ctx, at); obs.Err == nil || !strings.Contains(obs.Err.Error(), "GET https://api.datadoghq.com/api/v1/query") {
		t.Errorf("default address: %v", obs.Err)
	}
	for _, name := range []string{"userinfo", "ftp"} {
		_, _, errs := p.Source(json.RawMessage(`{"query": "x", "secretRef": {"name": "` + name + `"}}`))
		if len(errs) != 1 || strings.Contains(errs[0].Message, "u:p") {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

// TestConfig: Argo's validation (validateIncomingProps and the CRD's
// enums), each problem on its field; unknown fields and wrong types too.
func TestConfig(t *testing.T) {
	p := newProvider(t, datadog.Options{CheckOnly: true})
	for _, tt := range []struct{ config, field, message string }{
		{`{}`, "provider.datadog.query", "Must have either a query or queries"},
		{`{"query": "x", "queries": {"a": "y"}, "apiVersion": "v2"}`, "provider.datadog.queries", "Cannot have both a query and queries"},
		{`{"queries": {"a": "y"}}`, "provider.datadog.queries", "API Version v1 only supports using the query parameter"},
		{`{"query": "x", "formula": "a", "apiVersion": "v2"}`, "provider.datadog.formula", "Formula are only valid when queries are set"},
		{`{"queries": {"a": "x", "b": "y"}, "apiVersion": "v2"}`, "provider.datadog.formula", "When multiple queries are provided you must include a formula."},
		{`{"query": "x", "aggregator": "sum"}`, "provider.datadog.aggregator", "Aggregator is not supported in v1"},
		{`{"query": "x", "aggregator": "median", "apiVersion": "v2"}`, "provider.datadog.aggregator", "aggregator must be one of"},
		{`{"query": "x", "apiVersion": "v3"}`, "provider.datadog.apiVersion", "apiVersion must be v1 or v2"},
		{`{"query": "x", "interval": "1d"}`, "provider.datadog.interval", "interval must be a duration"},
		{`{"query": "x", "requestTimeout": "not-a-duration", "apiVersion": "v2"}`, "provider.datadog.requestTimeout", "Could not parse the request timeout"},
		{`{"query": "x", "requestTimeout": "0s"}`, "provider.datadog.requestTimeout", "Request timeout must be a positive duration"},
		{`{"query": "x", "requestTimeout": "-5s"}`, "provider.datadog.requestTimeout", "Request timeout must be a positive duration"},
		{`{"query": "x", "secretRef": {"namespaced": true}}`, "provider.datadog.secretRef.name", "secret name is required for namespaced credentials"},
		{`{"query": "x", "qeury": "y"}`, "provider.datadog.qeury", "unknown"},
		{`{"query": 1}`, "provider.datadog.query", "string"},
		{`{"query": "x", "interval": 300}`, "provider.datadog.interval", "string"},
		{`{"queries": ["x"], "apiVersion": "v2"}`, "provider.datadog.queries", "object"},
		{`{"query": "x", "secretRef": "datadog"}`, "provider.datadog.secretRef", "object"},
		{`{"query": "x", "secretRef": {"name": "dd", "key": "api-key"}}`, "provider.datadog.secretRef.key", "unknown"},
	} {
		_, _, errs := p.Source(json.RawMessage(tt.config))
		if len(errs) == 0 || errs[0].Field != tt.field || !strings.Contains(strings.ToLower(errs[0].Message), strings.ToLower(tt.message)) {
			t.Errorf("%s: %v; want %s: %s", tt.config, errs, tt.field, tt.message)
		}
		if d := p.Decode(json.RawMessage(tt.config)); strings.Contains(tt.message, "unknown") || tt.message == "string" || tt.message == "object" {
			if len(d) == 0 {
				t.Errorf("Decode(%s): no problem", tt.config)
			}
		}
	}
	for _, good := range []string{
		`{"query": "x"}`,
		`{"query": "x", "apiVersion": "v2", "requestTimeout": "30s", "aggregator": "avg"}`,
		`{"queries": {"a": "x", "b": "y"}, "formula": "a + b", "apiVersion": "v2"}`,
		`{"query": "x", "secretRef": {"name": "dd-prod", "namespaced": true}}`,
	} {
		if src, _, errs := p.Source(json.RawMessage(good)); len(errs) > 0 || src != nil {
			t.Errorf("%s: %v (check only: no source)", good, errs)
		}
	}
}
