package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// BenchmarkMeasure compares one measurement of the providers on answers
// of the same values: Prometheus' vector of n samples, and CloudWatch's
// one result of n values (GetMetricData, as the AWS SDK sends it). Each
// reports its allocations and bytes a measurement (allocs/op, B/op) and
// the bytes its observation holds once measured (held-B/op: the heap
// still in use while 256 observations are kept, each).
func BenchmarkMeasure(b *testing.B) {
	for _, n := range []int{1, 60, 1000} {
		b.Run(fmt.Sprintf("prometheus/values=%d", n), func(b *testing.B) {
			src := prometheusSource(b, n)
			measure(b, src)
		})
		b.Run(fmt.Sprintf("cloudwatch/values=%d", n), func(b *testing.B) {
			src, _ := cloudwatchSource(b, n)
			measure(b, src)
		})
	}
}

// measure measures src b.N times, then reports the bytes its
// observations hold.
func measure(b *testing.B, src analysis.Source) {
	ctx := context.Background()
	at := time.Unix(1599076435, 0)
	if obs := src.Measure(ctx, at); obs.Err != nil {
		b.Fatal(obs.Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if obs := src.Measure(ctx, at); obs.Err != nil {
			b.Fatal(obs.Err)
		}
	}
	b.StopTimer()
	const kept = 256
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	held := make([]analysis.Observation, kept)
	for i := range held {
		held[i] = src.Measure(ctx, at)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/kept, "held-B/op")
	runtime.KeepAlive(held)
}

// prometheusSource is a Prometheus metric whose stand-in answers a vector
// of n samples.
func prometheusSource(b *testing.B, n int) analysis.Source {
	var body strings.Builder
	body.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"metric":{"pod":"web-%d"},"value":[1599076435,"0.%03d"]}`, i, i%1000)
	}
	body.WriteString(`]}}`)
	answer := body.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	b.Cleanup(srv.Close)
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "stub", URL: srv.URL}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.CloseIdleConnections)
	src, _, errs := p.Source(&prometheus.Metric{Query: "rate(http_requests_total[5m])"})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return src
}

// cloudwatchSource is a CloudWatch metric whose stand-in answers one
// result of n values, with their timestamps. The stand-in answers as
// the other providers' do (internal/benchmark's sources): the recorded
// body and its Content-Type, without reading the request's body, so that
// its share of a measurement's cost is as theirs but for the request's
// headers; cloudwatchtest.Backend, which decodes and checks each request
// (about 40 allocations more), is for the provider's tests.
func cloudwatchSource(b testing.TB, n int) (analysis.Source, *standIn) {
	values, times := cbor.List{}, cbor.List{}
	for i := range n {
		values = append(values, cbor.Float64(float64(i%1000)/1000))
		times = append(times, &cbor.Tag{ID: 1, Value: cbor.Float64(1599076435 - 60*float64(i))})
	}
	answer := cbor.Encode(cbor.Map{
		"MetricDataResults": cbor.List{cbor.Map{
			"Id": cbor.String("rate"), "Label": cbor.String("rate"), "StatusCode": cbor.String("Complete"),
			"Timestamps": times, "Values": values,
		}},
		"Messages": cbor.List{},
	})
	srv := newStandIn(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/cbor")
		_, _ = w.Write(answer)
	}))
	p, err := cloudwatch.New(cloudwatch.Options{Load: cloudwatchtest.Config(srv.URL)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.CloseIdleConnections)
	src, _, errs := p.Source(json.RawMessage(`{"metricDataQueries": [{"id": "rate", "metricStat": {"metric": {"namespace": "app", "metricName": "errors"}, "period": 60, "stat": "Sum"}}]}`))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return src, srv
}
