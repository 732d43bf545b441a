package prometheus_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestConvert is §3.2 of the reference: what each result type becomes.
func TestConvert(t *testing.T) {
	tests := []struct {
		name        string
		resultType  string
		result      string
		wantValue   any
		wantDisplay string
		wantErr     string
	}{
		{name: "scalar", resultType: "scalar", result: `[1692000000, "10"]`, wantValue: 10.0, wantDisplay: "10"},
		{name: "scalar fraction", resultType: "scalar", result: `[1692000000, "0.995"]`, wantValue: 0.995, wantDisplay: "0.995"},
		{name: "scalar NaN", resultType: "scalar", result: `[1692000000, "NaN"]`, wantValue: math.NaN(), wantDisplay: "NaN"},
		{name: "scalar +Inf", resultType: "scalar", result: `[1692000000, "+Inf"]`, wantValue: math.Inf(1), wantDisplay: "+Inf"},
		{
			name: "vector, in Prometheus' order", resultType: "vector",
			result:    `[{"metric":{"pod":"b"},"value":[1692000000,"11"]},{"metric":{"pod":"a"},"value":[1692000000,"10"]}]`,
			wantValue: []float64{11, 10}, wantDisplay: "[11,10]",
		},
		{
			name: "vector with NaN", resultType: "vector",
			result:    `[{"metric":{},"value":[1692000000,"NaN"]}]`,
			wantValue: []float64{math.NaN()}, wantDisplay: "[NaN]",
		},
		{name: "empty vector", resultType: "vector", result: `[]`, wantValue: []float64{}, wantDisplay: "[]"},
		{name: "null vector", resultType: "vector", result: `null`, wantValue: []float64{}, wantDisplay: "[]"},
		{
			name: "matrix flattened series by series", resultType: "matrix",
			result:    `[{"metric":{"s":"1"},"values":[[1,"11"],[2,"12"]]},{"metric":{"s":"2"},"values":[[1,"13"],[2,"14"]]}]`,
			wantValue: []float64{11, 12, 13, 14}, wantDisplay: "[11,12,13,14]",
		},
		{name: "empty matrix", resultType: "matrix", result: `[]`, wantValue: []float64{}, wantDisplay: "[]"},
		{
			name: "string result (the client refuses it)", resultType: "string", result: `[1692000000, "hello"]`,
			wantErr: `bad_response: unexpected value type "string"`,
		},
	}
	for _, tc := range tests {
		srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) { answer(w, tc.resultType, tc.result) })
		obs := measure(t, newProvider(t, urls(srv.URL)), prometheus.Metric{Query: "q"}, time.Now())
		if got := errText(obs.Err); got != tc.wantErr {
			t.Errorf("%s: err = %q, want %q", tc.name, got, tc.wantErr)
			continue
		}
		if !sameFloats(obs.Value, tc.wantValue) || obs.Display != tc.wantDisplay {
			t.Errorf("%s: got (%#v, %q), want (%#v, %q)", tc.name, obs.Value, obs.Display, tc.wantValue, tc.wantDisplay)
		}
		if v, ok := obs.Value.([]float64); ok && v == nil {
			t.Errorf("%s: result is a nil slice; conditions need a non-nil []float64", tc.name)
		}
	}
}

// sameFloats compares results, NaN equal to NaN.
func sameFloats(got, want any) bool {
	eq := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && eq(g, w)
	case []float64:
		g, ok := got.([]float64)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !eq(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return equalValue(got, want)
}

func TestNilResultNotSupported(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":null}`))
	})
	obs := measure(t, newProvider(t, urls(srv.URL)), prometheus.Metric{Query: "q"}, time.Now())
	if got, want := errText(obs.Err), "Prometheus metric type not supported"; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
}

