package argo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	argoinflux "github.com/argoproj/argo-rollouts/metricproviders/influxdb"
	argonr "github.com/argoproj/argo-rollouts/metricproviders/newrelic"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
)

// BenchmarkArgoMeasure measures one measurement of one value (value.csv,
// value.json of canaryd's tests) by Argo v1.10.0's InfluxDB and New Relic
// providers, on the clients they use (influxdb-client-go/v2,
// newrelic-client-go/v2), and by canaryd's, all against the same loopback
// stand-in, so that what the official clients cost is a number beside
// canaryd's own (docs/performance.md, "What a measurement costs"). Argo's
// rows are its provider's Run with no conditions, its client built once
// as a provider keeps it, and its client's query alone (client-…);
// canaryd's are a Source's Measure. The stand-in's share is in every row.
// Run it with -benchmem.
func BenchmarkArgoMeasure(b *testing.B) {
	s := newStandIn(b)
	keys := newSecrets(b)
	value := answer{file: "value.csv", status: 200}
	keys.add(b, "influx", map[string]string{"address": s.address("influxdb", value), "authToken": "s3cr3t-influx-token-0123456789", "org": "my-org"})
	keys.add(b, "newrelic", map[string]string{"personal-api-key": "NRAK-0123456789ABCDEFGHIJKLMNOPQ", "account-id": "1234567",
		"base-url-nerdgraph": s.address("newrelic", answer{file: "value.json", status: 200}) + "/graphql"})
	kube := keys.kube()
	influxTemplate := `{"profile": "influx", "query": "from(bucket: \"app\") |> range(start: -5m) |> filter(fn: (r) => r._field == \"success_rate\") |> last()"}`
	nrTemplate := `{"profile": "newrelic", "query": "FROM Transaction SELECT count(*) SINCE 5 minutes ago"}`

	var influxProvider v1alpha1.InfluxdbMetric
	var nrProvider v1alpha1.NewRelicMetric
	if err := json.Unmarshal([]byte(influxTemplate), &influxProvider); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal([]byte(nrTemplate), &nrProvider); err != nil {
		b.Fatal(err)
	}
	influxMetric := v1alpha1.Metric{Name: "rate", Provider: v1alpha1.MetricProvider{Influxdb: &influxProvider}}
	nrMetric := v1alpha1.Metric{Name: "rate", Provider: v1alpha1.MetricProvider{NewRelic: &nrProvider}}
	influxAPI, err := argoinflux.NewInfluxdbAPI(influxMetric, kube)
	if err != nil {
		b.Fatal(err)
	}
	nrAPI, err := argonr.NewNewRelicAPIClient(nrMetric, kube)
	if err != nil {
		b.Fatal(err)
	}
	influxArgo := argoinflux.NewInfluxdbProvider(influxAPI, quiet())
	nrArgo := argonr.NewNewRelicProvider(nrAPI, quiet())

	ourInflux, err := influxdb.New(influxdb.Options{Credentials: keys.dir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer ourInflux.CloseIdleConnections()
	ourNR, err := newrelic.New(newrelic.Options{Credentials: keys.dir(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer ourNR.CloseIdleConnections()
	source := func(src analysis.Source, _ map[string]string, errs []api.FieldError) analysis.Source {
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		return src
	}
	ourInfluxSrc := source(ourInflux.Source(json.RawMessage(influxTemplate)))
	ourNRSrc := source(ourNR.Source(json.RawMessage(nrTemplate)))

	ctx := context.Background()
	rows := []struct {
		name    string
		measure func() error
	}{
		{"argo-influxdb", func() error { return argoErr(influxArgo.Run(&v1alpha1.AnalysisRun{}, influxMetric)) }},
		{"client-influxdb", func() error {
			res, err := influxAPI.Query(ctx, influxProvider.Query)
			if err != nil {
				return err
			}
			for res.Next() {
				_ = res.Record().Value()
			}
			if err := res.Err(); err != nil {
				return err
			}
			return res.Close()
		}},
		{"canaryd-influxdb", func() error { return ourInfluxSrc.Measure(ctx, time.Now()).Err }},
		{"argo-newrelic", func() error { return argoErr(nrArgo.Run(&v1alpha1.AnalysisRun{}, nrMetric)) }},
		{"client-newrelic", func() error { _, err := nrAPI.Query(nrMetric); return err }},
		{"canaryd-newrelic", func() error { return ourNRSrc.Measure(ctx, time.Now()).Err }},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := r.measure(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// argoErr is the error of an Argo measurement that is not Successful.
func argoErr(m v1alpha1.Measurement) error {
	if m.Phase != v1alpha1.AnalysisPhaseSuccessful {
		return &argoError{m}
	}
	return nil
}

type argoError struct{ m v1alpha1.Measurement }

func (e *argoError) Error() string { return string(e.m.Phase) + ": " + e.m.Message }
