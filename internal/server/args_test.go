package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/spec"
)

// escapeSeed is a value that, substituted as it is into the seed
// template's label matchers, closes them and makes the ratio 1: echo-bad's
// Failed canary would be Successful.
const escapeSeed = `echo-bad"}[1m])) * 0 + 1 or vector(1) #`

// TestArgumentsCannotRewriteTheQuery runs the seed template, an Argo
// document, against a real Prometheus with a value that would rewrite its
// query: escaped into the label matcher, it asks for a namespace of that
// name and cannot pass. Only with --verbatim-args, which gives every caller
// the structure of every query, does the value rewrite the query, as it
// would in Argo Rollouts.
func TestArgumentsCannotRewriteTheQuery(t *testing.T) {
	prom := promtest.Start(t)
	for _, tt := range []struct {
		name     string
		limits   limits.Limits
		want     api.Phase
		wantText string
	}{
		{name: "by default", want: api.PhaseError, wantText: `destination_workload_namespace="echo-bad\"}[1m])) * 0 + 1 or vector(1) #"`},
		{name: "with --verbatim-args", limits: limits.Limits{VerbatimArgs: true}, want: api.PhaseSuccessful,
			wantText: `destination_workload_namespace="echo-bad"}[1m])) * 0 + 1 or vector(1) #"`},
	} {
		s := start(t, options{prometheus: []string{prom.URL}, limits: tt.limits})
		r := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace="+url.QueryEscape(escapeSeed), yamlType, seed(t))
		a := r.analysis(t)
		if a.Phase != tt.want {
			t.Errorf("%s: phase %s (%s), want %s", tt.name, a.Phase, a.Message, tt.want)
		}
		if q := a.MetricResults[0].Metadata["ResolvedPrometheusQuery"]; !strings.Contains(q, tt.wantText) {
			t.Errorf("%s: the query sent was\n%s\nwant it to hold %s", tt.name, q, tt.wantText)
		}
	}
}

// TestArgumentsRefusedWhereTheyWouldChangeStructure: outside quotes a value
// must be a plain literal; the answer is a 400 on the argument, before
// anything is sent to Prometheus.
func TestArgumentsRefusedWhereTheyWouldChangeStructure(t *testing.T) {
	prom := newCountingPrometheus(t)
	s := start(t, options{prometheus: []string{prom.srv.URL}, templates: templatesDir(t, map[string]string{"window.yaml": windowTemplate})})
	for _, tt := range []struct {
		name, path, contentType, body, field string
	}{
		{name: "a range from the query string", path: "/v1/templates/window/evaluate?arg.window=" + url.QueryEscape("1m])) or vector(1"), field: "args.window"},
		{name: "a range from the body", path: "/v1/templates/window/evaluate", contentType: jsonType, body: `{"args": {"window": "1m] or vector(1"}}`, field: "args.window"},
		{name: "a threshold in a condition", path: "/v1/templates/latency-p99/evaluate?arg.service=web&arg.threshold-ms=" + url.QueryEscape("0 || true"), field: "args.threshold-ms"},
		{name: "a posted document", path: "/v1/evaluate?arg.w=" + url.QueryEscape("5m] or vector(1"), contentType: yamlType,
			body: "args: [{name: w}]\nmetrics: [{name: m, provider: {prometheus: {query: 'rate(x[{{args.w}}])'}}}]\n", field: "args.w"},
		{name: "a posted document's own value", path: "/v1/evaluate", contentType: yamlType,
			body: "args: [{name: w, value: 'x) or vector(1'}]\nmetrics: [{name: m, provider: {prometheus: {query: 'rate({{args.w}}[5m])'}}}]\n", field: "args[0].value"},
	} {
		r := s.do(http.MethodPost, tt.path, tt.contentType, tt.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tt.name, r.status, r.body)
			continue
		}
		p := r.problem(t)
		if len(p.Errors) == 0 {
			t.Errorf("%s: no errors", tt.name)
		}
		for _, e := range p.Errors { // one for each field the value would go into
			if e.Field != tt.field || !strings.Contains(e.Message, "outside a string literal") {
				t.Errorf("%s: %+v, want errors on %s", tt.name, e, tt.field)
			}
		}
	}
	if n := prom.count(); n != 0 {
		t.Errorf("Prometheus got %d queries, want none", n)
	}
}

