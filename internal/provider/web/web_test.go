package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// newProvider returns a provider that allows the given prefixes, closed
// with the test.
func newProvider(t *testing.T, allow ...string) *Provider {
	t.Helper()
	p, err := New(Options{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// build compiles a configuration given as JSON.
func build(t *testing.T, p *Provider, config string) (analysis.Source, []api.FieldError) {
	t.Helper()
	src, md, errs := p.Source(json.RawMessage(config))
	if md != nil {
		t.Errorf("web metrics carry no metadata, got %v", md)
	}
	return src, errs
}

func measure(t *testing.T, p *Provider, config string) analysis.Observation {
	t.Helper()
	src, errs := build(t, p, config)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", config, errs)
	}
	return src.Measure(context.Background(), time.Now())
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const body = `{"verdict":"pass","score":0.97,"ok":true,"items":[{"v":1},{"v":2}],"empty":[],"nothing":null}`

func TestMeasureReadsJSONAsArgo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL)
	url := jsonString(srv.URL + "/status")

	for _, tt := range []struct {
		path    string
		value   any
		display string
		err     string
	}{
		{path: "", display: `{"empty":[],"items":[{"v":1},{"v":2}],"nothing":null,"ok":true,"score":0.97,"verdict":"pass"}`},
		{path: "{$}", display: `{"empty":[],"items":[{"v":1},{"v":2}],"nothing":null,"ok":true,"score":0.97,"verdict":"pass"}`},
		{path: "{$.verdict}", value: "pass", display: `"pass"`},
		{path: "{.verdict}", value: "pass", display: `"pass"`},
		{path: "{$['verdict']}", value: "pass", display: `"pass"`},
		{path: "{$.score}", value: 0.97, display: `0.97`},
		{path: "{$.ok}", value: true, display: `true`},
		{path: "{$.nothing}", value: nil, display: `null`},
		{path: "{$.items[*].v}", value: 1.0, display: `1`},
		{path: "{$.items[-1].v}", value: 2.0, display: `2`},
		{path: "{$.items}", display: `[{"v":1},{"v":2}]`},
		{path: "{$.missing}", err: "Could not find JSONPath in body: missing is not found"},
		{path: "{$.items[5]}", err: "Could not find JSONPath in body: array index out of bounds: index 5, length 2"},
		{path: "{$.empty[*]}", err: "result of web metric produced no value"},
	} {
		obs := measure(t, p, `{"url": `+url+`, "jsonPath": `+jsonString(tt.path)+`}`)
		if tt.err != "" {
			if obs.Err == nil || obs.Err.Error() != tt.err {
				t.Errorf("%s: error %v, want %q", tt.path, obs.Err, tt.err)
			}
			continue
		}
		if obs.Err != nil || obs.Display != tt.display {
			t.Errorf("%s: got %q (%v), want %q", tt.path, obs.Display, obs.Err, tt.display)
		}
		if tt.value != nil && obs.Value != tt.value {
			t.Errorf("%s: value %#v, want %#v", tt.path, obs.Value, tt.value)
		}
	}
}

func TestMethodsHeadersAndBodies(t *testing.T) {
	type seen struct{ method, body, contentType, auth string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, string(b), r.Header.Get("Content-Type"), r.Header.Get("Authorization")}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL+"/api/")
	url := jsonString(srv.URL + "/api/check")

	for _, tt := range []struct {
		config string
		want   seen
	}{
		{`{"url": ` + url + `}`, seen{method: "GET"}},
		{`{"url": ` + url + `, "method": "GET", "headers": [{"key": "Authorization", "value": "Bearer s3cret"}]}`, seen{method: "GET", auth: "Bearer s3cret"}},
		{`{"url": ` + url + `, "method": "POST", "body": "x=1"}`, seen{method: "POST", body: "x=1"}},
		{`{"url": ` + url + `, "method": "PUT", "jsonBody": {"b": [1, 2],  "a": "x"}}`, seen{method: "PUT", body: `{"b":[1,2],"a":"x"}`, contentType: "application/json"}},
	} {
		obs := measure(t, p, tt.config)
		if obs.Err != nil || obs.Display != `{"ok":true}` {
			t.Errorf("%s: %q %v", tt.config, obs.Display, obs.Err)
		}
		if g := <-got; g != tt.want {
			t.Errorf("%s: the server saw %+v, want %+v", tt.config, g, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	var slow atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"verdict":"pass"}`)
		case "/text":
			_, _ = io.WriteString(w, "pass")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/slow":
			if slow.Load() {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
		case "/big":
			_, _ = io.WriteString(w, `"`+strings.Repeat("x", MaxResponseBytes)+`"`)
		}
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL)
	url := func(path string) string { return jsonString(srv.URL + path + "?token=s3cret") }

	obs := measure(t, p, `{"url": `+url("/fail")+`, "jsonPath": "{$.verdict}"}`)
	if obs.Err == nil || obs.Err.Error() != "received non 2xx response code: 503" {
		t.Errorf("non-2xx: %v", obs.Err)
	}

	// Not JSON: the body is the result, for the conditions to decide
	// (Argo's fix of #4535), not a Successful measurement.
	obs = measure(t, p, `{"url": `+url("/text")+`}`)
	if obs.Err != nil || obs.Value != "pass" || obs.Display != "pass" {
		t.Errorf("text body: %#v", obs)
	}
	obs = measure(t, p, `{"url": `+url("/empty")+`}`)
	if obs.Err != nil || obs.Value != "" {
		t.Errorf("empty body: %#v", obs)
	}

	obs = measure(t, p, `{"url": `+url("/big")+`}`)
	if obs.Err == nil || !strings.Contains(obs.Err.Error(), "longer than the 1048576 bytes") {
		t.Errorf("a body over the cap: %v", obs.Err)
	}

	slow.Store(true)
	start := time.Now()
	obs = measure(t, p, `{"url": `+url("/slow")+`, "timeoutSeconds": 1}`)
	if obs.Err == nil || !strings.Contains(obs.Err.Error(), "deadline exceeded") {
		t.Errorf("timeout: %v", obs.Err)
	}
	if time.Since(start) > 8*time.Second {
		t.Errorf("a 1 s timeout took %s", time.Since(start))
	}
	if strings.Contains(obs.Err.Error(), "s3cret") {
		t.Errorf("the error shows the URL's query: %v", obs.Err)
	}

	// A source honours its caller's context too.
	src, _ := build(t, p, `{"url": `+url("/slow")+`}`)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if obs := src.Measure(ctx, time.Now()); obs.Err == nil {
		t.Error("a cancelled measurement succeeded")
	}
}

func TestMaxTimeoutCapsTheMetrics(t *testing.T) {
	p, err := New(Options{Allow: []string{"http://x/"}, MaxTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for config, want := range map[string]time.Duration{
		`{"url": "http://x/a"}`:                         2 * time.Second,
		`{"url": "http://x/a", "timeoutSeconds": 1}`:    time.Second,
		`{"url": "http://x/a", "timeoutSeconds": 3600}`: 2 * time.Second,
	} {
		src, errs := build(t, p, config)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := src.(*source).r.timeout; got != want {
			t.Errorf("%s: timeout %s, want %s", config, got, want)
		}
	}
	if p, _ := New(Options{Allow: []string{"http://x/"}}); true {
		src, _ := build(t, p, `{"url": "http://x/a"}`)
		if got := src.(*source).r.timeout; got != DefaultTimeout {
			t.Errorf("default timeout %s", got)
		}
	}
}

func TestAllowList(t *testing.T) {
	var hits atomic.Int32
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, `{"where":"allowed"}`)
	}))
	defer allowed.Close()
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(100)
		_, _ = io.WriteString(w, `{"where":"outside"}`)
	}))
	defer outside.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok/inside":
			http.Redirect(w, r, "/ok/target", http.StatusFound)
		case "/ok/target":
			_, _ = io.WriteString(w, `{"where":"target"}`)
		case "/ok/outside":
			http.Redirect(w, r, outside.URL+"/x", http.StatusFound)
		case "/ok/up":
			http.Redirect(w, r, "/admin", http.StatusFound)
		case "/ok/parent":
			// The parent of the prefix "/ok/", which it does not allow.
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/ok/loop":
			http.Redirect(w, r, "/ok/loop", http.StatusFound)
		}
	}))
	defer redirector.Close()

	// No prefix: every web metric is refused, naming the flag.
	_, errs := build(t, newProvider(t), `{"url": `+jsonString(allowed.URL)+`}`)
	if len(errs) != 1 || errs[0].Field != "provider.web.url" || !strings.Contains(errs[0].Message, "--web-allow") {
		t.Errorf("without --web-allow: %v", errs)
	}

	p := newProvider(t, allowed.URL+"/api", redirector.URL+"/ok/")
	for _, u := range []string{
		outside.URL + "/api",
		allowed.URL + "/apix",
		allowed.URL + "/api/../admin",
		allowed.URL + "/api/%2e%2e/admin",
		redirector.URL + "/ok",
		redirector.URL + "/o%6b",
		strings.Replace(allowed.URL, "http://", "http://user:pw@", 1) + "/api",
		strings.Replace(allowed.URL, "http://", "https://", 1) + "/api",
		"file:///etc/passwd",
	} {
		_, errs := build(t, p, `{"url": `+jsonString(u)+`}`)
		if len(errs) != 1 || errs[0].Field != "provider.web.url" || !strings.Contains(errs[0].Message, "refused") {
			t.Errorf("%s: %v", u, errs)
		}
		if len(errs) == 1 && strings.Contains(errs[0].Message, "pw") {
			t.Errorf("the refusal shows the URL's password: %v", errs)
		}
	}
	if obs := measure(t, p, `{"url": `+jsonString(allowed.URL+"/api/v1")+`}`); obs.Err != nil {
		t.Errorf("an allowed URL: %v", obs.Err)
	}
	// A spelling of the host that normalises to the allowed one.
	if obs := measure(t, p, `{"url": `+jsonString(strings.Replace(allowed.URL, "127.0.0.1", "127.0.0.1.", 1)+"/api")+`}`); obs.Err != nil {
		t.Errorf("the allowed host with a trailing dot: %v", obs.Err)
	}

	if obs := measure(t, p, `{"url": `+jsonString(redirector.URL+"/ok/inside")+`}`); obs.Err != nil || obs.Display != `{"where":"target"}` {
		t.Errorf("a redirect within the allow-list: %q %v", obs.Display, obs.Err)
	}
	for path, want := range map[string]string{
		"/ok/outside": "redirect refused",
		"/ok/up":      "redirect refused",
		"/ok/parent":  "redirect refused",
		"/ok/loop":    "stopped after 5 redirects",
	} {
		obs := measure(t, p, `{"url": `+jsonString(redirector.URL+path)+`}`)
		if obs.Err == nil || !strings.Contains(obs.Err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, obs.Err, want)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("the allowed server had %d hits (100 per hit outside the list), want 2", n)
	}

	if _, err := New(Options{Allow: []string{"http://x/a?q=1"}}); err == nil || strings.HasPrefix(err.Error(), "webhook") {
		t.Errorf("a prefix with a query: %v", err)
	}
}

func TestHTTPSProxyIgnored(t *testing.T) {
	var proxied atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(true)
		_, _ = io.WriteString(w, `{"where":"proxy"}`)
	}))
	defer proxy.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"where":"target"}`)
	}))
	defer target.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	p := newProvider(t, target.URL)
	obs := measure(t, p, `{"url": `+jsonString(target.URL+"/")+`}`)
	if obs.Err != nil || obs.Display != `{"where":"target"}` || proxied.Load() {
		t.Errorf("with HTTP_PROXY set: %q %v, proxied %v", obs.Display, obs.Err, proxied.Load())
	}
}

