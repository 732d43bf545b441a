package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// TestMadeUpMethodsKeepMetricsFixed sends 1,000 made-up methods, on known
// paths and long unknown ones, and checks that canaryd's own metrics keep
// the same series (methods, routes and codes come from fixed sets, "other"
// beyond them) and that no log line copies more than a bounded part of
// the request line.
func TestMadeUpMethodsKeepMetricsFixed(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:1"}})
	long := "/" + strings.Repeat("x", 4000)
	paths := []string{"/v1/analyses", "/v1/analyses/abc", "/healthz", long}
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			path := paths[i%len(paths)]
			if path == long {
				path = fmt.Sprintf("%s/%d", long, i)
			}
			req, err := http.NewRequest(fmt.Sprintf("MADEUP%04d", i), s.url+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	series := func() (int, int) {
		t.Helper()
		body := string(s.do(http.MethodGet, "/metrics", "", "").body)
		n := 0
		for line := range strings.Lines(body) {
			if strings.HasPrefix(line, "canaryd_http_") {
				n++
			}
		}
		return n, len(body)
	}

	// The scrapes are requests too: the first makes the series of the
	// others.
	series()
	send(0, 20)
	seriesBefore, sizeBefore := series()
	send(20, 1000)
	seriesAfter, sizeAfter := series()
	if seriesAfter != seriesBefore {
		t.Errorf("canaryd_http_* series: %d after 20 made-up methods, %d after 1,000; want them equal", seriesBefore, seriesAfter)
	}
	// Only the counts' digits may grow.
	if sizeAfter > sizeBefore+2048 {
		t.Errorf("/metrics grew from %d to %d bytes over 980 made-up methods", sizeBefore, sizeAfter)
	}
	body := string(s.do(http.MethodGet, "/metrics", "", "").body)
	for _, want := range []string{`method="other"`, `route="unmatched"`, `code="405"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "MADEUP") {
		t.Error("/metrics names a made-up method")
	}

	lines := s.logs.FilterMessage("request").All()
	if len(lines) < 1000 {
		t.Fatalf("%d request log lines, want one per request", len(lines))
	}
	for _, e := range lines {
		size := 0
		for _, f := range e.Context {
			if f.Type == zapcore.StringType {
				size += len(f.String)
			}
		}
		if size > 1024 {
			t.Fatalf("a request log line carries %d bytes of strings: %v", size, e.ContextMap())
		}
	}
}
