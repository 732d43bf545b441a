package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/report"
)

// TestReportCannotBeFramed asks for each HTML report, an analysis' and a
// backtest's (one analysis, and a series): each says, as /ui/ does, that no
// page may frame it. frame-ancestors counts in a header only, not in the
// report's meta tag.
func TestReportCannotBeFramed(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})
	a := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-good", yamlType, seed(t)).analysis(t)
	backtest := "/v1/backtests?start=-30m&end=-10m&arg.namespace=echo-good"
	for _, tc := range []struct{ name, method, path, body string }{
		{"an analysis", http.MethodGet, "/v1/analyses/" + a.ID, ""},
		{"a backtest", http.MethodPost, backtest, seed(t)},
		{"a backtest series", http.MethodPost, backtest + "&every=10m", seed(t)},
	} {
		contentType := ""
		if tc.body != "" {
			contentType = yamlType
		}
		r := s.do(tc.method, tc.path, contentType, tc.body, "Accept", "text/html")
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s\n%s", tc.name, r.status, r.header.Get("Content-Type"), r.body)
		}
		if got, want := r.header.Get("Content-Security-Policy"), report.ContentSecurityPolicy+"; frame-ancestors 'none'"; got != want {
			t.Errorf("%s: Content-Security-Policy %q; want %q", tc.name, got, want)
		}
		if got := r.header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s: X-Frame-Options %q; want DENY", tc.name, got)
		}
	}
}
