package server_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestScoredAnalysis runs the scored canaryd template (two judge metrics
// and a success rate, testdata/judge-specs/scored.yaml) against a real
// Prometheus, as an analysis, a round and a backtest, so that the score
// and the judge's results are held to openapi.yaml like every response.
func TestScoredAnalysis(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})
	doc, err := os.ReadFile("../../testdata/judge-specs/scored.yaml")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, a api.Analysis) {
		t.Helper()
		if a.Score == nil {
			t.Fatalf("%s: no score: %+v", what, a)
		}
		// The demo's canary: 30% slower than stable, as fast as an hour
		// ago, every request a success: 0.7 × 50 + 0.3 × 100.
		if a.Score.Score != 65 || a.Score.Verdict != "Fail" || a.Phase != api.PhaseFailed || len(a.Score.Metrics) != 3 {
			t.Errorf("%s: phase %s, score %+v; want Failed with 65, Fail, three metrics", what, a.Phase, *a.Score)
		}
	}
	wait := s.do(http.MethodPost, "/v1/analyses?wait=true", yamlType, string(doc))
	if wait.status != http.StatusOK {
		t.Fatalf("wait: %d %s", wait.status, wait.body)
	}
	check("analysis", wait.analysis(t))
	round := s.do(http.MethodPost, "/v1/evaluate", yamlType, string(doc))
	if round.status != http.StatusOK {
		t.Fatalf("round: %d %s", round.status, round.body)
	}
	check("round", round.analysis(t))
	backtest := s.do(http.MethodPost, "/v1/backtests?start=-10m&end=-5m", yamlType, string(doc))
	if backtest.status != http.StatusOK {
		t.Fatalf("backtest: %d %s", backtest.status, backtest.body)
	}
	if a := backtest.analysis(t); a.Score == nil {
		t.Errorf("backtest: no score: %+v", a)
	}
}
