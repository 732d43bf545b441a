package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// measured is a provider's source of one value, beside the loopback
// stand-in of its backend that answers it.
type measured struct {
	name   string
	source analysis.Source
	// standIn is the stand-in, for the providers whose cost is compared
	// without its share (ownCost).
	standIn *standIn
}

// answers are each backend's answer of one value, as a measurement of a
// success rate gets it.
var answers = map[string]struct{ ctype, body string }{
	"prometheus": {"application/json", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1599076435,"0.995"]}]}}`},
	"influxdb": {"text/csv; charset=utf-8", "#datatype,string,long,dateTime:RFC3339,dateTime:RFC3339,dateTime:RFC3339,double,string,string\r\n" +
		"#group,false,false,true,true,false,false,true,true\r\n#default,_result,,,,,,,\r\n" +
		",result,table,_start,_stop,_time,_value,_field,_measurement\r\n" +
		",,0,2020-09-02T19:48:55Z,2020-09-02T19:53:55Z,2020-09-02T19:53:55Z,0.995,success_rate,http\r\n\r\n"},
	"newRelic":  {"application/json", `{"data":{"actor":{"account":{"nrql":{"results":[{"rate":0.995}]}}}}}`},
	"graphite":  {"application/json", `[{"target":"success_rate","datapoints":[[0.995,1599076435]]}]`},
	"datadogV1": {"application/json", `{"status":"ok","res_type":"time_series","series":[{"metric":"success_rate","pointlist":[[1599076435000,0.995]]}]}`},
	"datadogV2": {"application/json", `{"data":{"type":"scalar_response","attributes":{"columns":[{"name":"a","type":"number","values":[0.995]}]}}}`},
}

// sources builds each provider's source against its stand-in.
func sources(tb testing.TB) []measured {
	tb.Helper()
	srv := newStandIn(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "prometheus"
		switch r.URL.Path {
		case "/api/v2/query":
			name = "influxdb"
		case "/graphql":
			name = "newRelic"
		case "/render":
			name = "graphite"
		case "/api/v1/query": // Prometheus' too, which POSTs its query
			if r.Method == http.MethodGet {
				name = "datadogV1"
			}
		case "/api/v2/query/scalar":
			name = "datadogV2"
		}
		w.Header().Set("Content-Type", answers[name].ctype)
		_, _ = w.Write([]byte(answers[name].body))
	}))

	prom, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: srv.URL}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(prom.CloseIdleConnections)
	promSource, _, errs := prom.Source(&prometheus.Metric{Query: "sum(rate(http_requests_total{code!~\"5..\"}[5m])) / sum(rate(http_requests_total[5m]))"})
	if len(errs) > 0 {
		tb.Fatal(errs)
	}

	root := tb.TempDir()
	for secret, keys := range map[string]map[string]string{
		"influxdb": {"address": srv.URL, "authToken": "token", "org": "org"},
		"newrelic": {"personal-api-key": "key", "account-id": "1", "base-url-nerdgraph": srv.URL + "/graphql"},
		"datadog":  {"api-key": "0123456789abcdef0123456789abcdef", "app-key": "0123456789abcdef0123456789abcdef01234567", "address": srv.URL},
	} {
		dir := filepath.Join(root, secret)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for k, v := range keys {
			if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
				tb.Fatal(err)
			}
		}
	}
	creds, err := credentials.New(root, credentials.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	influx, err := influxdb.New(influxdb.Options{Credentials: creds})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(influx.CloseIdleConnections)
	influxSource, _, errs := influx.Source(json.RawMessage(`{"query": "from(bucket: \"app\") |> range(start: -5m) |> filter(fn: (r) => r._field == \"success_rate\") |> last()"}`))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	nr, err := newrelic.New(newrelic.Options{Credentials: creds})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nr.CloseIdleConnections)
	nrSource, _, errs := nr.Source(json.RawMessage(`{"query": "FROM Transaction SELECT percentage(count(*), WHERE error IS false) AS rate SINCE 5 minutes ago"}`))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	gr, err := graphite.New(graphite.Options{Allow: []string{srv.URL}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(gr.CloseIdleConnections)
	grSource, _, errs := gr.Source(json.RawMessage(`{"address": "` + srv.URL + `", "query": "target=asPercent(app.ok.count, app.count)&from=-5min"}`))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	// DD_API_KEY, DD_APP_KEY and DD_ADDRESS, if set, are not read: the
	// Secret datadog is.
	dd, err := datadog.New(datadog.Options{Credentials: creds, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(dd.CloseIdleConnections)
	ddV1Source, _, errs := dd.Source(json.RawMessage(`{"query": "sum:trace.http.request.hits{service:checkout,!http.status_class:5xx}.as_count() / sum:trace.http.request.hits{service:checkout}.as_count()"}`))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	ddV2Source, _, errs := dd.Source(json.RawMessage(`{"apiVersion": "v2", "queries": {"ok": "sum:trace.http.request.hits{service:checkout,!http.status_class:5xx}.as_count()", "all": "sum:trace.http.request.hits{service:checkout}.as_count()"}, "formula": "ok / all"}`))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	cwSource, cwStandIn := cloudwatchSource(tb, 1)
	return []measured{{"prometheus", promSource, srv}, {"influxdb", influxSource, nil}, {"newRelic", nrSource, nil}, {"graphite", grSource, nil},
		{"datadogV1", ddV1Source, nil}, {"datadogV2", ddV2Source, nil}, {"cloudWatch", cwSource, cwStandIn}}
}

// ownCost are the providers held to Prometheus' allocations each without
// its stand-in's share (standIn.share), rather than with it: a
// CloudWatch request has more headers than a Prometheus query (SigV4's
// Authorization and X-Amz-Date, RPC v2 CBOR's Smithy-Protocol, Accept
// and X-Amzn-Query-Mode), whose reading is the stand-in's cost, about 10
// allocations of net/http's server, not canaryd's. (CloudWatch's cost was
// logged only, not held to Prometheus', while its measurement was a
// GetMetricData call of the AWS SDK's client: 444 allocations,
// docs/performance.md, "What a measurement costs".) Datadog's requests,
// whose keys are two headers a Prometheus query does not have (about 4
// allocations of the stand-in's), are held with their stand-in's share.
var ownCost = map[string]bool{"cloudWatch": true}

// BenchmarkMeasureOneValue measures one measurement of one value by each provider
// against a loopback stand-in of its backend: the time, the bytes and the
// allocations of the request, the answer's reading and the result, the
// stand-in's share included (the same for each).
func BenchmarkMeasureOneValue(b *testing.B) {
	for _, m := range sources(b) {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			at := time.Unix(1599076435, 0)
			for i := 0; i < b.N; i++ {
				if obs := m.source.Measure(ctx, at); obs.Err != nil {
					b.Fatal(obs.Err)
				}
			}
		})
	}
}

// argoShapes are, by provider, the result that Argo's shape needs for
// the recorded answer of one value (answers, cloudwatchSource), for the
// providers whose result is not a list of numbers, as Prometheus' is: a
// row (a map) or records. Each is built here from the answer, as Argo's
// provider builds it, and is what its result may hold at most
// (resultBytes), in place of Prometheus' 39 bytes (a list of one number,
// 8 bytes and its header boxed, 24, and "[0.995]", 7).
var argoShapes = map[string]func() analysis.Observation{"newRelic": rowShape, "cloudWatch": recordsShape}

// rowShape is a row of named values, as Argo's conditions read it
// (result.rate): New Relic's first result, decoded by encoding/json into
// a map[string]interface{} and written back by json.Marshal, as Argo's
// provider does. The map (its header and one entry, 48 and 32 bytes as
// resultBytes counts them), its key, "rate" (4), its number boxed (8),
// and the value, {"rate":0.995} (14): 106 bytes.
func rowShape() analysis.Observation {
	var answer struct {
		Data struct {
			Actor struct {
				Account struct {
					NRQL struct{ Results []map[string]any }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(answers["newRelic"].body), &answer); err != nil {
		panic(err)
	}
	row := answer.Data.Actor.Account.NRQL.Results[0]
	display, err := json.Marshal(row)
	if err != nil {
		panic(err)
	}
	return analysis.Observation{Value: row, Display: string(display)}
}

// recordsShape is Argo's list of records, the SDK's
// []types.MetricDataResult, for cloudwatchSource's answer of one value:
// one record (112 bytes: 104 and the padding of its last field, of no
// size) and its list's header boxed (24); its Id, the
// query's "rate" (a string's 16 bytes and 4), which its Label repeats and
// may share; its StatusCode, "Complete" (8); for its value, a timestamp
// (24 bytes; its time.Location is the process', not the result's) and a
// number (8); and the value as Argo writes it, fmt.Sprintf("%+v") of the
// values, "[[0]]" (5): 201 bytes.
func recordsShape() analysis.Observation {
	id := "rate"
	values := []float64{0}
	return analysis.Observation{
		Value: []types.MetricDataResult{{Id: &id, Label: &id, StatusCode: types.StatusCodeComplete,
			Timestamps: []time.Time{time.Unix(1599076435, 0)}, Values: values}},
		Display: fmt.Sprintf("%+v", [][]float64{values}),
	}
}

// longerValue is, by provider, how many bytes longer its measurement's
// value is than Prometheus' for the same number, because Argo writes it
// so: Graphite's with six decimals, "[0.995000]" for "[0.995]". A result
// may hold that much more.
var longerValue = map[string]uint64{"graphite": uint64(len("[0.995000]") - len("[0.995]"))}

// TestMeasureCost holds each provider's measurement of one value to the
// Prometheus provider's: no more allocations, and no more bytes held by
// its result (resultBytes), but for a value Argo writes longer
// (longerValue) and a result of another shape than a list of numbers,
// held to what Argo's shape needs (argoShapes); an ownCost provider's
// allocations are compared without its stand-in's share, and Prometheus'
// without its own.
// The allocations are compared without the race detector only
// (raceDetector): make test runs it both ways.
func TestMeasureCost(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	ss := sources(t)
	ctx := context.Background()
	at := time.Unix(1599076435, 0)
	cost := map[string]float64{}
	held := map[string]uint64{}
	standIns := map[string]float64{} // the stand-in's share of cost
	for _, m := range ss {
		if obs := m.source.Measure(ctx, at); obs.Err != nil || obs.Display == "" {
			t.Fatalf("%s: the measurement of one value failed, or has no value: %q, %v", m.name, obs.Display, obs.Err)
		}
		for i := 0; i < 20; i++ { // warm the connection and the pools
			m.source.Measure(ctx, at)
		}
		// The least of three rounds: a round in which the busy machine
		// made the transport open a new connection counts its dial and
		// handshake, which are not the measurement's.
		cost[m.name] = testing.AllocsPerRun(200, func() { m.source.Measure(ctx, at) })
		for range 2 {
			cost[m.name] = min(cost[m.name], testing.AllocsPerRun(200, func() { m.source.Measure(ctx, at) }))
		}
		held[m.name] = heldBy(func() any { return m.source.Measure(ctx, at) })
		if m.standIn != nil {
			standIns[m.name] = m.standIn.share(t, func() { m.source.Measure(ctx, at) })
		}
	}
	for _, m := range ss[1:] {
		if ownCost[m.name] {
			own, promOwn := cost[m.name]-standIns[m.name], cost["prometheus"]-standIns["prometheus"]
			if own > promOwn && !raceDetector {
				t.Errorf("%s: %.0f allocations a measurement without its stand-in's %.0f, more than Prometheus' %.0f without its stand-in's %.0f",
					m.name, own, standIns[m.name], promOwn, standIns["prometheus"])
			}
			t.Logf("%s without its stand-in's share: %.0f allocations (%.0f with); Prometheus: %.0f (%.0f with)", m.name, own, cost[m.name], promOwn, cost["prometheus"])
		} else if cost[m.name] > cost["prometheus"] && !raceDetector {
			t.Errorf("%s: %.0f allocations a measurement, more than Prometheus' %.0f", m.name, cost[m.name], cost["prometheus"])
		}
		if shape, ok := argoShapes[m.name]; ok {
			if need := heldBy(func() any { return shape() }); held[m.name] > need {
				t.Errorf("%s: %d bytes held by a result, more than the %d that Argo's shape needs for the answer", m.name, held[m.name], need)
			}
		} else if held[m.name] > held["prometheus"]+longerValue[m.name] {
			t.Errorf("%s: %d bytes held by a result, more than Prometheus' %d", m.name, held[m.name], held["prometheus"])
		}
		t.Logf("%s: %.0f allocations, %d bytes held; Prometheus: %.0f, %d", m.name, cost[m.name], held[m.name], cost["prometheus"], held["prometheus"])
	}
}

// heldBy is what a result of measure holds beyond the Observation
// itself: the bytes its value, its display, its metadata and its error
// reach (resultBytes).
func heldBy(measure func() any) uint64 {
	return resultBytes(reflect.ValueOf(measure()), map[uintptr]bool{})
}

// resultBytes adds up the bytes that v reaches through pointers, slices,
// strings, maps and interfaces: what keeping v keeps alive, besides v. A
// time's Location is not counted: it is the process' (time.Local,
// time.UTC), alive whatever the result.
func resultBytes(v reflect.Value, seen map[uintptr]bool) uint64 {
	locationType := reflect.TypeFor[*time.Location]()
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		n := resultBytes(e, seen)
		if e.Kind() != reflect.Pointer && e.Kind() != reflect.Map {
			n += uint64(e.Type().Size()) // boxed
		}
		return n
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] || v.Type() == locationType {
			return 0
		}
		seen[v.Pointer()] = true
		return uint64(v.Type().Elem().Size()) + resultBytes(v.Elem(), seen)
	case reflect.String:
		return uint64(v.Len())
	case reflect.Slice:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		n := uint64(v.Cap()) * uint64(v.Type().Elem().Size())
		for i := 0; i < v.Len(); i++ {
			n += resultBytes(v.Index(i), seen)
		}
		return n
	case reflect.Array:
		var n uint64
		for i := 0; i < v.Len(); i++ {
			n += resultBytes(v.Index(i), seen)
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		n := uint64(48)
		for it := v.MapRange(); it.Next(); {
			n += uint64(it.Key().Type().Size()+it.Value().Type().Size()) + resultBytes(it.Key(), seen) + resultBytes(it.Value(), seen)
		}
		return n
	case reflect.Struct:
		var n uint64
		for i := 0; i < v.NumField(); i++ {
			n += resultBytes(v.Field(i), seen)
		}
		return n
	}
	return 0
}
