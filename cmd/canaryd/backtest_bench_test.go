package main

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/web"
	"github.com/canaryd/canaryd/internal/spec"
)

// BenchmarkBacktestDay backtests the seed's query over a day of a real
// Prometheus at one-minute steps: 1,440 measurements, each an instant query
// at its own past time. Target: at most 2 s an operation.
func BenchmarkBacktestDay(b *testing.B) {
	prom := promtest.StartConfig(b, promtest.Config{Fixtures: []string{incidentFixture()}})
	doc, problems := spec.Parse([]byte(`metrics:
- name: non-5xx-rate
  interval: 1m
  successCondition: result[0] >= 0.9
  provider:
    prometheus:
      query: ` + oneLine(promtest.SeedQuery("shop")) + `
`))
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "bench", URL: prom.URL}}})
	if err != nil {
		b.Fatal(err)
	}
	influxdbProvider, newRelicProvider := noCredentialed(b)
	compiled, problems := compile.Compile(doc, nil, newProviders(p.Source, noWeb(b), noDatadog(b), newCloudWatch(0, 0, true), noGraphite(b), influxdbProvider, newRelicProvider))
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	for b.Loop() {
		got := analysis.Backtest(context.Background(), compiled.Plan, dayStart, dayStart.Add(24*time.Hour-time.Second), analysis.Options{})
		if n := got.MetricResults[0].Count; n != 1440 {
			b.Fatalf("%d measurements, want 1440 (%s: %s)", n, got.Phase, got.Message)
		}
	}
}

// noWeb is a web provider that allows no URL, as run's.
func noWeb(tb testing.TB) *web.Provider {
	w, err := web.New(web.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// noDatadog is a Datadog provider without credentials.
func noDatadog(tb testing.TB) *datadog.Provider {
	d, err := newDatadog(nil, 0, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// noGraphite is a Graphite provider that allows no address.
func noGraphite(tb testing.TB) *graphite.Provider {
	g, err := graphite.New(graphite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// noCredentialed is an InfluxDB and a New Relic provider without
// credentials.
func noCredentialed(tb testing.TB) (*influxdb.Provider, *newrelic.Provider) {
	i, n, err := newCredentialed(nil, 0, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	return i, n
}
