package graphite_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/graphite"
)

// at is the measurements' instant.
var at = time.Unix(1621348430, 0)

// backend is a Graphite stand-in: it records each request and answers
// with a recorded answer from testdata.
type backend struct {
	mu     sync.Mutex
	t      *testing.T
	srv    *httptest.Server
	status int
	file   string
	delay  time.Duration
	got    *url.URL
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

// sent is the last request's URL.
func (b *backend) sent() *url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, status, delay := b.t, b.file, b.status, b.delay
	u := *r.URL
	b.got = &u
	b.mu.Unlock()
	if r.Method != http.MethodGet {
		t.Errorf("method %s", r.Method)
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

func newProvider(t *testing.T, o graphite.Options) *graphite.Provider {
	t.Helper()
	p, err := graphite.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// config is a metric's provider.graphite with the address and query.
func config(address, query string) json.RawMessage {
	b, _ := json.Marshal(graphite.Metric{Address: address, Query: query})
	return b
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
func run(t *testing.T, p *graphite.Provider, config json.RawMessage, success, failure string) (analysis.Observation, outcome) {
	t.Helper()
	src, _, errs := p.Source(config)
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

const query = "target=sumSeries(app.http.*.*.count)&from=-2min"

// TestArgoCases holds each recorded answer to the result a condition sees
// and the phase Argo Rollouts v1.10.0 gives (metricproviders/graphite:
// APIClient.Query reads the first series' datapoints, Provider.Run calls
// no datapoints "no values found", processResponse keeps the non-null
// values as a []float64 and writes them with %f).
func TestArgoCases(t *testing.T) {
	const (
		ok    = "10.000000 in result" // Argo's tests' conditions
		notOK = "10.000000 not in result"
		first = "result[0] >= 0.1"
	)
	tests := []struct {
		name, file, success, failure string
		status                       int
		want                         outcome
		result                       []float64 // the result the conditions see, when measured
	}{
		// Argo: a value meets the condition, Successful; misses it, Failed.
		{"a number meets the condition: Successful", "number.json", ok, notOK, 200,
			outcome{phase: api.PhaseSuccessful, value: "[10.000000]"}, []float64{10}},
		{"a number misses it: Failed", "number.json", "result[0] < 5", "", 200,
			outcome{phase: api.PhaseFailed, value: "[10.000000]"}, []float64{10}},
		// Argo: the nulls are left out, the rest kept in order.
		{"a series with nulls: its non-null values", "series_nulls.json", "result[0] == 0.1 && result[1] == 0.25 && len(result) == 2", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[0.100000,0.250000]"}, []float64{0.1, 0.25}},
		// Argo's dataPoint.UnmarshalJSON: strings holding numbers are numbers.
		{"values as strings: numbers", "string_values.json", "result[0] == 10.5", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[10.500000]"}, []float64{10.5}},
		// Argo: only result[0] of the response, the first series.
		{"two series: the first one's", "two_targets.json", "len(result) == 2 && result[1] == 2", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[1.000000,2.000000]"}, []float64{1, 2}},
		// Argo: datapoints all null give an empty []float64, which a
		// condition indexing it cannot read: v1.10's nil-or-empty Error.
		{"all nulls: an empty result, Error on result[0]", "all_null.json", first, "", 200,
			outcome{phase: api.PhaseError, value: "[]", message: "metric result is nil or empty"}, []float64{}},
		{"all nulls: len(result) == 0 reads it", "all_null.json", "len(result) == 0", "", 200,
			outcome{phase: api.PhaseSuccessful, value: "[]"}, []float64{}},
		// Argo's Run: no datapoints at all is "no values found", an Error.
		{"no series: no values found", "empty.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "no values found"}, nil},
		{"a series without datapoints: no values found", "no_datapoints.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "no values found"}, nil},
		{"a series without the key: no values found", "no_datapoints_key.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "no values found"}, nil},
		{"null: no values found", "null.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "no values found"}, nil},
		// Argo's Query: a status of 400 or more is "error response: BODY".
		{"400: Error quoting the body", "error_400.txt", ok, notOK, 400,
			outcome{phase: api.PhaseError, message: "error response: Invalid target: unknown function sumSeriez"}, nil},
		{"500: Error quoting the body", "error_500.html", ok, notOK, 500,
			outcome{phase: api.PhaseError, message: "error response: <html><body><h1>Server Error (500)</h1>"}, nil},
		// Argo: a body json.Unmarshal refuses is an Error.
		{"a datapoint of one element: Error", "short_point.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "error unmarshaling data point"}, nil},
		{"a boolean value: Error", "bool_value.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "error unmarshaling value"}, nil},
		{"a string that is no number: Error", "string_not_number.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "error unmarshaling value"}, nil},
		{"a timestamp string that is no integer: Error", "bad_timestamp.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "error unmarshaling timestamp"}, nil},
		{"the second series malformed: Error, as Argo decodes them all", "second_malformed.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "error unmarshaling data point"}, nil},
		{"an object, not a list: Error", "object.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "the answer is not Graphite's JSON"}, nil},
		{"not JSON: Error", "not_json.html", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "the answer is not Graphite's JSON: invalid character '<'"}, nil},
		{"truncated JSON: Error", "truncated.json", ok, notOK, 200,
			outcome{phase: api.PhaseError, message: "the answer is not Graphite's JSON: unexpected end of JSON input"}, nil},
	}
	b := newBackend(t)
	p := newProvider(t, graphite.Options{Allow: []string{b.srv.URL}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.set(tt.file, tt.status, 0)
			obs, got := run(t, p, config(b.srv.URL, query), tt.success, tt.failure)
			if got.phase != tt.want.phase || got.value != tt.want.value || !strings.Contains(got.message, tt.want.message) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if tt.result != nil {
				v, ok := obs.Value.([]float64)
				if !ok || len(v) != len(tt.result) {
					t.Fatalf("the result is %#v, want %#v", obs.Value, tt.result)
				}
				for i := range v {
					if v[i] != tt.result[i] {
						t.Errorf("the result is %v, want %v", v, tt.result)
					}
				}
			}
		})
	}
}

// TestBounds: an answer over the bytes or the values a measurement may
// have, or slower than the timeout, is an Error naming the bound, never a
// crash or a hang.
func TestBounds(t *testing.T) {
	b := newBackend(t)
	p := newProvider(t, graphite.Options{Allow: []string{b.srv.URL}, MaxResultValues: 3, MaxTimeout: 200 * time.Millisecond})
	for _, tt := range []struct {
		name, file string
		delay      time.Duration
		want       string
	}{
		{"too large", "too_large.json", 0, "the answer is longer than the 68608 bytes"},
		{"too many datapoints", "many_points.json", 0, "more than the 3 datapoints"},
		{"slow", "number.json", 2 * time.Second, "no answer within the request timeout (200ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b.set(tt.file, 200, tt.delay)
			start := time.Now()
			_, got := run(t, p, config(b.srv.URL, query), "true", "")
			if got.phase != api.PhaseError || !strings.Contains(got.message, tt.want) {
				t.Errorf("got %+v, want an Error with %q", got, tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestRequest: GET ADDRESS/render with the query's parameters, white space
// removed and format=json (Argo's), from and until sent as the Unix times
// they mean at the measurement's instant.
func TestRequest(t *testing.T) {
	b := newBackend(t)
	b.set("number.json", 200, 0)
	p := newProvider(t, graphite.Options{Allow: []string{b.srv.URL}})
	for _, tt := range []struct {
		name, path, query, target, from, until string
	}{
		{"relative from", "", "target=sumSeries(\n  app.http.*.*.count\n)\n&from=-2min", "sumSeries(app.http.*.*.count)", "-120", "0"},
		{"no from: Graphite's day", "", "target=a.b", "a.b", "-86400", "0"},
		{"from and until", "/graphite/", "target=a.b&from=now-1h&until=-5min", "a.b", "-3600", "-300"},
		{"units", "/graphite", "target=a.b&from=-1d-2h&until=-30s", "a.b", strconv.Itoa(-26 * 3600), "-30"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs, got := run(t, p, config(b.srv.URL+tt.path, tt.query), "true", "")
			if got.phase != api.PhaseSuccessful {
				t.Fatalf("%+v %v", got, obs.Err)
			}
			u := b.sent()
			wantPath := strings.TrimSuffix(tt.path, "/") + "/render"
			if u.Path != wantPath {
				t.Errorf("path %s, want %s", u.Path, wantPath)
			}
			q := u.Query()
			if q.Get("target") != tt.target || q.Get("format") != "json" {
				t.Errorf("query %s", u.RawQuery)
			}
			rel := func(s string) string {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return s
				}
				return strconv.FormatInt(n-at.Unix(), 10)
			}
			if rel(q.Get("from")) != tt.from || rel(q.Get("until")) != tt.until {
				t.Errorf("from %s until %s, want %s and %s from the instant", q.Get("from"), q.Get("until"), tt.from, tt.until)
			}
		})
	}
}

// TestPast: a query whose window is not relative to now cannot be
// measured in the past: PresentOnly says so up front, and a measurement
// of the past is an Error.
func TestPast(t *testing.T) {
	b := newBackend(t)
	b.set("number.json", 200, 0)
	p := newProvider(t, graphite.Options{Allow: []string{b.srv.URL}})
	if why := p.PresentOnly(config(b.srv.URL, query)); why != "" {
		t.Errorf("a relative window: %s", why)
	}
	fixed := config(b.srv.URL, "target=a.b&from=yesterday")
	if why := p.PresentOnly(fixed); !strings.Contains(why, "neither relative to now") {
		t.Errorf("a fixed window: %q", why)
	}
	src, _, _ := p.Source(fixed)
	if obs := src.Measure(context.Background(), time.Now().Add(-time.Hour)); obs.Err == nil {
		t.Error("a fixed window measured an hour ago")
	}
	if obs := src.Measure(context.Background(), time.Now()); obs.Err != nil {
		t.Errorf("a fixed window measured now: %v", obs.Err)
	}
	if q := b.sent().Query(); q.Get("from") != "yesterday" || q.Has("until") {
		t.Errorf("a fixed window is sent as it is: %s", b.sent().RawQuery)
	}
}
