package prometheus_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// fuzzToken is the credential the fuzzed responses may echo back: the
// placeholder TOKEN in a body is replaced by it, as a server that repeats
// a request's headers in its error would, and it must never reach an
// error message.
const fuzzToken = "fuzz-bearer-c0ffee42"

// FuzzPrometheusResponse serves arbitrary bodies and statuses from a fake
// Prometheus and measures them through the real Source, instant and range
// queries alike, decoding included: never a panic or a hang; an
// observation is either an error without a value, or a value of the types
// conditions are written for (float64 for a scalar, a non-nil []float64
// otherwise) with its display; and the credential sent never shows in an
// error.
func FuzzPrometheusResponse(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
	}{
		{200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1692000000,"0.995"]}]}}`},
		{200, `{"status":"success","data":{"resultType":"scalar","result":[1692000000,"NaN"]},"warnings":["w"],"infos":["i"]}`},
		{200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"+Inf"]]}]}}`},
		{200, `{"status":"success","data":{"resultType":"string","result":[1,"hello"]}}`},
		{200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"histogram":[1,{"count":"1","sum":"1","buckets":[[0,"0","1","1"]]}]}]}}`},
		{200, `{"status":"success","data":null}`},
		{200, `{"status":"success","data":{"resultType":"vector","result":[`},
		{200, `{"status":"success","status":"success","data":{"resultType":"vector","result":[]}}`},
		{200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"\u00e9":"x"},"value":[1e3,"1e308"]}]}}`},
		{400, `{"status":"error","errorType":"bad_data","error":"Authorization: Bearer TOKEN"}`},
		{422, `{"status":"error","errorType":"execution","error":"TOKEN"}`},
		{503, `overloaded TOKEN`},
		{200, `<html>TOKEN</html>`},
		{302, ``},
		{200, ``},
	} {
		f.Add(seed.status, seed.body, false)
		f.Add(seed.status, seed.body, true)
	}

	var mu sync.Mutex
	var status int
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		code, text := status, body
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(strings.ReplaceAll(text, "TOKEN", r.Header.Get("Authorization"))))
	}))
	defer srv.Close()
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: srv.URL}}})
	if err != nil {
		f.Fatal(err)
	}
	defer p.CloseIdleConnections()
	timeout := int64(5)
	headers := []prometheus.Header{{Key: "Authorization", Value: "Bearer " + fuzzToken}}
	instant, _, errs := p.Source(&prometheus.Metric{Query: "q", Timeout: &timeout, Headers: headers})
	if errs != nil {
		f.Fatal(errs)
	}
	ranged, _, errs := p.Source(&prometheus.Metric{Query: "q", Timeout: &timeout, Headers: headers,
		RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("5m")`, End: "now()", Step: "1m"}})
	if errs != nil {
		f.Fatal(errs)
	}

	f.Fuzz(func(t *testing.T, code int, text string, rangeQuery bool) {
		if code < 100 || code > 999 {
			code = 200 + (code%800+800)%800 // any three-digit status from 200
		}
		if code == http.StatusSwitchingProtocols || (code >= 300 && code < 400) {
			code = http.StatusOK // redirects are TestRedirects' concern
		}
		mu.Lock()
		status, body = code, text
		mu.Unlock()
		src := instant
		if rangeQuery {
			src = ranged
		}
		// The query's own timeout is 5 s: a Measure that outlives it by
		// far is a hang (a decoding loop that never ends, say).
		got := make(chan analysis.Observation, 1)
		go func() { got <- src.Measure(context.Background(), time.Unix(1692000000, 0)) }()
		var obs analysis.Observation
		select {
		case obs = <-got:
		case <-time.After(15 * time.Second):
			t.Fatalf("Measure hung on a %d response of %d bytes: %q", code, len(text), text)
		}
		if obs.Err != nil {
			if obs.Value != nil || obs.Display != "" {
				t.Fatalf("an error (%v) with a value %#v %q", obs.Err, obs.Value, obs.Display)
			}
			if strings.Contains(obs.Err.Error(), fuzzToken) {
				t.Fatalf("the credential shows in the error: %v", obs.Err)
			}
			return
		}
		// Whatever the server calls its result (a scalar answering a range
		// query included), conditions get one of the two shapes Argo gives
		// them; any float is a sample, NaN and ±Inf included.
		switch v := obs.Value.(type) {
		case float64:
		case []float64:
			if v == nil {
				t.Fatal("a nil slice: conditions need a non-nil []float64")
			}
		default:
			t.Fatalf("value %#v of type %T; conditions are written for float64 and []float64", obs.Value, obs.Value)
		}
		if obs.Display == "" {
			t.Fatalf("value %#v without its display", obs.Value)
		}
		for k, v := range obs.Metadata {
			if strings.Contains(k+v, fuzzToken) {
				t.Fatalf("the credential shows in the metadata: %s=%s", k, v)
			}
		}
	})
}
