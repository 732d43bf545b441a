package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// TestLimits checks each bound a caller meets when starting an analysis: a
// 400 on the field, with the flag that sets the bound, and nothing running.
func TestLimits(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, maxDuration: time.Hour,
		limits: limits.Limits{MaxMetrics: 3, MaxConditionLength: 64}})
	metrics := func(n int) string {
		var b strings.Builder
		b.WriteString("metrics:\n")
		for i := range n {
			fmt.Fprintf(&b, "- {name: m%d, provider: {prometheus: {query: up}}}\n", i)
		}
		return b.String()
	}
	metric := func(fields string) string {
		return "metrics:\n- {name: m, " + fields + ", provider: {prometheus: {query: up}}}\n"
	}
	deep := strings.Repeat("(", 40) + "true" + strings.Repeat(")", 40)
	tests := []struct {
		name, path, body string
		field, message   string
	}{
		{"metrics beyond --max-metrics", "/v1/analyses", metrics(4),
			"metrics", "the spec has 4 metrics, more than the 3 this canaryd runs in one analysis (--max-metrics)"},
		{"the same on a round", "/v1/evaluate", metrics(4), "metrics", "(--max-metrics)"},
		{"the same on a gate", "/v1/gates", metrics(4), "metrics", "(--max-metrics)"},
		{"the same on a backtest", "/v1/backtests?start=-1h", metrics(4), "metrics", "(--max-metrics)"},
		{"a success condition beyond --max-condition-length", "/v1/analyses", metric("successCondition: '" + deep + "'"),
			"metrics[0].successCondition", "the condition is 64+ bytes long"},
		{"a failure condition beyond --max-condition-length", "/v1/analyses", metric("failureCondition: 'result > 1 || result > 2 || result > 3 || result > 4 || result > 5'"),
			"metrics[0].failureCondition", "the condition is 66 bytes long, longer than the 64 this canaryd accepts (--max-condition-length)"},
		{"a schedule beyond --max-analysis-duration", "/v1/analyses", metric("count: 120, interval: 1m"),
			"metrics[0].count", "120 measurements 1m0s apart (after an initialDelay of 0s) take at least 1h59m0s, longer than an analysis may run here (--max-analysis-duration 1h0m0s)"},
		{"the same on a gate", "/v1/gates", metric("count: 120, interval: 1m"), "metrics[0].count", "(--max-analysis-duration 1h0m0s)"},
		{"an initial delay beyond it", "/v1/analyses", metric("initialDelay: 2h"), "metrics[0].initialDelay", "an initialDelay of 2h0m0s is longer than an analysis may run here"},
	}
	for _, tt := range tests {
		resp := s.do(http.MethodPost, tt.path, yamlType, tt.body)
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tt.name, resp.status, resp.body)
			continue
		}
		p := resp.problem(t)
		message := strings.Replace(tt.message, "64+", fmt.Sprint(len(deep)), 1)
		if len(p.Errors) != 1 || p.Errors[0].Field != tt.field || !strings.Contains(p.Errors[0].Message, message) {
			t.Errorf("%s: problems %+v, want one on %s containing %q", tt.name, p.Errors, tt.field, message)
		}
	}
	if n := len(s.analyses.List()); n != 0 {
		t.Errorf("%d analyses started by refused requests", n)
	}
	// A backtest runs in virtual time: the bound on an analysis' duration
	// is not its concern (its window is).
	resp := s.do(http.MethodPost, "/v1/backtests?start=-3h", yamlType, metric("count: 120, interval: 1m"))
	if resp.status == http.StatusBadRequest {
		t.Errorf("a backtest of a two-hour schedule: 400 %s, want it run", resp.body)
	}
}

// TestConditionNodes checks expr's node budget at the service: a condition
// short enough but too complex is a 400 on it.
func TestConditionNodes(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	complex := strings.TrimSuffix(strings.Repeat("1+", 600), "+") + " > 0" // 1200 bytes, over 1000 nodes
	resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, `{"metrics": [{"name": "m", "successCondition": "`+complex+`", "provider": {"prometheus": {"query": "up"}}}]}`)
	if resp.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", resp.status, resp.body)
	}
	p := resp.problem(t)
	want := "the condition is too complex: it has more than 1000 syntax nodes, the most this canaryd accepts"
	if len(p.Errors) != 1 || p.Errors[0].Field != "metrics[0].successCondition" || p.Errors[0].Message != want {
		t.Errorf("problems %+v, want one on metrics[0].successCondition: %q", p.Errors, want)
	}
}

// TestStreamLimit checks that at most --max-streams streams follow one
// analysis: one more is a 429 naming the flag, and a stream that ends
// frees its place.
func TestStreamLimit(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, maxStreams: 2})
	a := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.openStream(ctx, http.MethodGet, "/v1/analyses/"+a.ID, "", "", "application/x-ndjson")
	second, cancelSecond := context.WithCancel(context.Background())
	defer cancelSecond()
	s.openStream(second, http.MethodGet, "/v1/analyses/"+a.ID, "", "", "text/event-stream")

	resp := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "application/x-ndjson")
	if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" {
		t.Fatalf("a third stream: %d (Retry-After %q), want 429: %s", resp.status, resp.header.Get("Retry-After"), resp.body)
	}
	if p := resp.problem(t); p.Type != server.ProblemTooManyStreams || !strings.Contains(p.Detail, "--max-streams") {
		t.Errorf("problem %+v, want too-many-streams naming --max-streams", p)
	}
	// Reading is not following.
	if resp := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", ""); resp.status != http.StatusOK {
		t.Errorf("a plain GET beside two streams: %d, want 200", resp.status)
	}
	cancelSecond()
	waitFor(t, "the second stream's place to be free", func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp, err := http.DefaultClient.Do(s.request(ctx, http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "application/x-ndjson"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
