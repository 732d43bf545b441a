package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// rangeCounter is a Prometheus in front of a real one that counts the
// range queries it is sent and, while hold is open, holds each one
// (having said so on started) until hold is closed.
type rangeCounter struct {
	URL     string
	queries atomic.Int64
	started chan struct{}
	hold    chan struct{}
}

func newRangeCounter(t *testing.T, prometheus string) *rangeCounter {
	t.Helper()
	target, err := url.Parse(prometheus)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rangeCounter{started: make(chan struct{}, 1)}
	proxy := httputil.NewSingleHostReverseProxy(target)
	transport := &http.Transport{}
	proxy.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query_range" {
			rc.queries.Add(1)
			if rc.hold != nil {
				rc.started <- struct{}{}
				<-rc.hold
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	rc.URL = srv.URL
	return rc
}

// TestReportRendersBeyondMaxAre429 draws --max-report-renders reports at
// once, each held in its range query, and asks for one more: a 429
// naming the flag, with Retry-After; the JSON of the same analysis is
// still answered.
func TestReportRendersBeyondMaxAre429(t *testing.T) {
	prom := newRangeCounter(t, promtest.Start(t).URL)
	s := start(t, options{prometheus: []string{prom.URL}, maxReportRenders: 1})
	a := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, seed(t)).analysis(t)
	path := "/v1/analyses/" + a.ID

	prom.hold = make(chan struct{})
	held := make(chan response, 1)
	go func() {
		r, err := s.send(http.MethodGet, path, "", "", "Accept", "text/html")
		if err != nil {
			t.Error(err)
		}
		held <- r
	}()
	<-prom.started
	r := s.do(http.MethodGet, path, "", "", "Accept", "text/html")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Errorf("a report beyond --max-report-renders: %d, Retry-After %q, want 429 with it", r.status, r.header.Get("Retry-After"))
	} else if p := r.problem(t); p.Type != server.ProblemTooManyReports || !strings.Contains(p.Detail, "--max-report-renders") {
		t.Errorf("problem %+v, want too-many-reports naming --max-report-renders", p)
	}
	if r := s.do(http.MethodGet, path, "", ""); r.status != http.StatusOK {
		t.Errorf("the JSON while the report is drawn: %d", r.status)
	}
	close(prom.hold)
	if r := <-held; r.status != http.StatusOK {
		t.Errorf("the report held: %d", r.status)
	}
	if r := s.do(http.MethodGet, path, "", "", "Accept", "text/html"); r.status != http.StatusOK {
		t.Errorf("a report once there is room: %d", r.status)
	}
}

// TestReportSeriesFetchedOnce draws the report of a finished analysis
// again and again: Prometheus is sent its range query once, and
// canaryd_report_queries_total counts one answered and the others cached.
func TestReportSeriesFetchedOnce(t *testing.T) {
	prom := newRangeCounter(t, promtest.Start(t).URL)
	s := start(t, options{prometheus: []string{prom.URL}})
	a := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, seed(t)).analysis(t)
	const n = 5
	for i := range n {
		r := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "text/html")
		if r.status != http.StatusOK || strings.Count(string(r.body), `<path class="sl `) != 1 ||
			!strings.Contains(string(r.body), `<rect class="region r-`) {
			t.Fatalf("report %d: %d, want 200 with the query's series and the bands drawn\n%s", i, r.status, r.body)
		}
	}
	if got := prom.queries.Load(); got != 1 {
		t.Errorf("%d range queries for %d reports of a finished analysis, want 1", got, n)
	}
	metrics := string(s.do(http.MethodGet, "/metrics", "", "").body)
	for _, want := range []string{`canaryd_report_queries_total{outcome="answered"} 1`, `canaryd_report_queries_total{outcome="cached"} 4`, `canaryd_report_queries_total{outcome="rate_limited"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
