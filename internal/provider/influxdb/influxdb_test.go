package influxdb_test

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
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/provider/providertest"
)

// token and org are the test's credentials. No test sends them anywhere
// but a loopback stand-in.
const (
	token = "s3cr3t-influx-token-0123456789"
	org   = "my-org"
)

// at is the measurements' instant.
var at = time.Date(2020, 9, 2, 19, 53, 55, 0, time.UTC)

// backend is an InfluxDB stand-in: it checks each request as Argo's client
// sends it (the path, the organization, the token, the body) and answers
// with a recorded answer from testdata.
type backend struct {
	mu     sync.Mutex
	t      *testing.T
	srv    *httptest.Server
	status int
	file   string
	ctype  string
	header http.Header
	delay  time.Duration
	token  string
	// data, when set, is the answer instead of the file's.
	data []byte
	// got is the last request's body.
	got string
}

func newBackend(t *testing.T) *backend {
	b := &backend{t: t, status: 200, token: token}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// set changes what the stand-in answers.
func (b *backend) set(file string, status int, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.status, b.delay, b.ctype, b.header, b.data = file, status, delay, "", nil, nil
	switch filepath.Ext(file) {
	case ".csv":
		b.ctype = "text/csv; charset=utf-8"
	case ".json":
		b.ctype = "application/json; charset=utf-8"
	case ".html":
		b.ctype = "text/html"
	default:
		b.ctype = "text/plain"
	}
}

func (b *backend) sent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, status, delay, ctype, want, data := b.t, b.file, b.status, b.delay, b.ctype, b.token, b.data
	b.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/query" || r.URL.Query().Get("org") != org {
		t.Errorf("request: %s %s", r.Method, r.URL)
	}
	if r.Header.Get("Authorization") != "Token "+want || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", r.Header)
	}
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.got = string(body)
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
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// creds writes a credentials directory whose Secret name sends to address.
func creds(t *testing.T, name, address string) (*credentials.Dir, string) {
	t.Helper()
	root := t.TempDir()
	writeSecret(t, root, name, map[string]string{"address": address, "authToken": token, "org": org})
	d, err := credentials.New(root, credentials.Options{MaxAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	return d, root
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

func newProvider(t *testing.T, o influxdb.Options) *influxdb.Provider {
	t.Helper()
	p, err := influxdb.New(o)
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
func run(t *testing.T, p *influxdb.Provider, config, success, failure string) (analysis.Observation, outcome) {
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

const query = `{"query": "from(bucket: \"app\") |> range(start: -5m) |> filter(fn: (r) => r._field == \"success_rate\") |> last()"}`

// TestArgoCases holds each recorded answer to the result a condition sees
// and the phase Argo Rollouts v1.10.0 gives (metricproviders/influxdb:
// processResponse appends every record's Value(), the _value column as
// influxdb-client-go types it, and evaluates the list; no record is an
// Error; the client's Query error is an Error with its message).
func TestArgoCases(t *testing.T) {
	const ok, notOK = "result[0] >= 0.99", "result[0] < 0.99"
	tests := []struct {
		name, file       string
		status           int
		success, failure string
		want             outcome
	}{
		// One double: [0.995], as fmt.Sprint writes the list.
		{"a number", "value.csv", 200, ok, notOK, outcome{phase: api.PhaseSuccessful, value: "[0.995]"}},
		{"a number that fails", "value.csv", 200, "result[0] >= 0.999", "result[0] < 0.999", outcome{phase: api.PhaseFailed, value: "[0.995]"}},
		// Every record of every table, in order.
		{"an array", "array.csv", 200, "all(result, {# >= 0.9})", "any(result, {# < 0.9})", outcome{phase: api.PhaseSuccessful, value: "[0.98 0.995 0.9]"}},
		{"an array that fails", "array.csv", 200, "len(result) == 3 && result[2] > 0.95", "result[2] <= 0.95", outcome{phase: api.PhaseFailed, value: "[0.98 0.995 0.9]"}},
		// A long is an int64.
		{"an integer", "long.csv", 200, "result[0] == 42", "result[0] != 42", outcome{phase: api.PhaseSuccessful, value: "[42]"}},
		// A string, quoted in the CSV.
		{"a string", "string.csv", 200, `result[0] == 'said "ok", twice'`, "", outcome{phase: api.PhaseSuccessful, value: `[said "ok", twice]`}},
		// An empty _value without a default is nil: [nil] is not empty,
		// so conditions see it, and isNil tells it.
		{"null", "null.csv", 200, "result[0] == nil", "result[0] != nil", outcome{phase: api.PhaseSuccessful, value: "[<nil>]"}},
		{"null compared", "null.csv", 200, ok, notOK, outcome{phase: api.PhaseError, value: "[<nil>]", message: `could not evaluate successCondition "result[0] >= 0.99": invalid operation: <nil> >= float64`}},
		// No record: "no results returned from flux query".
		{"no data: a table without records", "empty_table.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from flux query"}},
		{"no data: an empty answer", "empty.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from flux query"}},
		{"no content", "empty.csv", 204, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from flux query"}},
		// Error statuses: the client's http.Error text.
		{"401", "error_401.json", 401, ok, notOK, outcome{phase: api.PhaseError, message: "unauthorized: unauthorized access"}},
		{"400", "error_400.json", 400, ok, notOK, outcome{phase: api.PhaseError, message: "invalid: error @1:1-1:4: undefined identifier foo"}},
		{"500", "error_500.json", 500, ok, notOK, outcome{phase: api.PhaseError, message: "internal error: An internal error has occurred - check server logs"}},
		{"503 not JSON", "error_503.txt", 503, ok, notOK, outcome{phase: api.PhaseError, message: "503 Service Unavailable: upstream connect error or disconnect/reset before headers"}},
		{"429 empty", "empty.csv", 429, ok, notOK, outcome{phase: api.PhaseError, message: "Unexpected status code 429"}},
		{"500 JSON not JSON", "not_csv.html", 500, ok, notOK, outcome{phase: api.PhaseError}},
		// Malformed answers: an Error in Argo when nothing was read
		// before the fault ("no results returned from flux query"); in
		// canaryd always, with the reason (docs/differences.md).
		// Rows of one field are skipped, as the client skips them.
		{"not CSV", "not_csv.html", 200, ok, notOK, outcome{phase: api.PhaseError, message: "no results returned from flux query"}},
		{"CSV without annotations", "no_annotations.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "parsing error, annotations not found"}},
		{"an error table", "error_table.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "runtime error @5:6-5:38: filter: type conflict: string != float,897"}},
		{"a short row", "malformed.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "parsing error, row has different number of columns than the table: 4 vs 5"}},
		{"truncated", "truncated.csv", 200, ok, notOK, outcome{phase: api.PhaseError, message: "the answer is not valid CSV: line 6: a bare \" in a field that is not quoted"}},
	}
	b := newBackend(t)
	d, _ := creds(t, "influxdb", b.srv.URL)
	p := newProvider(t, influxdb.Options{Credentials: d})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.set(tt.file, tt.status, 0)
			if tt.file == "not_csv.html" && tt.status == 500 {
				b.mu.Lock()
				b.ctype = "application/json"
				b.mu.Unlock()
			}
			_, got := run(t, p, query, tt.success, tt.failure)
			if got.phase != tt.want.phase || got.value != tt.want.value || (tt.want.message != "" && got.message != tt.want.message) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if strings.Contains(got.message, token) {
				t.Errorf("the token is in the message %q", got.message)
			}
		})
	}
}

// TestRequest: the query goes as Argo's client sends it, with the
// measurement's instant as "now".
func TestRequest(t *testing.T) {
	b := newBackend(t)
	b.set("value.csv", 200, 0)
	d, _ := creds(t, "influxdb", b.srv.URL+"/")
	p := newProvider(t, influxdb.Options{Credentials: d})
	run(t, p, query, "true", "")
	var got struct {
		Query, Type, Now string
		Dialect          struct {
			Annotations []string
			Delimiter   string
			Header      bool
		}
	}
	if err := json.Unmarshal([]byte(b.sent()), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Query, `from(bucket: "app")`) || got.Type != "flux" || got.Now != "2020-09-02T19:53:55Z" ||
		strings.Join(got.Dialect.Annotations, ",") != "datatype,group,default" || got.Dialect.Delimiter != "," || !got.Dialect.Header {
		t.Errorf("sent %s", b.sent())
	}
}

// TestBounds: an answer of too many values or too many bytes, and one
// that is too slow, are Errors with their reason.
func TestBounds(t *testing.T) {
	b := newBackend(t)
	d, _ := creds(t, "influxdb", b.srv.URL)

	p := newProvider(t, influxdb.Options{Credentials: d, MaxResultValues: 2})
	b.set("array.csv", 200, 0)
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "more than the 2 values") {
		t.Errorf("too many values: %+v", got)
	}

	// A value's answer, and an 800 kB one, over the 1 value's bound.
	head := "#datatype,string,long,double\n#group,false,false,false\n#default,_result,,\n,result,table,_value\n"
	b.set("too_large.csv", 200, 0)
	b.mu.Lock()
	b.data = []byte(head + strings.Repeat(",,0,0.5\n", 100_000))
	b.mu.Unlock()
	p = newProvider(t, influxdb.Options{Credentials: d, MaxResultValues: 1})
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "longer than the") {
		t.Errorf("too large: %+v", got)
	}

	p = newProvider(t, influxdb.Options{Credentials: d, MaxTimeout: 100 * time.Millisecond})
	b.set("value.csv", 200, 5*time.Second)
	start := time.Now()
	if _, got := run(t, p, query, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "no answer within the timeout (100ms") {
		t.Errorf("slow: %+v", got)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("slow: took %s", time.Since(start))
	}
}

// TestConfiguration: a configuration of the wrong shape, an empty query,
// a profile that is not a Secret's name and missing credentials are
// problems naming the field, never showing the token.
func TestConfiguration(t *testing.T) {
	b := newBackend(t)
	d, root := creds(t, "influxdb", b.srv.URL)
	writeSecret(t, root, "no-token", map[string]string{"address": b.srv.URL, "org": org})
	p := newProvider(t, influxdb.Options{Credentials: d})
	for _, tt := range []struct{ config, field, message string }{
		{`{"query": 5}`, "provider.influxdb.query", ""},
		{`{"query": "x", "bucket": "app"}`, "provider.influxdb.bucket", ""},
		{`{"profile": ["a"], "query": "x"}`, "provider.influxdb.profile", ""},
		{`{"query": " "}`, "provider.influxdb.query", "the query is empty"},
		{`{"query": "x", "profile": "Not_A_Name"}`, "provider.influxdb.profile", "not a Secret's name"},
		{`{"query": "x", "profile": "missing"}`, "provider.influxdb.profile", `no Secret "missing"`},
		{`{"query": "x", "profile": "no-token"}`, "provider.influxdb.profile", "no-token/authToken"},
	} {
		src, _, errs := p.Source(json.RawMessage(tt.config))
		if src != nil || len(errs) == 0 || errs[0].Field != tt.field || !strings.Contains(errs[0].Message, tt.message) {
			t.Errorf("Source(%s) = %v; want a problem on %s: %s", tt.config, errs, tt.field, tt.message)
		}
		for _, e := range errs {
			if strings.Contains(e.Message, token) {
				t.Errorf("the token is in %q", e.Message)
			}
		}
	}
	none := newProvider(t, influxdb.Options{})
	if _, _, errs := none.Source(json.RawMessage(query)); len(errs) != 1 || errs[0].Field != "provider.influxdb" || !strings.Contains(errs[0].Message, "--credentials-dir") {
		t.Errorf("no directory: %v", errs)
	}
	check := newProvider(t, influxdb.Options{CheckOnly: true})
	if src, _, errs := check.Source(json.RawMessage(query)); src != nil || len(errs) != 0 {
		t.Errorf("check only: %v %v", src, errs)
	}
}

// TestProfileAndRotation: profile picks the Secret; a rotated token
// applies at the next measurement, without a restart.
func TestProfileAndRotation(t *testing.T) {
	b := newBackend(t)
	b.set("value.csv", 200, 0)
	d, root := creds(t, "influx-eu", b.srv.URL)
	p := newProvider(t, influxdb.Options{Credentials: d})
	config := `{"profile": "influx-eu", "query": "from(bucket: \"app\") |> range(start: -5m)"}`
	if _, got := run(t, p, config, "true", ""); got.phase != api.PhaseSuccessful {
		t.Fatalf("profile: %+v", got)
	}
	writeSecret(t, root, "influx-eu", map[string]string{"authToken": "rotated-token"})
	b.mu.Lock()
	b.token = "rotated-token"
	b.mu.Unlock()
	if _, got := run(t, p, config, "true", ""); got.phase != api.PhaseSuccessful {
		t.Errorf("rotated: %+v", got)
	}
}

// TestUnreachable: a transport error is an Error naming the address,
// never the token.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	d, _ := creds(t, "influxdb", addr)
	p := newProvider(t, influxdb.Options{Credentials: d})
	_, got := run(t, p, query, "true", "")
	if got.phase != api.PhaseError || !strings.HasPrefix(got.message, "POST "+addr+"/api/v2/query: ") || strings.Contains(got.message, token) {
		t.Errorf("got %+v", got)
	}
}

// TestConformance runs the providers' conformance suite
// (providertest) over the provider, with credentials that send it to the
// suite's backend.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Registry: func(backend string) *provider.Registry {
			d, _ := creds(t, "influxdb", backend)
			return provider.NewRegistry().Register("influxdb", newProvider(t, influxdb.Options{Credentials: d}))
		},
		Configs: map[string]func(string) json.RawMessage{
			"influxdb": func(string) json.RawMessage { return json.RawMessage(query) },
		},
	})
}
