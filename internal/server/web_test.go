package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// webTemplate is an Argo AnalysisTemplate with two web metrics: one that
// POSTs a JSON body with a secret bearer token and reads a field, one
// that reads a plain-text answer.
func webTemplate(base string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: web-gate}
spec:
  args:
  - name: service
  - name: api-token
    value: s3cret-token
  metrics:
  - name: health
    successCondition: result.status == "ok" && result.errors < 5
    provider:
      web:
        url: ` + base + `/health/{{args.service}}
        method: POST
        jsonBody: {service: "{{args.service}}"}
        headers:
        - {key: Authorization, value: "Bearer {{args.api-token}}"}
        jsonPath: "{$.data}"
        timeoutSeconds: 5
  - name: text
    successCondition: result == "ready"
    provider:
      web:
        url: ` + base + `/text
`
}

// A template with web metrics, run through the service to its verdict.
func TestWebMetricEndToEnd(t *testing.T) {
	var bad atomic.Bool
	var auth atomic.Value
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/health/shop" && r.Method == http.MethodPost:
			auth.Store(r.Header.Get("Authorization"))
			b, _ := io.ReadAll(r.Body)
			if string(b) != `{"service":"shop"}` || r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			errors := "1"
			if bad.Load() {
				errors = "9"
			}
			_, _ = io.WriteString(w, `{"data": {"status": "ok", "errors": `+errors+`}}`)
		case r.URL.Path == "/text":
			_, _ = io.WriteString(w, "ready")
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()

	s := start(t, options{prometheus: []string{"http://127.0.0.1:1"}, webAllow: []string{backend.URL + "/"}})
	run := func() api.Analysis {
		t.Helper()
		resp := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.service=shop", yamlType, webTemplate(backend.URL))
		if resp.status != http.StatusOK && resp.status != http.StatusCreated {
			t.Fatalf("status %d: %s", resp.status, resp.body)
		}
		if strings.Contains(string(resp.body), "s3cret-token") {
			t.Errorf("the secret argument's value is in the response: %s", resp.body)
		}
		return resp.analysis(t)
	}
	a := run()
	if a.Phase != api.PhaseSuccessful {
		t.Fatalf("phase %s: %+v", a.Phase, a.MetricResults)
	}
	if got := a.MetricResults[0].Measurements[0].Value; got != `{"errors":1,"status":"ok"}` {
		t.Errorf("health value %q", got)
	}
	if got := a.MetricResults[1].Measurements[0].Value; got != "ready" {
		t.Errorf("text value %q", got)
	}
	if got, _ := auth.Load().(string); got != "Bearer s3cret-token" {
		t.Errorf("the backend saw Authorization %q", got)
	}

	bad.Store(true)
	if a := run(); a.Phase != api.PhaseFailed {
		t.Errorf("with 9 errors: phase %s, want Failed", a.Phase)
	}
}

// Where a web metric may not go is a 400 naming the field, before anything
// is sent.
func TestWebMetricRefusals(t *testing.T) {
	var hits atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "1")
	}))
	defer backend.Close()
	spec := func(provider string) string {
		return `{"metrics": [{"name": "m", "successCondition": "true", "provider": ` + provider + `}]}`
	}
	webSpec := spec(`{"web": {"url": "` + backend.URL + `/x"}}`)

	for _, tt := range []struct {
		name     string
		allow    []string
		body     string
		field    string
		contains string
	}{
		{"no --web-allow", nil, webSpec, "metrics[0].provider.web.url", "--web-allow"},
		{"outside the prefixes", []string{backend.URL + "/y/"}, webSpec, "metrics[0].provider.web.url", "does not start with any allowed prefix"},
		{"an unknown provider", []string{backend.URL}, spec(`{"datadog": {"query": "x"}}`), "metrics[0].provider.datadog", "provider datadog is not supported by this canaryd (it runs judge, prometheus, web)"},
		{"two providers", []string{backend.URL}, spec(`{"web": {"url": "` + backend.URL + `/x"}, "prometheus": {"query": "up"}}`), "metrics[0].provider", "multiple providers specified"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, options{prometheus: []string{"http://127.0.0.1:1"}, webAllow: tt.allow})
			resp := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, tt.body)
			if resp.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", resp.status, resp.body)
			}
			p := resp.problem(t)
			if len(p.Errors) != 1 || p.Errors[0].Field != tt.field || !strings.Contains(p.Errors[0].Message, tt.contains) {
				t.Errorf("errors %+v, want one on %s saying %q", p.Errors, tt.field, tt.contains)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the backend had %d requests", n)
	}
}