func TestConfigProblems(t *testing.T) {
	p := newProvider(t, "http://x/")
	for _, tt := range []struct {
		config string
		want   []api.FieldError
	}{
		{`{"url": "http://x/", "nope": 1}`, []api.FieldError{{Field: "provider.web.nope", Message: "unknown field"}}},
		{`{"url": 3, "timeoutSeconds": "x", "insecure": "yes"}`, []api.FieldError{
			{Field: "provider.web.insecure", Message: "must be true or false, got a string"},
			{Field: "provider.web.timeoutSeconds", Message: "must be an integer, got a string"},
			{Field: "provider.web.url", Message: "must be a string, got a number (quote the value in YAML)"},
		}},
		{`{}`, []api.FieldError{{Field: "provider.web.url", Message: "url must be specified"}}},
		{`[]`, []api.FieldError{{Field: "provider.web", Message: "must be an object, got a list"}}},
		{`{"url": "http://x/", "method": "DELETE"}`, []api.FieldError{{Field: "provider.web.method", Message: `method must be GET, POST or PUT (Argo's web provider methods), got "DELETE"`}}},
		{`{"url": "http://x/", "body": "b"}`, []api.FieldError{{Field: "provider.web.body", Message: "Body/JSONBody can only be used with POST or PUT WebMetric Method types"}}},
		{`{"url": "http://x/", "method": "POST", "body": "b", "jsonBody": {}}`, []api.FieldError{{Field: "provider.web.body", Message: "use either Body or JSONBody; both cannot exists for WebMetric payload"}}},
		{`{"url": "http://x/", "method": "POST", "jsonBody": [1]}`, []api.FieldError{{Field: "provider.web.jsonBody", Message: "must be an object"}}},
		{`{"url": "http://x/", "timeoutSeconds": -1}`, []api.FieldError{{Field: "provider.web.timeoutSeconds", Message: "timeoutSeconds must not be negative (0 means the default, 10s)"}}},
		{`{"url": "http://x/", "headers": [{"key": "Host", "value": "evil"}, {"key": "X-Token", "value": "a\nb-s3cret"}, {"key": "bad key", "value": "v"}]}`, []api.FieldError{
			{Field: "provider.web.headers[0].key", Message: "a Host header is refused: it would send the request to another site than the allowed URL names; put the host in url"},
			{Field: "provider.web.headers[1].value", Message: "invalid HTTP header value: it must not contain control characters such as line breaks"},
			{Field: "provider.web.headers[2].key", Message: `invalid HTTP header name "bad key"`},
		}},
		{`{"url": "http://x/", "headers": [{"name": "a"}]}`, []api.FieldError{{Field: "provider.web.headers[0].name", Message: "unknown field"}}},
		{`{"url": "http://x/", "headers": [{"key": "a", "value": 1}], "jsonBody": "x", "method": "POST"}`, []api.FieldError{
			{Field: "provider.web.headers[0].value", Message: "must be a string, got a number (quote the value in YAML)"},
			{Field: "provider.web.jsonBody", Message: "must be an object"},
		}},
		{`{"url": "http://x/", "authentication": {"oauth2": {}}}`, []api.FieldError{{Field: "provider.web.authentication",
			Message: "authentication is not supported by canaryd's web provider (Argo uses only its oauth2 here): send a bearer token in headers, from a secret argument"}}},
	} {
		_, errs := build(t, p, tt.config)
		if len(errs) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.config, errs, tt.want)
			continue
		}
		for i := range errs {
			if errs[i] != tt.want[i] {
				t.Errorf("%s: got %v, want %v", tt.config, errs[i], tt.want[i])
			}
		}
	}
}

