package judge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	client "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestCountsNativeHistogram runs docs/judge.md's latency recipe for native
// histograms: histogram_count and histogram_fraction of a native histogram
// that Prometheus scrapes (promtool cannot backfill native histograms), in
// a live analysis of one-second looks. The canary's requests are half slow
// (300 ms), the baseline's a tenth: five times the rate of requests slower
// than 100 ms.
func TestCountsNativeHistogram(t *testing.T) {
	t.Parallel()
	reg := client.NewRegistry()
	durations := client.NewHistogramVec(client.HistogramOpts{
		Name: "http_request_duration_seconds", Help: "Request durations (canaryd counts test).",
		NativeHistogramBucketFactor: 1.1,
	}, []string{"track"})
	reg.MustRegister(durations)
	app := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(app.Close)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	// Serves "requests" until the test ends.
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			canary, baseline := 0.05, 0.05
			if i%2 == 0 {
				canary = 0.3
			}
			if i%10 == 0 {
				baseline = 0.3
			}
			durations.WithLabelValues("canary").Observe(canary)
			durations.WithLabelValues("baseline").Observe(baseline)
		}
	}()

	srv := promtest.StartConfig(t, promtest.Config{
		Fixtures: []string{"# TYPE unused gauge\nunused 1 0\n"},
		ExtraConfig: "scrape_configs:\n  - job_name: app\n    scrape_interval: 250ms\n    scrape_timeout: 200ms\n" +
			"    static_configs: [{targets: ['" + strings.TrimPrefix(app.URL, "http://") + "']}]\n",
		Flags: []string{"--enable-feature=native-histograms"},
	})
	// The first scrape, so that the analysis counts from a value.
	waitForSeries(t, srv.URL, `histogram_count(sum(http_request_duration_seconds{track="canary"}))`)

	side := func(track string) string {
		h := `sum(http_request_duration_seconds{track="` + track + `"})`
		return "\n            bad: 'histogram_count(" + h + ") * (1 - histogram_fraction(0, 0.1, " + h + "))'" +
			"\n            total: 'histogram_count(" + h + ")'"
	}
	plan := compilePlan(t, srv.URL, "metrics:\n  - name: slow\n    interval: 1s\n    initialDelay: 1s\n    count: 8\n"+
		"    provider:\n      judge:\n        counts:\n          canary:"+side("canary")+"\n          baseline:"+side("baseline")+"\n")
	run := analysis.Start(context.Background(), plan, analysis.Options{ID: "native"})
	select {
	case <-run.Done():
	case <-time.After(time.Minute):
		run.Abort("test timeout")
		<-run.Done()
	}
	a := run.Snapshot()
	ms := a.MetricResults[0].Measurements
	var values []string
	for _, m := range ms {
		values = append(values, string(m.Phase)+" "+m.Value+" "+m.Message)
	}
	if a.Phase != api.PhaseFailed || !strings.HasPrefix(ms[len(ms)-1].Value, "Failed at look ") {
		t.Errorf("phase %s (%s), want Failed:\n%s", a.Phase, a.Message, strings.Join(values, "\n"))
	}
	if testing.Verbose() {
		t.Logf("measurements:\n%s", strings.Join(values, "\n"))
	}
}

// waitForSeries waits until query has a result on the Prometheus at base.
func waitForSeries(t *testing.T, base, query string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
		if err == nil {
			var answer struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&answer)
			resp.Body.Close()
			if err == nil && len(answer.Data.Result) > 0 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no result for %s after 30 s", query)
}