// windowTemplate takes its range from an argument.
const windowTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: window}
spec:
  args: [{name: window}]
  metrics:
  - name: m
    successCondition: result[0] >= 0
    provider: {prometheus: {query: 'sum(rate(istio_requests_total[{{args.window}}]))'}}
`

// countingPrometheus counts the queries it is sent and answers each with
// an empty vector.
type countingPrometheus struct {
	srv     *httptest.Server
	queries chan string
}

func newCountingPrometheus(t *testing.T) *countingPrometheus {
	p := &countingPrometheus{queries: make(chan string, 1000)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.queries <- r.Form.Get("query")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *countingPrometheus) count() int { return len(p.queries) }

// TestResolvedSpecBounded: many tags of one large value would make a
// query of hundreds of megabytes; it is a 400 naming --max-query-length,
// measured before it is built, and Prometheus is sent nothing.
func TestResolvedSpecBounded(t *testing.T) {
	prom := newCountingPrometheus(t)
	s := start(t, options{prometheus: []string{prom.srv.URL}})
	value := strings.Repeat("a", 10<<10)
	r := s.do(http.MethodPost, "/v1/evaluate", jsonType, fmt.Sprintf(`{"args": [{"name": "a", "value": %q}], "metrics": [{"name": "m", "provider": {"prometheus": {"query": %q}}}]}`,
		value, "x{a=\""+strings.Repeat("{{args.a}}", 60000)+"\"}"))
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %.300s", r.status, r.body)
	}
	p := r.problem(t)
	if len(p.Errors) != 1 || p.Errors[0].Field != "metrics[0].provider.prometheus.query" ||
		!strings.Contains(p.Errors[0].Message, "would be 614400007 bytes long, longer than the 16384 this canaryd accepts (--max-query-length)") {
		t.Errorf("errors: %+v", p.Errors)
	}
	// --max-query-length moves the bound.
	s = start(t, options{prometheus: []string{prom.srv.URL}, limits: limits.Limits{MaxQueryLength: 100}})
	r = s.do(http.MethodPost, "/v1/evaluate?arg.a="+strings.Repeat("b", 100), yamlType,
		"args: [{name: a}]\nmetrics: [{name: m, provider: {prometheus: {query: 'x{a=\"{{args.a}}\"}'}}}]\n")
	if p := r.problem(t); r.status != http.StatusBadRequest || len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "longer than the 100 this canaryd accepts (--max-query-length)") {
		t.Errorf("--max-query-length 100: %d %s", r.status, r.body)
	}
	if n := prom.count(); n != 0 {
		t.Errorf("Prometheus got %d queries, want none", n)
	}
}

// TestYAMLAliasesRefused: aliases to a 4 KiB value are a 400 naming where
// the anchor and the aliases are; half a megabyte of them, more nodes
// than spec.MaxYAMLNodes, a 400 on body saying so and that they may be
// aliases, from the body's bytes alone, answered well within the body's
// deadline; aliases in a template endpoint's body are refused too.
func TestYAMLAliasesRefused(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:1"}, templates: templatesDir(t, nil)})
	var b strings.Builder
	b.WriteString("x: &a \"" + strings.Repeat("x", 4096) + "\"\nmetrics:\n")
	for b.Len() < 600<<10 {
		b.WriteString("- *a\n")
	}
	began := time.Now()
	r := s.do(http.MethodPost, "/v1/evaluate", yamlType, b.String())
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the answer took %s", took)
	}
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", r.status)
	}
	p := r.problem(t)
	if len(p.Errors) != 1 || p.Errors[0].Field != "body" ||
		!strings.Contains(p.Errors[0].Message, fmt.Sprintf("more than %d YAML nodes", spec.MaxYAMLNodes)) ||
		!strings.Contains(p.Errors[0].Message, "may be YAML anchors and aliases") {
		t.Errorf("half a megabyte: errors %+v", p.Errors)
	}

	few := "x: &a \"" + strings.Repeat("x", 4096) + "\"\nmetrics:\n" + strings.Repeat("- *a\n", 10)
	r = s.do(http.MethodPost, "/v1/evaluate", yamlType, few)
	if r.status != http.StatusBadRequest {
		t.Fatalf("ten aliases: status %d, want 400", r.status)
	}
	p = r.problem(t)
	if len(p.Errors) < 2 || p.Errors[0].Field != "x" || p.Errors[1].Field != "metrics[0]" ||
		!strings.Contains(p.Errors[1].Message, "line 3, column 3: YAML alias *a") {
		t.Errorf("ten aliases: errors %+v", p.Errors[:min(len(p.Errors), 3)])
	}

	r = s.do(http.MethodPost, "/v1/templates/success-rate/evaluate", yamlType, "ns: &n echo\nargs: {namespace: *n}\n")
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "YAML anchor &n") {
		t.Errorf("a template's body: %d %s", r.status, r.body)
	}
}

// TestSecretArgumentsNeverShown: the value of a secret argument lands in a
// query, in a condition and in Prometheus' error (which quotes the query);
// it shows in no response, stream event or log line.
func TestSecretArgumentsNeverShown(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		body, _ := json.Marshal(map[string]string{"status": "error", "errorType": "bad_data", "error": "1:1: parse error: unexpected identifier in " + r.Form.Get("query")})
		_, _ = w.Write(body)
	}))
	t.Cleanup(prom.Close)
	s := start(t, options{prometheus: []string{prom.URL}})
	doc := `args: [{name: api-token}]
