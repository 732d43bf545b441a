package datadog_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// The answers measured: one number each, as a success rate's query
// returns it.
const (
	promAnswer = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1599076435,"0.002"]}]}}`
	v1Answer   = `{"status":"ok","series":[{"pointlist":[[1599076140000,0.0021],[1599076160000,0.002]]}]}`
	v2Answer   = `{"data":{"type":"scalar_response","attributes":{"columns":[{"name":"a","type":"number","values":[0.002]}]}}}`
)

// sources builds, against stand-ins answering the answers above, a
// Prometheus measurement and Datadog's v1 and v2 ones.
func sources(tb testing.TB) map[string]analysis.Source {
	tb.Helper()
	serve := func(body string) string {
		b := []byte(body)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		}))
		tb.Cleanup(srv.Close)
		return srv.URL
	}
	prom, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: serve(promAnswer)}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(prom.CloseIdleConnections)
	ps, _, errs := prom.Source(&prometheus.Metric{Query: "up"})
	if len(errs) > 0 {
		tb.Fatal(errs)
	}

	root := tb.TempDir()
	for name, address := range map[string]string{"v1": serve(v1Answer), "v2": serve(v2Answer)} {
		writeSecret(tb, root, name, map[string]string{"api-key": apiKey, "app-key": appKey, "address": address})
	}
	dir, err := credentials.New(root, credentials.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	dd, err := datadog.New(datadog.Options{Credentials: dir, LookupEnv: noEnv})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(dd.CloseIdleConnections)
	out := map[string]analysis.Source{"prometheus": ps}
	for name, config := range map[string]string{
		"datadog-v1": `{"query": "avg:trace.http.request.errors{service:checkout}", "secretRef": {"name": "v1"}}`,
		"datadog-v2": `{"query": "avg:trace.http.request.errors{service:checkout}", "apiVersion": "v2", "secretRef": {"name": "v2"}}`,
	} {
		s, _, errs := dd.Source(json.RawMessage(config))
		if len(errs) > 0 {
			tb.Fatal(errs)
		}
		out[name] = s
	}
	for name, s := range out {
		if obs := s.Measure(context.Background(), at); obs.Err != nil || obs.Value != 0.002 && !equalFloats(obs.Value, []float64{0.002}) {
			tb.Fatalf("%s: %v %v", name, obs.Value, obs.Err)
		}
	}
	return out
}

func equalFloats(v any, want []float64) bool {
	got, ok := v.([]float64)
	return ok && len(got) == len(want) && got[0] == want[0]
}

// BenchmarkMeasure measures one measurement of each source, the stand-in's
// own work included, which is the same for all: allocations and bytes
// per measurement. TestMeasureCost holds Datadog's to the Prometheus
// provider's.
func BenchmarkMeasure(b *testing.B) {
	for _, name := range []string{"prometheus", "datadog-v1", "datadog-v2"} {
		b.Run(name, func(b *testing.B) {
			s := sources(b)[name]
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if obs := s.Measure(ctx, at); obs.Err != nil {
					b.Fatal(obs.Err)
				}
			}
		})
	}
}

// TestMeasureCost: a Datadog measurement costs no more than a Prometheus
// one, in allocations and in bytes allocated, and holds no more once it
// is done (the heap after many measurements).
func TestMeasureCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures allocations, which -race changes")
	}
	srcs := sources(t)
	ctx := context.Background()
	const runs = 300
	type cost struct{ allocs, bytes float64 }
	// The least of three rounds, as internal/benchmark's TestMeasureCost
	// takes: a round in which the busy machine made the transport open a
	// new connection, or a stand-in's goroutines ran on, counts what is
	// not the measurement's.
	measure := func(s analysis.Source) cost {
		for i := 0; i < 20; i++ { // connections and pools warm
			s.Measure(ctx, at)
		}
		least := cost{math.Inf(1), math.Inf(1)}
		for range 3 {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := 0; i < runs; i++ {
				s.Measure(ctx, at)
			}
			runtime.ReadMemStats(&after)
			least.allocs = min(least.allocs, float64(after.Mallocs-before.Mallocs)/runs)
			least.bytes = min(least.bytes, float64(after.TotalAlloc-before.TotalAlloc)/runs)
		}
		return least
	}
	prom := measure(srcs["prometheus"])
	for _, name := range []string{"datadog-v1", "datadog-v2"} {
		dd := measure(srcs[name])
		t.Logf("%s: %.0f allocations, %.0f bytes a measurement; prometheus: %.0f, %.0f", name, dd.allocs, dd.bytes, prom.allocs, prom.bytes)
		// 5% for the noise of the stand-ins' goroutines.
		if dd.allocs > prom.allocs*1.05 || dd.bytes > prom.bytes*1.05 {
			t.Errorf("%s costs %.0f allocations and %.0f bytes a measurement, more than Prometheus' %.0f and %.0f", name, dd.allocs, dd.bytes, prom.allocs, prom.bytes)
		}
	}
}
