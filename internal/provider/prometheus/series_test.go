package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/series"
)

func seriesSource(t *testing.T, p *prometheus.Provider, m prometheus.Metric) series.Source {
	t.Helper()
	src, _, errs := p.Source(&m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s, ok := src.(series.Source)
	if !ok {
		t.Fatalf("the Prometheus source %T cannot run its query over a range", src)
	}
	return s
}

// TestQuerySeries checks the range query a report draws beneath a
// metric: the request (query_range of the metric's query, with its
// headers), and the bounds on what is kept: MaxSeries series, MaxPoints
// points each, the rest counted.
func TestQuerySeries(t *testing.T) {
	const nSeries, nPoints = 20, 500
	var got atomic.Value
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got.Store(r.URL.Path + "?" + r.PostForm.Encode() + " X-Scope-OrgID=" + r.Header.Get("X-Scope-OrgID"))
		var b strings.Builder
		b.WriteString("[")
		for i := range nSeries {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":"up","instance":"i%d"},"values":[`, i)
			for k := range nPoints {
				if k > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `[%d.5,"%d"]`, 1700000000+k, k)
			}
			b.WriteString("]}")
		}
		b.WriteString("]")
		answer(w, "matrix", b.String())
	})
	p := newProvider(t, urls(srv.URL))
	src := seriesSource(t, p, prometheus.Metric{Query: "up", Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "tenant"}}})
	from := time.Unix(1700000000, 0)
	q := series.Query{Start: from, End: from.Add(99 * time.Second), Step: time.Second, MaxSeries: 8, MaxPoints: 100}
	set, err := src.QuerySeries(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	want := "/api/v1/query_range?end=1700000099&query=up&start=1700000000&step=1&timeout=30s X-Scope-OrgID=tenant"
	if g, _ := got.Load().(string); g != want {
		t.Errorf("request %q, want %q", g, want)
	}
	if len(set.Series) != 8 || set.More != nSeries-8 {
		t.Fatalf("%d series kept and %d more, want 8 and %d", len(set.Series), set.More, nSeries-8)
	}
	for i, s := range set.Series {
		if want := fmt.Sprintf(`up{instance="i%d"}`, i); s.Labels != want {
			t.Errorf("series %d labelled %q, want %q", i, s.Labels, want)
		}
		if len(s.Points) != 100 {
			t.Errorf("series %d: %d points kept, want at most 100", i, len(s.Points))
		}
		if p := s.Points[3]; !p.T.Equal(time.Unix(1700000003, 5e8)) || p.V != 3 {
			t.Errorf("series %d point 3: %+v", i, p)
		}
	}
	if set.Step != time.Second {
		t.Errorf("step %s", set.Step)
	}
}

// TestQuerySeriesBounds checks that a range needing more points a series
// than allowed is refused before anything is sent, and that a failed query
// is an error that says why.
func TestQuerySeriesBounds(t *testing.T) {
	var requests atomic.Int32
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected end of input"}`)
	})
	p := newProvider(t, urls(srv.URL))
	src := seriesSource(t, p, prometheus.Metric{Query: "up"})
	from := time.Unix(1700000000, 0)
	_, err := src.QuerySeries(context.Background(), series.Query{Start: from, End: from.Add(time.Hour), Step: time.Second, MaxSeries: 8, MaxPoints: 240})
	if err == nil || !strings.Contains(err.Error(), "more than 240 points") || requests.Load() != 0 {
		t.Errorf("a range of 3601 points at most 240: %v, %d requests sent", err, requests.Load())
	}
	step := series.StepFor(from, from.Add(time.Hour), 240)
	_, err = src.QuerySeries(context.Background(), series.Query{Start: from, End: from.Add(time.Hour), Step: step, MaxSeries: 8, MaxPoints: 240})
	if err == nil || !strings.Contains(err.Error(), "bad_data: 1:1: parse error") || requests.Load() != 1 {
		t.Errorf("a refused query: %v, %d requests", err, requests.Load())
	}
}

// TestQuerySeriesGetFallback checks that a server refusing the range
// query's POST, as some Prometheus-compatible servers and proxies do, is
// asked again with GET and the same parameters, as client_golang (and so
// a measurement) does after a 403, 405 or 501; other statuses are not.
func TestQuerySeriesGetFallback(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented, http.StatusBadRequest} {
		var gets atomic.Value
		srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				http.Error(w, "no POST here", status)
				return
			}
			gets.Store(r.URL.RawQuery + " Content-Type=" + r.Header.Get("Content-Type"))
			answer(w, "matrix", `[{"metric":{"__name__":"up"},"values":[[1700000000,"1"],[1700000001,"2"]]}]`)
		})
		src := seriesSource(t, newProvider(t, urls(srv.URL)), prometheus.Metric{Query: "up"})
		from := time.Unix(1700000000, 0)
		set, err := src.QuerySeries(context.Background(), series.Query{Start: from, End: from.Add(time.Second), Step: time.Second, MaxSeries: 8, MaxPoints: 100})
		got, _ := gets.Load().(string)
		if status == http.StatusBadRequest {
			if err == nil || got != "" {
				t.Errorf("POST answered %d: err %v, GET %q; want the error and no GET", status, err, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("POST answered %d: %v", status, err)
		}
		if want := "end=1700000001&query=up&start=1700000000&step=1&timeout=30s Content-Type="; got != want {
			t.Errorf("POST answered %d: GET %q, want %q", status, got, want)
		}
		if len(set.Series) != 1 || len(set.Series[0].Points) != 2 {
			t.Errorf("POST answered %d: %+v", status, set)
		}
	}
}
