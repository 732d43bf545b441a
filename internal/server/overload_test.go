package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// stuckQueries are Prometheus sources that hold every query until opened,
// counting the queries of each.
type stuckQueries struct {
	open    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	sent    map[string]int
}

func (q *stuckQueries) source(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return analysis.SourceFunc(func(ctx context.Context, _ time.Time) analysis.Observation {
		q.mu.Lock()
		q.sent[m.Query]++
		q.mu.Unlock()
		q.entered <- struct{}{}
		select {
		case <-q.open:
		case <-ctx.Done():
			return analysis.Observation{Err: ctx.Err()}
		}
		return analysis.Observation{Value: []float64{1}, Display: "[1]"}
	}), nil, nil
}

func (q *stuckQueries) count(query string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sent[query]
}

// TestOverloadedWorkers runs more analyses than a pool of two measurement
// workers can measure while both are stuck in a query: /healthz and the
// analyses' reads answer meanwhile; once the queries return, the
// measurements that waited start late and are counted as late, and every
// measurement due is taken, once.
func TestOverloadedWorkers(t *testing.T) {
	const analyses, count = 10, 2
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	q := &stuckQueries{open: make(chan struct{}), entered: make(chan struct{}, analyses*count), sent: map[string]int{}}
	s := start(t, options{clock: clk, scheduler: analysis.NewScheduler(clk, 2), sources: q.source, maxDuration: time.Hour})
	ids := make([]string, analyses)
	for i := range ids {
		doc := fmt.Sprintf(`{"metrics": [{"name": "m", "interval": "1m", "count": %d, "successCondition": "result[0] >= 0.99",
  "provider": {"prometheus": {"query": "up{analysis=\"%d\"}"}}}]}`, count, i)
		resp := s.do(http.MethodPost, "/v1/analyses", jsonType, doc)
		if resp.status != http.StatusAccepted {
			t.Fatalf("POST /v1/analyses: %d %s", resp.status, resp.body)
		}
		ids[i] = resp.analysis(t).ID
	}
	// Both workers are stuck; the other measurements are due and wait.
	<-q.entered
	<-q.entered
	clk.Advance(5 * time.Second)
	if resp := s.do(http.MethodGet, "/healthz", "", ""); resp.status != http.StatusOK {
		t.Errorf("/healthz while the workers are stuck: %d, want 200", resp.status)
	}
	for _, id := range ids {
		resp := s.do(http.MethodGet, "/v1/analyses/"+id, "", "")
		if resp.status != http.StatusOK || resp.analysis(t).Phase != api.PhaseRunning {
			t.Errorf("GET /v1/analyses/%s while the workers are stuck: %d %s, want 200 and Running", id, resp.status, resp.body)
		}
	}
	if n := counterValue(t, s, "canaryd_measurements_late_total"); n != 0 {
		t.Errorf("canaryd_measurements_late_total = %v before the waiting measurements started, want 0", n)
	}
	close(q.open)
	waitFor(t, "the first round's measurements", func() bool { return measurementsTaken(t, s) == analyses })
	clk.Advance(time.Minute)
	for i, id := range ids {
		if a := s.waitFinished(id); a.Phase != api.PhaseSuccessful {
			t.Errorf("%s: %s, want Successful", id, a.Phase)
		}
		if n := q.count(fmt.Sprintf(`up{analysis="%d"}`, i)); n != count {
			t.Errorf("%s: %d queries, want %d: each due measurement once", id, n, count)
		}
	}
	// All but the two measurements taken at once waited the 5 s the
	// workers were stuck; the second round was on time.
	if n := counterValue(t, s, "canaryd_measurements_late_total"); n != analyses-2 {
		t.Errorf("canaryd_measurements_late_total = %v, want %d", n, analyses-2)
	}
	if n := histogramCount(t, s, "canaryd_measurement_lateness_seconds"); n != analyses*count {
		t.Errorf("canaryd_measurement_lateness_seconds counts %d measurements, want %d", n, analyses*count)
	}
}

// histogramCount is the count of the registry's histogram name.
func histogramCount(t *testing.T, s *testServer, name string) uint64 {
	t.Helper()
	return onlyMetric(t, s, name).GetHistogram().GetSampleCount()
}

// measurementsTaken is canaryd_measurements_total over its phases.
func measurementsTaken(t *testing.T, s *testServer) float64 {
	t.Helper()
	families, err := s.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == "canaryd_measurements_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}
