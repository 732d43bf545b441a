package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// TestValidate checks POST /v1/validate: a document that would run is a
// 200 naming its metrics, and one that would not is the 400 POST
// /v1/analyses gives it, each problem at the line of the body it is on,
// with nothing started.
func TestValidate(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})

	r := s.do(http.MethodPost, "/v1/validate?arg.namespace=echo", yamlType, seed(t))
	var v server.Validation
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != http.StatusOK || !v.Valid ||
		len(v.Metrics) != 1 || v.Metrics[0] != "non-5xx-rate" || !strings.Contains(v.Summary, "non-5xx-rate (3 measurements, every 50ms)") {
		t.Fatalf("a valid document: %d %+v %v\n%s", r.status, v, err, r.body)
	}

	// Three problems in YAML, each on its line.
	bad := strings.NewReplacer(
		"successCondition: result[0] >= 0.99", "successCondition: reslt[0] >= 0.99",
		"count: 3", "count: -3",
		"interval: 50ms", "interval: soon",
	).Replace(seed(t))
	r = s.do(http.MethodPost, "/v1/validate?arg.namespace=echo", yamlType, bad)
	if r.status != http.StatusBadRequest {
		t.Fatalf("an invalid document: %d\n%s", r.status, r.body)
	}
	p := r.problem(t)
	want := map[string]int{
		"metrics[0].successCondition": lineOf(bad, "successCondition:"),
		"metrics[0].count":            lineOf(bad, "count: -3"),
		"metrics[0].interval":         lineOf(bad, "interval: soon"),
	}
	got := map[string]int{}
	for _, e := range p.Errors {
		got[e.Field] = e.Line
	}
	for field, line := range want {
		if line == 0 || got[field] != line {
			t.Errorf("%s: on line %d, want %d (errors %+v)", field, got[field], line, p.Errors)
		}
	}

	// An argument without a value is at its declaration; one given in
	// the query that the spec does not declare has no line.
	r = s.do(http.MethodPost, "/v1/validate?arg.nope=1", yamlType, seed(t))
	got = map[string]int{}
	for _, e := range r.problem(t).Errors {
		got[e.Field] = e.Line
	}
	if l, ok := got["args.nope"]; !ok || l != 0 {
		t.Errorf("the query's argument: given line %d (present %v); want none", l, ok)
	}
	if l := got["args[0].value"]; l != lineOf(seed(t), "- name: namespace") || l == 0 {
		t.Errorf("the argument without a value: line %d, want %d", l, lineOf(seed(t), "- name: namespace"))
	}

	// JSON has lines too; a required field left out is at what holds it
	// (the metric's object, from its brace).
	doc := "{\n  \"metrics\": [\n    {\n      \"name\": \"m\",\n      \"successCondition\": \"result[0] > 0\"\n    }\n  ]\n}"
	r = s.do(http.MethodPost, "/v1/validate", jsonType, doc)
	p = r.problem(t)
	if r.status != http.StatusBadRequest || len(p.Errors) == 0 {
		t.Fatalf("a metric without a provider: %d\n%s", r.status, r.body)
	}
	for _, e := range p.Errors {
		if e.Line != 3 {
			t.Errorf("%s: line %d, want 3 (the metric's first line)", e.Field, e.Line)
		}
	}

	// A body that does not parse: the problem is on the body, no line.
	r = s.do(http.MethodPost, "/v1/validate", yamlType, "metrics: [\n")
	if p := r.problem(t); r.status != http.StatusBadRequest || len(p.Errors) == 0 {
		t.Errorf("YAML that does not parse: %d\n%s", r.status, r.body)
	}

	// Bounds and media types are the API's.
	if r := s.do(http.MethodPost, "/v1/validate", "text/plain", "metrics: []"); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", r.status)
	}
	if r := s.do(http.MethodPost, "/v1/validate", yamlType, "# "+strings.Repeat("x", 1<<20)+"\n"); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d", r.status)
	}
	// Nothing was started.
	list := s.do(http.MethodGet, "/v1/analyses", "", "")
	if strings.Contains(string(list.body), `"id"`) {
		t.Errorf("validate started an analysis: %s", list.body)
	}
}

// TestValidateAuth checks that validate is behind the token, as all of
// /v1 is.
func TestValidateAuth(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokens: []string{"s3cret"}})
	if r := s.do(http.MethodPost, "/v1/validate", yamlType, once("echo")); r.status != http.StatusUnauthorized {
		t.Errorf("without a token: %d", r.status)
	}
	if r := s.do(http.MethodPost, "/v1/validate", yamlType, once("echo"), "Authorization", "Bearer s3cret"); r.status != http.StatusOK {
		t.Errorf("with the token: %d\n%s", r.status, r.body)
	}
}

// TestBacktestHTML checks that a backtest asked for as text/html is
// answered with its report: a series' strip of verdicts, a cell per
// analysis, or one analysis' report.
func TestBacktestHTML(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}})
	path := "/v1/backtests?arg.namespace=" + promtest.IncidentNamespace + "&start=" + at(prom.Now.Add(-80*time.Minute)) +
		"&end=" + at(prom.Now.Add(-30*time.Minute))
	series := s.do(http.MethodPost, path+"&every=10m", yamlType, seedSpec(t))
	var body server.BacktestSeries
	if err := json.Unmarshal(series.body, &body); err != nil {
		t.Fatalf("the series as JSON: %v\n%s", err, series.body)
	}
	r := s.do(http.MethodPost, path+"&every=10m", yamlType, seedSpec(t), "Accept", "text/html")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	cells := regexp.MustCompile(`<rect class="cell c-(\w+)[ "]`).FindAllStringSubmatch(string(r.body), -1)
	if len(cells) != len(body.Results) || len(cells) == 0 {
		t.Fatalf("%d cells for %d analyses", len(cells), len(body.Results))
	}
	for i, c := range cells {
		if api.Phase(c[1]) != body.Results[i].Analysis.Phase {
			t.Errorf("cell %d is %s, its analysis %s", i, c[1], body.Results[i].Analysis.Phase)
		}
	}
	if !strings.Contains(string(r.body), "would have failed") || strings.Contains(string(r.body), "<script") {
		t.Error("the report does not say where it would have fired, or holds a script")
	}
	one := s.do(http.MethodPost, path, yamlType, seedSpec(t), "Accept", "text/html")
	if one.status != http.StatusOK || !strings.Contains(string(one.body), `id="verdict">Failed<`) || strings.Contains(string(one.body), `class="cell`) {
		t.Errorf("one backtest as HTML: %d\n%s", one.status, one.body[:min(len(one.body), 600)])
	}
}
