package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// TestServeLimits checks the limits' flags as the binary wires them:
// --max-query-timeout lowers a metric's longer timeout (a stalling
// Prometheus is given up after it, not after the metric's 30 s), and
// --max-metrics and --max-condition-length refuse on their fields.
func TestServeLimits(t *testing.T) {
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer stall.Close()
	_, base, _, _ := startServe(t, "--prometheus-url", stall.URL, "--max-query-timeout", "500ms",
		"--max-metrics", "2", "--max-condition-length", "20")
	post := func(body string) (int, []byte) {
		t.Helper()
		resp, err := http.Post(base+"/v1/evaluate?timeout=20s", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}

	began := time.Now()
	status, body := post(`{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up", "timeout": 30}}}]}`)
	var round api.Analysis
	if err := json.Unmarshal(body, &round); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("a stalled query: %d %s, want a 503 Error round", status, body)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the stalled query took %s: --max-query-timeout 500ms did not lower the metric's 30 s", took)
	}
	if msg := round.MetricResults[0].Measurements[0].Message; !strings.Contains(msg, "context deadline exceeded") {
		t.Errorf("measurement message %q, want the query's deadline", msg)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"metrics": [{"name": "a", "provider": {"prometheus": {"query": "up"}}}, {"name": "b", "provider": {"prometheus": {"query": "up"}}}, {"name": "c", "provider": {"prometheus": {"query": "up"}}}]}`, "metrics"},
		{`{"metrics": [{"name": "a", "successCondition": "result[0] > 0.5 && result[0] < 2", "provider": {"prometheus": {"query": "up"}}}]}`, "metrics[0].successCondition"},
	} {
		status, body := post(tc.body)
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil || status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
			t.Errorf("%d %s, want a 400 on %s", status, body, tc.field)
		}
	}
}