metrics:
- name: m
  successCondition: 'result[0] >= 0 && "{{args.api-token}}" != ""'
  consecutiveErrorLimit: 0
  provider:
    prometheus:
      query: 'up{token="{{args.api-token}}"}'
`
	path := "/v1/analyses?arg.api-token=" + secret
	var shown []string
	check := func(where string, text []byte) {
		shown = append(shown, where)
		if strings.Contains(string(text), secret) {
			t.Errorf("the secret shows in %s:\n%s", where, text)
		}
	}

	r := s.do(http.MethodPost, path+"&wait=true", yamlType, doc)
	a := r.analysis(t)
	check("a waited-for analysis", r.body)
	if a.Phase != api.PhaseError || !strings.Contains(a.MetricResults[0].Measurements[0].Message, `up{token="*****"}`) ||
		a.MetricResults[0].Metadata["ResolvedPrometheusQuery"] != `up{token="*****"}` {
		t.Errorf("the analysis does not show where the secret was masked: %s", r.body)
	}
	check("GET /v1/analyses/{id}", s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").body)
	check("GET /v1/analyses", s.do(http.MethodGet, "/v1/analyses", "", "").body)
	check("a round", s.do(http.MethodPost, "/v1/evaluate?arg.api-token="+secret, yamlType, doc).body)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, resp := s.openStream(ctx, http.MethodPost, path, yamlType, doc, "application/x-ndjson")
	for _, ev := range newEventReader(t, resp).all() {
		data, _ := json.Marshal(ev)
		check("a stream's "+string(ev.Type)+" event", data)
	}
	for _, e := range s.logs.All() {
		data, _ := json.Marshal(e.ContextMap())
		check("the log line "+e.Message, append([]byte(e.Message), data...))
	}
	if len(shown) < 8 {
		t.Errorf("looked at %d places only", len(shown))
	}
}
