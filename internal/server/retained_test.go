package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// instantSources measure at once, a value that passes `result[0] >= 0.99`.
func instantSources(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{Value: []float64{1}, Display: "[1]"}
	}), nil, nil
}

// retainedBytes reads canaryd_analyses_retained_bytes.
func (s *testServer) retainedBytes() float64 {
	s.t.Helper()
	body := string(s.do(http.MethodGet, "/metrics", "", "").body)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, "canaryd_analyses_retained_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				s.t.Fatal(err)
			}
			return f
		}
	}
	s.t.Fatal("/metrics lacks canaryd_analyses_retained_bytes")
	return 0
}

// TestRetainedResultsBounds tries to exceed --max-retained-bytes and
// --max-finished: finished analyses are evicted oldest first, but none
// younger than --min-retention; a new analysis gets a 429 naming the flag
// when nothing can be evicted.
func TestRetainedResultsBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		flag string
	}{
		// A byte holds less than any analysis: each one is over it.
		{"--max-retained-bytes", options{maxRetainedBytes: 1}, "--max-retained-bytes"},
		{"--max-finished", options{maxFinished: 1}, "--max-finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(time.Now())
			o := tc.o
			o.clock, o.sources, o.minRetention, o.retention = fake, instantSources, time.Minute, time.Hour
			s := start(t, o)
			first := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good")).analysis(t)
			if held := s.retainedBytes(); held < 1000 {
				t.Errorf("canaryd_analyses_retained_bytes = %v with an analysis held, want its size", held)
			}

			// The first finished just now: it may not be evicted.
			fake.Advance(time.Minute - time.Second)
			resp := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good"))
			if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" {
				t.Fatalf("an analysis while the results held are at %s and younger than --min-retention: status %d; want 429 with Retry-After", tc.flag, resp.status)
			}
			if p := resp.problem(t); p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, tc.flag) || !strings.Contains(p.Detail, "--min-retention (1m0s)") {
				t.Errorf("problem %+v, want too-many-analyses naming %s and --min-retention", p, tc.flag)
			}
			for _, path := range []string{"/v1/gates", "/v1/analyses"} {
				if got := s.do(http.MethodPost, path, jsonType, once("echo-good")).status; got != http.StatusTooManyRequests {
					t.Errorf("POST %s: status %d, want 429", path, got)
				}
			}
			if got := s.do(http.MethodGet, "/v1/analyses/"+first.ID, "", ""); got.status != http.StatusOK {
				t.Errorf("the young analysis: status %d, want 200: it is kept", got.status)
			}

			// Once it is older than --min-retention, it makes room.
			fake.Advance(time.Second)
			second := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good"))
			if second.status != http.StatusOK {
				t.Fatalf("an analysis once the held one is older than --min-retention: status %d, want 200: %s", second.status, second.body)
			}
			if got := s.do(http.MethodGet, "/v1/analyses/"+first.ID, "", ""); got.status != http.StatusNotFound {
				t.Errorf("the oldest analysis, evicted for the new one: status %d, want 404", got.status)
			}
			if got := s.do(http.MethodGet, "/v1/analyses/"+second.analysis(t).ID, "", ""); got.status != http.StatusOK {
				t.Errorf("the new analysis: status %d, want 200", got.status)
			}
		})
	}
}