func TestJSONPathSubset(t *testing.T) {
	for _, ok := range []string{"", "{$}", "{.}", "{$.a}", "{ $.a.b }", "{$['a b'].c}", `{$["x"][0]}`, "{$.a[*]}", "{$.a.*}", "{$.a[-1]}", "{.a-b_c}"} {
		if _, err := parseJSONPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"$.a", "{$.a}{$.b}", "x{$.a}", "{$..a}", "{$.a[?(@.x>1)]}", "{$.a[0:2]}", "{$.a[0,1]}", "{range .items[*]}", "{$.a[}", "{$.a b}"} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	if _, err := parseJSONPath("{" + strings.Repeat(".a", maxJSONPathSteps+1) + "}"); err == nil {
		t.Error("a path over the step bound was accepted")
	}
}

func TestConnectionsPerHostAreCapped(t *testing.T) {
	var active, most atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		_, _ = io.WriteString(w, `1`)
	}))
	defer srv.Close()
	p := newProvider(t, srv.URL)
	src, errs := build(t, p, `{"url": `+jsonString(srv.URL+"/")+`, "timeoutSeconds": 30}`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const requests = MaxConnsPerHost + 8
	done := make(chan analysis.Observation, requests)
	for range requests {
		go func() { done <- src.Measure(context.Background(), time.Now()) }()
	}
	// Wait until the cap is reached, then a little for any request beyond it.
	deadline := time.Now().Add(10 * time.Second)
	for active.Load() < MaxConnsPerHost && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	for range requests {
		if obs := <-done; obs.Err != nil {
			t.Error(obs.Err)
		}
	}
	if m := most.Load(); m != MaxConnsPerHost {
		t.Errorf("%d requests at once on one host, want the cap, %d", m, MaxConnsPerHost)
	}
}

