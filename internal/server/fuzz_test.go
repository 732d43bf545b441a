package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// FuzzCreateAnalysis sends arbitrary bodies, content types, query strings
// and Accept headers to POST /v1/analyses: the answer must never be a 5xx,
// every error must be a problem document, and a refused request must leave
// nothing running.
func FuzzCreateAnalysis(f *testing.F) {
	f.Add("application/yaml", "arg.namespace=echo", "", "metrics:\n- name: m\n  provider: {prometheus: {query: up}}\n")
	f.Add("application/json", "wait=maybe", "application/x-ndjson", `{"metrics": [{"name": "m", "successCondition": "result >", "provider": {"prometheus": {"query": "up"}}}]}`)
	f.Add("text/yaml", "webhook=http://x", "text/event-stream", "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisRun\nspec: {metrics: []}\n")
	f.Add("application/x-yaml; charset=utf-8", "arg.=1&arg.a=1&arg.a=2", "", "{metrics: [{name: a, count: '{{args.a}}'}], args: [{name: a}]}")
	f.Add("application/json", "webhook.events=measurement,,x&webhook=http://u:p@x/?t=1&webhook.events=completed", "", "{}")
	f.Add("application/json", "%zz", "", "[")

	// Measurements fail at once and never touch the network.
	failing := analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{Err: errors.New("no Prometheus in a fuzz test")}
	})
	sources := PromAndJudge(func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		if m.Address != "" {
			return nil, nil, []api.FieldError{{Field: "provider.prometheus.address", Message: "not allowed"}}
		}
		return failing, nil, nil
	})

	f.Fuzz(func(t *testing.T, contentType, query, accept, body string) {
		svc, err := analyses.NewAnalyses(analyses.AnalysesOptions{MaxRunning: 10, MaxFinished: 10, Retention: time.Hour, ErrorRetryInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(Options{Analyses: svc, Providers: sources, MaxBodyBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		// A wait or a stream lasts until the caller hangs up, which the
		// deadline stands in for.
		ctx, hangUp := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer hangUp()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/analyses", strings.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		over, cancel := context.WithCancel(context.Background())
		cancel()
		running := svc.Drain(over)
		svc.WaitWebhooks(over)

		if rec.Code >= 500 {
			t.Fatalf("status %d for input: %s", rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p api.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Type == "" {
				t.Fatalf("status %d with a body that is not its problem: %s", rec.Code, rec.Body)
			}
			if running != 0 {
				t.Fatalf("a refused request (%d) left %d analyses running", rec.Code, running)
			}
		}
	})
}

// FuzzTemplateBody decodes arbitrary bodies of the template and gate
// endpoints: never a panic, and every problem names its field.
func FuzzTemplateBody(f *testing.F) {
	f.Add(true, false, `{"args": {"namespace": "echo", "n": 1, "b": true}}`)
	f.Add(true, true, `{"name": "podinfo", "namespace": "test", "phase": "Progressing", "checksum": "85d557f47b", "metadata": {"threshold": "0.99"}}`)
	f.Add(false, true, "args: {namespace: [x]}\nmetadata: 7\nwebhook: {url: 1, events: [a]}\n")
	f.Add(false, false, "- a\n- b\n")
	f.Add(true, false, `{"args": null, "webhook": null}`)
	f.Fuzz(func(t *testing.T, isJSON, flagger bool, body string) {
		got, errs := decodeTemplateBody([]byte(body), isJSON, flagger)
		for _, e := range errs {
			if e.Field == "" || e.Message == "" {
				t.Fatalf("a problem without its field or message: %+v", e)
			}
		}
		if got.flagger != nil && !flagger {
			t.Fatal("Flagger's payload was read on an endpoint that does not take it")
		}
	})
}