func TestWarnings(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"10"]},"warnings":["warning","warning2"],"infos":["info"]}`))
	})
	obs := measure(t, newProvider(t, urls(srv.URL)), prometheus.Metric{Query: "q"}, time.Now())
	want := map[string]string{"warnings": `"warning", "warning2"`, "infos": `"info"`}
	if !equalValue(obs.Metadata, want) || obs.Display != "10" {
		t.Errorf("got metadata %v and value %q, want %v and 10", obs.Metadata, obs.Display, want)
	}
}

// TestRequests checks what is sent: Argo's POST, the instant, the range
// (now() is the measurement's instant), the timeout.
func TestRequests(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.PostForm.Encode())
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "query_range") {
			answer(w, "matrix", `[]`)
			return
		}
		answer(w, "scalar", `[1,"1"]`)
	})
	p := newProvider(t, urls(srv.URL+"/prefix/"))
	at := time.Date(2023, 8, 14, 0, 0, 0, 0, time.UTC)
	metrics := []prometheus.Metric{
		{Query: "up == 1"},
		{Query: "up", Timeout: seconds(5)},
		{Query: "rate(x[1m])", RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("1h")`, End: `now()`, Step: "1m"}},
		{Query: "x", RangeQuery: &prometheus.RangeQuery{
			Start: `date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC") - duration("1h")`,
			End:   `date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC")`, Step: "90s",
		}},
	}
	for _, m := range metrics {
		if obs := measure(t, p, m, at); obs.Err != nil {
			t.Fatalf("%s: %v", m.Query, obs.Err)
		}
	}
	want := []string{
		"POST /prefix/api/v1/query " + url.Values{"query": {"up == 1"}, "time": {"1691971200"}, "timeout": {"30s"}}.Encode(),
		"POST /prefix/api/v1/query " + url.Values{"query": {"up"}, "time": {"1691971200"}, "timeout": {"5s"}}.Encode(),
		"POST /prefix/api/v1/query_range " + url.Values{"query": {"rate(x[1m])"}, "start": {"1691967600"}, "end": {"1691971200"}, "step": {"60"}, "timeout": {"30s"}}.Encode(),
		"POST /prefix/api/v1/query_range " + url.Values{"query": {"x"}, "start": {"1691967600"}, "end": {"1691971200"}, "step": {"90"}, "timeout": {"30s"}}.Encode(),
	}
	if !equalValue(got, want) {
		t.Errorf("requests\n got %q\nwant %q", got, want)
	}
}

// TestFaults covers what a real Prometheus cannot be made to do on demand.
func TestFaults(t *testing.T) {
	t.Parallel()
	stall := func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client going away.
		r.ParseForm()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	stallBody := func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":{`))
		w.(http.Flusher).Flush()
		stall(w, r)
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout *int64
		max     time.Duration
		// want is the error text; %s stands for the server's URL.
		want string
	}{
		{
			name: "503",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
			},
			want: "server_error: server error: 503",
		},
		{
			name: "bad_data",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error at char 5"}`))
			},
			want: "bad_data: parse error at char 5",
		},
		{
			name: "broken JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
			},
			want: "bad_response: unexpected end of JSON input",
		},
		{
			name:    "HTML from a proxy",
			handler: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`<html>login</html>`)) },
			want:    "bad_response: invalid character '<' looking for beginning of value",
		},
		{name: "stall past the timeout", handler: stall, timeout: seconds(1), want: `Post "%s/api/v1/query": context deadline exceeded`},
		{name: "stall in the body", handler: stallBody, timeout: seconds(1), want: "context deadline exceeded"},
		{name: "stall past the max timeout", handler: stall, max: 200 * time.Millisecond, want: `Post "%s/api/v1/query": context deadline exceeded`},
		{
			name: "timeout 0 fails at once (Argo)", timeout: seconds(0),
			handler: func(w http.ResponseWriter, r *http.Request) { answer(w, "scalar", `[1,"1"]`) },
			want:    `Post "%s/api/v1/query": context deadline exceeded`,
		},
	}
	for _, tc := range tests {
		srv := fakeProm(t, tc.handler)
		opts := urls(srv.URL)
		opts.MaxTimeout = tc.max
		began := time.Now()
		obs := measure(t, newProvider(t, opts), prometheus.Metric{Query: "q", Timeout: tc.timeout}, time.Now())
		want := strings.ReplaceAll(tc.want, "%s", srv.URL)
		if got := errText(obs.Err); got != want {
			t.Errorf("%s: err = %q, want %q", tc.name, got, want)
		}
		if obs.Display != "" || obs.Value != nil {
			t.Errorf("%s: an error measurement has value %v %q", tc.name, obs.Value, obs.Display)
		}
		if d := time.Since(began); d > 3*time.Second {
			t.Errorf("%s: took %v", tc.name, d)
		}
	}
}