// A check-only provider (canaryd validate) checks the configuration, not
// the url against an allow-list, and builds nothing to run.
func TestCheckOnly(t *testing.T) {
	p, err := New(Options{CheckOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	src, errs := build(t, p, `{"url": "https://anywhere.example/x", "method": "POST", "jsonBody": {"a": 1}}`)
	if src != nil || len(errs) > 0 {
		t.Errorf("a valid metric: source %v, problems %v", src, errs)
	}
	if _, errs := build(t, p, `{"url": "https://anywhere.example/x", "body": "b"}`); len(errs) != 1 || errs[0].Field != "provider.web.body" {
		t.Errorf("a body with GET: %v", errs)
	}
}

// The command line's provider (run, backtest) allows every http or https
// url unless --web-allow narrows it; validate checks the url against
// --web-allow only when it is given; serve's, with no prefix, refuses all.
func TestAllowOnTheCommandLine(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       Options
		url     string
		refused string
	}{
		{"serve, no prefix", Options{}, "https://anywhere.example/x", "web metrics are disabled"},
		{"command line, no prefix: any https", Options{AnyURL: true}, "https://anywhere.example/x", ""},
		{"command line, no prefix: any http", Options{AnyURL: true}, "http://10.0.0.1:8080/health", ""},
		{"command line, no prefix: not ftp", Options{AnyURL: true}, "ftp://anywhere.example/x", "not an http or https URL"},
		{"command line, no prefix: no credentials", Options{AnyURL: true}, "https://u:p@anywhere.example/x", "credentials"},
		{"command line, a prefix narrows it", Options{AnyURL: true, Allow: []string{"https://ok.example"}}, "https://anywhere.example/x", "allowed prefix"},
		{"command line, within the prefix", Options{AnyURL: true, Allow: []string{"https://ok.example"}}, "https://ok.example/x", ""},
		{"validate, a prefix given", Options{CheckOnly: true, Allow: []string{"https://ok.example"}}, "https://anywhere.example/x", "allowed prefix"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer p.CloseIdleConnections()
			_, errs := build(t, p, `{"url": "`+tt.url+`"}`)
			switch {
			case tt.refused == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tt.refused != "" && (len(errs) != 1 || errs[0].Field != "provider.web.url" || !strings.Contains(errs[0].Message, tt.refused)):
				t.Errorf("got %v, want the url refused: %s", errs, tt.refused)
			}
		})
	}
	if (&Provider{}).PresentOnly(nil) == "" {
		t.Error("a web metric claims it can be measured in the past")
	}
}

