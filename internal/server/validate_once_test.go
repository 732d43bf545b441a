package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
)

// fiveFaults is a template with five problems of five kinds, none of
// which needs another's fix to be found: a value of the wrong type, a tag
// naming no argument, an unknown name in a condition, an address this
// canaryd does not allow, and a query that does not parse.
const fiveFaults = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: five-faults
spec:
  args:
    - name: service
  metrics:
    - name: error-rate
      interval: 5
      count: 3
      successCondition: reslt[0] < 0.01
      provider:
        prometheus:
          address: http://elsewhere.example:9090
          query: |
            sum(rate(http_requests_total{service="{{args.service}}", namespace="{{args.namespace}}", code=~"5.."}[5m])
            / sum(rate(http_requests_total{service="{{args.service}}"}[5m]))
`

// TestValidateReportsEveryProblemAtOnce posts fiveFaults to /v1/validate
// and gets its five problems in one answer, each on its field's line.
func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})
	r := s.do(http.MethodPost, "/v1/validate?arg.service=api", yamlType, fiveFaults)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400\n%s", r.status, r.body)
	}
	type found struct {
		line    int
		message string
	}
	want := map[string]found{
		"metrics[0].interval":                    {lineOf(fiveFaults, "interval: 5"), "must be a string, got a number"},
		"metrics[0].successCondition":            {lineOf(fiveFaults, "successCondition:"), "unknown name reslt"},
		"metrics[0].provider.prometheus.address": {lineOf(fiveFaults, "address:"), "is not an allowed Prometheus"},
		"metrics[0].provider.prometheus.query":   {lineOf(fiveFaults, "query: |"), "failed to resolve {{args.namespace}}"},
	}
	query := 0
	for _, e := range r.problem(t).Errors {
		if e.Field == "metrics[0].provider.prometheus.query" && strings.HasPrefix(e.Message, "the query does not parse as PromQL: ") {
			query++
			if !strings.Contains(e.Message, "unclosed left parenthesis") || e.Line != lineOf(fiveFaults, "query: |") {
				t.Errorf("the query's parse error: line %d, %q", e.Line, e.Message)
			}
			continue
		}
		w, ok := want[e.Field]
		if !ok {
			t.Errorf("unexpected problem %s (line %d): %s", e.Field, e.Line, e.Message)
			continue
		}
		if !strings.Contains(e.Message, w.message) || e.Line != w.line || w.line == 0 {
			t.Errorf("%s: line %d, %q; want line %d, %q", e.Field, e.Line, e.Message, w.line, w.message)
		}
		delete(want, e.Field)
	}
	if query != 1 {
		t.Errorf("the query's parse error reported %d times, want once", query)
	}
	for field, w := range want {
		t.Errorf("%s: not reported (want %q)", field, w.message)
	}
}
