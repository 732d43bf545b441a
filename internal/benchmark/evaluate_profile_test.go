package benchmark

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	promclient "github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// BenchmarkEvaluateInProcess is one round of POST /v1/evaluate served in
// the benchmark's own process, wired as canaryd serve wires it (a JSON
// access log, the metrics, the Prometheus provider) against a real
// Prometheus, beside the do-nothing gateway's handler (proxyHandler) on
// the same query. BenchmarkEvaluateVsDirect measures canaryd as a process
// of its own, which a profile of the benchmark does not see; this one is
// what -cpuprofile and -memprofile are for:
//
//	go test -run '^$' -bench EvaluateInProcess -benchtime 2000x \
//	  -cpuprofile cpu.out -memprofile mem.out ./internal/benchmark/
//	go tool pprof -top -focus ServeHTTP cpu.out
//
// Each request is served by the handler directly (httptest's recorder, no
// connection of its own), so that its allocations per round are canaryd's
// and the query's to Prometheus, not a client's.
func BenchmarkEvaluateInProcess(b *testing.B) {
	evaluateBeside(b, promtest.Start(b).URL)
}

// BenchmarkEvaluateStandIn is BenchmarkEvaluateInProcess against a
// loopback stand-in that answers the seed query's vector at once: without
// Prometheus' own time and its variation, the difference between the two
// handlers' ns/op is canaryd's own work in a round, to a microsecond.
func BenchmarkEvaluateStandIn(b *testing.B) {
	const answer = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1599076435.123,"0.9993"]}]}}`
	stand := newStandIn(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	evaluateBeside(b, stand.URL)
}

// evaluateBeside serves rounds of the seed query against the Prometheus
// (or stand-in) at promURL, by canaryd's handler and by the gateway's.
func evaluateBeside(b *testing.B, promURL string) {
	query := promtest.SeedQuery("echo-good")
	body := evaluateBody(query)
	b.Run("handler=evaluate", func(b *testing.B) {
		serveRounds(b, inProcessServe(b, promURL), "/v1/evaluate", body, `"phase":"Successful"`)
	})
	b.Run("handler=proxy", func(b *testing.B) {
		serveRounds(b, proxyHandler(promURL, query), "/v1/evaluate", body, `"status":"success"`)
	})
}

func serveRounds(b *testing.B, h http.Handler, path, body, want string) {
	round := func() {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	for range 50 { // connections, compiled conditions, Prometheus' caches
		round()
	}
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
}

// evaluateBody is the body of a round of the seed's success-rate metric on
// query.
func evaluateBody(query string) string {
	body, _ := json.Marshal(map[string]any{"metrics": []any{map[string]any{
		"name":             "non-5xx-rate",
		"successCondition": "result[0] >= 0.99",
		"provider":         map[string]any{"prometheus": map[string]any{"query": query}},
	}}})
	return string(body)
}

// inProcessServe is canaryd serve's handler with its defaults, against the
// Prometheus at promURL, logging as serve does to nowhere.
func inProcessServe(b *testing.B, promURL string) http.Handler {
	reg := promclient.NewRegistry()
	provider, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "default", URL: promURL}}, Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(provider.CloseIdleConnections)
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "time"
	enc.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	enc.EncodeDuration = zapcore.StringDurationEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(io.Discard)), zapcore.InfoLevel))
	cfg := config.Default()
	svc, err := analyses.NewAnalyses(analyses.AnalysesOptions{Logger: log, Registerer: reg,
		MaxRunning: cfg.MaxAnalyses, MaxFinished: cfg.MaxFinished, Retention: cfg.Retention,
		ErrorRetryInterval: cfg.ErrorRetry, MaxDuration: cfg.MaxAnalysisDuration, MaxBacktests: cfg.MaxBacktests,
		MaxStreams: cfg.MaxStreams, MaxRounds: cfg.MaxRounds, MaxRetainedBytes: cfg.MaxRetainedBytes,
		MinRetention: cfg.MinRetention})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Close)
	h, err := server.New(server.Options{Logger: log, Registerer: reg, Gatherer: reg, Analyses: svc,
		Providers: promAndJudge(provider.Source)})
	if err != nil {
		b.Fatal(err)
	}
	return h
}