// TestResultBounded checks that a result is held to what a condition's cost
// assumes of it: at most --max-result-values values (counted as the
// conditions see them) and no string longer than
// condition.ResultStringBytes, a non-JSON body included.
func TestResultBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ten":
			_, _ = io.WriteString(w, `[1,2,3,4,5,6,7,8,9,10]`)
		case "/many":
			_, _ = io.WriteString(w, `{"a":[1,2,3,4,5,6,7,8,9,10,11,12]}`)
		case "/object":
			_, _ = io.WriteString(w, `{"a":{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6}}`)
		case "/long":
			_, _ = io.WriteString(w, `{"a":"`+strings.Repeat("x", condition.ResultStringBytes+1)+`"}`)
		case "/text":
			_, _ = io.WriteString(w, strings.Repeat("<html>", 100))
		}
	}))
	defer srv.Close()
	p, err := New(Options{Allow: []string{srv.URL}, MaxResultValues: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	for _, tc := range []struct {
		path, jsonPath, wantErr string
	}{
		{"/ten", "{$}", ""},
		{"/many", "{$.a[0]}", "the response has more than the 10 values a measurement may have (--max-result-values)"},
		{"/object", "{$.a.k1}", "more than the 10 values"}, // seven keys and six values
		{"/long", "{$.a}", "longer than the 256 a string in a result may have"},
		{"/text", "{$}", "not JSON, and longer than the 256 bytes"},
	} {
		obs := measure(t, p, `{"url": `+jsonString(srv.URL+tc.path)+`, "jsonPath": "`+tc.jsonPath+`"}`)
		switch {
		case tc.wantErr == "" && obs.Err != nil:
			t.Errorf("%s %s: %v, want a value", tc.path, tc.jsonPath, obs.Err)
		case tc.wantErr != "" && (obs.Err == nil || !strings.Contains(obs.Err.Error(), tc.wantErr)):
			t.Errorf("%s %s: %v, want an Error saying %q", tc.path, tc.jsonPath, obs.Err, tc.wantErr)
		}
	}
}