// TestAcceptEncoding: an instant query's few hundred bytes are asked for
// uncompressed (gzip cost more than the query); a range query's answer,
// which can be large, is asked for gzipped, and read all the same.
func TestAcceptEncoding(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("Accept-Encoding")
		mu.Unlock()
		if r.URL.Path == "/api/v1/query_range" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", "application/json")
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"3"]]}]}}`)
			zw.Close()
			return
		}
		answer(w, "scalar", `[1,"1"]`)
	})
	p := newProvider(t, urls(srv.URL))
	instant := measure(t, p, prometheus.Metric{Query: "q"}, time.Now())
	ranged := measure(t, p, prometheus.Metric{Query: "q", RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("1m")`, End: "now()", Step: "1m"}}, time.Now())
	if instant.Display != "1" || ranged.Display != "[3]" {
		t.Errorf("got %q (%v) and %q (%v), want 1 and [3]", instant.Display, instant.Err, ranged.Display, ranged.Err)
	}
	want := map[string]string{"/api/v1/query": "identity", "/api/v1/query_range": "gzip"}
	if !equalValue(got, want) {
		t.Errorf("Accept-Encoding %v, want %v", got, want)
	}
}

// TestGetFallback: a server that refuses the POST (a proxy that only lets
// GET through) gets client_golang's GET with the same parameters, as Argo's
// does.
func TestGetFallback(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		var got []string
		srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.Method+" "+r.URL.RawQuery)
			if r.Method == http.MethodPost {
				http.Error(w, "no", status)
				return
			}
			answer(w, "vector", `[{"metric":{},"value":[1,"0.5"]}]`)
		})
		at := time.Date(2023, 8, 14, 0, 0, 0, 0, time.UTC)
		obs := measure(t, newProvider(t, urls(srv.URL)), prometheus.Metric{Query: "up"}, at)
		want := []string{"POST ", "GET " + url.Values{"query": {"up"}, "time": {"1691971200"}, "timeout": {"30s"}}.Encode()}
		if obs.Err != nil || obs.Display != "[0.5]" || !equalValue(got, want) {
			t.Errorf("%d: got (%q, %v) after requests %q, want [0.5] after %q", status, obs.Display, obs.Err, got, want)
		}
	}
}

// TestGetFallbackResultCap: the response to client_golang's GET is counted
// before it is decoded too.
func TestGetFallbackResultCap(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		answer(w, "matrix", `[{"metric":{},"values":[[1,"1"],[2,"2"],[3,"3"]]}]`)
	})
	opts := urls(srv.URL)
	opts.MaxResultValues = 2
	obs := measure(t, newProvider(t, opts), prometheus.Metric{Query: "up"}, time.Now())
	want := "the query returned 3 values, more than the 2 a measurement may have (--max-result-values); ask for fewer series, a shorter range or a larger step"
	if got := errText(obs.Err); got != want || obs.Value != nil {
		t.Errorf("got (%v, %q); want %q", obs.Value, got, want)
	}
	opts.MaxResultValues = -1
	if _, err := prometheus.New(opts); err == nil {
		t.Errorf("New accepted a negative MaxResultValues")
	}
}

func TestUnreachable(t *testing.T) {
	srv := fakeProm(t, func(http.ResponseWriter, *http.Request) {})
	addr := srv.URL
	srv.Close()
	obs := measure(t, newProvider(t, urls(addr)), prometheus.Metric{Query: "q"}, time.Now())
	want := `Post "` + addr + `/api/v1/query": dial tcp ` + strings.TrimPrefix(addr, "http://") + ": connect: connection refused"
	if got := errText(obs.Err); got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
}

func TestCanceled(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		<-r.Context().Done()
	})
	src, _, _ := newProvider(t, urls(srv.URL)).Source(&prometheus.Metric{Query: "q"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	obs := src.Measure(ctx, time.Now())
	if got, want := errText(obs.Err), `Post "`+srv.URL+`/api/v1/query": context deadline exceeded`; got != want {
		t.Errorf("err = %q, want %q: the caller's deadline bounds the query", got, want)
	}
	// Which is what it tells callers, who then need not watch it.
	if b, ok := src.(analysis.ContextBound); !ok || !b.BoundByContext() {
		t.Error("the source does not say that its context bounds it")
	}
}

// TestRedirects: only the datasource's own origin is followed, and a
// query that is redirected is sent once, then to where it was sent.
func TestRedirects(t *testing.T) {
	var elsewhere, old int
	var mu sync.Mutex
	other := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere++
		mu.Unlock()
		answer(w, "scalar", `[1,"666"]`)
	})
	ds := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old/api/v1/query":
			mu.Lock()
			old++
			mu.Unlock()
			http.Redirect(w, r, "/new/api/v1/query", http.StatusTemporaryRedirect)
		case "/new/api/v1/query":
			r.ParseForm()
			if r.PostForm.Get("query") != "q" {
				http.Error(w, "lost the body", http.StatusBadRequest)
				return
			}
			answer(w, "scalar", `[1,"7"]`)
		case "/away/api/v1/query":
			http.Redirect(w, r, other.URL+"/api/v1/query", http.StatusTemporaryRedirect)
		case "/userinfo/api/v1/query":
			http.Redirect(w, r, strings.Replace(other.URL, "http://", "http://user:pa55@", 1)+"/api/v1/query", http.StatusFound)
		}
	})
	// other is an allowed datasource too: its credentials, not ds', belong there.
	p := newProvider(t, urls(ds.URL+"/old", ds.URL+"/away", ds.URL+"/userinfo", other.URL))
	otherOrigin := other.URL
	tests := []struct {
		address, want, wantDisplay string
	}{
		{address: ds.URL + "/old", wantDisplay: "7"},
		{address: ds.URL + "/away", want: `Post "` + other.URL + `/api/v1/query": redirect to ` + otherOrigin + ` refused: queries only follow redirects within the datasource's own address ` + ds.URL},
		{address: ds.URL + "/userinfo", want: `Post "` + other.URL + `/api/v1/query": redirect to ` + otherOrigin + ` refused: queries only follow redirects within the datasource's own address ` + ds.URL},
	}
	for _, tc := range tests {
		obs := measure(t, p, prometheus.Metric{Query: "q", Address: tc.address}, time.Now())
		if got := errText(obs.Err); got != tc.want || obs.Display != tc.wantDisplay {
			t.Errorf("%s: got (%q, %q), want (%q, %q)", tc.address, obs.Display, got, tc.wantDisplay, tc.want)
		}
		if strings.Contains(errText(obs.Err), "pa55") {
			t.Errorf("%s: error shows a password", tc.address)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if elsewhere != 0 {
		t.Errorf("the other server got %d requests", elsewhere)
	}
	if old != 1 {
		t.Errorf("the redirected query was sent %d times, want once", old)
	}
}

func TestQueryDurationMetric(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("query") == "bad" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		answer(w, "scalar", `[1,"1"]`)
	})
	reg := promclient.NewRegistry()
	opts := prometheus.Options{Registerer: reg, Datasources: []prometheus.Datasource{{Name: "main", URL: srv.URL}}}
	p := newProvider(t, opts)
	newProvider(t, opts) // a second provider on the same registry shares the histogram
	measure(t, p, prometheus.Metric{Query: "good"}, time.Now())
	measure(t, p, prometheus.Metric{Query: "good"}, time.Now())
	measure(t, p, prometheus.Metric{Query: "bad"}, time.Now())
	measure(t, p, prometheus.Metric{Query: "good", Timeout: seconds(0)}, time.Now())

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "canaryd_prometheus_query_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[strings.TrimSpace(key)] = m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{
		"datasource=main outcome=success": 2,
		"datasource=main outcome=error":   1,
		"datasource=main outcome=timeout": 1,
	}
	if !equalValue(got, want) {
		t.Errorf("histogram counts %v, want %v", got, want)
	}
}

// TestConcurrentMeasure is for the race detector: one Source, many
// goroutines.
func TestConcurrentMeasure(t *testing.T) {
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) { answer(w, "vector", `[{"metric":{},"value":[1,"1"]}]`) })
	p := newProvider(t, prometheus.Options{Registerer: promclient.NewRegistry(), Datasources: []prometheus.Datasource{{URL: srv.URL, Headers: map[string]string{"X-A": "1"}}}})
	src, _, errs := p.Source(&prometheus.Metric{Query: "q", Headers: []prometheus.Header{{Key: "X-B", Value: "2"}}})
	if errs != nil {
		t.Fatal(errs)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if obs := src.Measure(context.Background(), time.Now()); obs.Err != nil || obs.Display != "[1]" {
				t.Errorf("concurrent measure: %v %q", obs.Err, obs.Display)
			}
		}()
	}
	wg.Wait()
}

// TestCloseIdleConnections: the provider's CloseIdleConnections closes the
// connection a query left idle to its datasource.
func TestCloseIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(w, "scalar", `[1,"1"]`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	defer srv.Close()
	p := newProvider(t, urls(srv.URL))
	if obs := measure(t, p, prometheus.Metric{Query: "up"}, time.Now()); obs.Err != nil {
		t.Fatal(obs.Err)
	}
	p.CloseIdleConnections()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection to the datasource is still open")
	}
}
