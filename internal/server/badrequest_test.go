package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/server"
)

// TestBadRequests sends input that must be refused, each with the status,
// problem type and fields the problem must name, and checks that nothing
// was left running. No Prometheus is needed: nothing bad may reach one.
func TestBadRequests(t *testing.T) {
	const prom = "http://127.0.0.1:9"
	s := start(t, options{prometheus: []string{prom}, webhookAllow: []string{"https://hooks.example.com/canary"}})

	good := once("echo-good")
	metric := func(fields string) string {
		return `{"metrics": [{"name": "m", ` + fields + `, "provider": {"prometheus": {"query": "up"}}}]}`
	}
	for _, tc := range []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		status      int
		typ         string
		// fields must each appear among the problem's errors.
		fields []string
	}{
		{name: "malformed JSON", contentType: jsonType, body: `{"metrics": [`,
			status: 400, fields: []string{"body"}},
		{name: "YAML sent as JSON", contentType: jsonType, body: "metrics: []",
			status: 400, fields: []string{"body"}},
		{name: "malformed YAML", contentType: yamlType, body: "metrics:\n  - name: [unclosed\n",
			status: 400, fields: []string{"body"}},
		{name: "empty body", contentType: yamlType, body: "",
			status: 400, fields: []string{"body"}},
		{name: "not an object", contentType: jsonType, body: `[1, 2]`,
			status: 400, fields: []string{"body"}},
		{name: "wrong content type", contentType: "text/plain", body: good,
			status: 415, typ: server.ProblemUnsupportedMedia},
		{name: "curl's default content type", contentType: "application/x-www-form-urlencoded", body: good,
			status: 415, typ: server.ProblemUnsupportedMedia},
		{name: "no content type", contentType: "", body: good,
			status: 415, typ: server.ProblemUnsupportedMedia},
		{name: "too large", contentType: yamlType, body: "# " + strings.Repeat("x", server.DefaultMaxBodyBytes) + "\n" + good,
			status: 413, typ: server.ProblemTooLarge},
		{name: "evaluate, too large", path: "/v1/evaluate", contentType: jsonType, body: strings.Repeat(" ", server.DefaultMaxBodyBytes+1),
			status: 413, typ: server.ProblemTooLarge},
		{name: "evaluate, wrong content type", path: "/v1/evaluate", contentType: "text/csv", body: good,
			status: 415, typ: server.ProblemUnsupportedMedia},
		{name: "unknown fields, all of them", contentType: jsonType,
			body:   `{"metrics": [{"name": "m", "intervall": "1m", "provider": {"prometheus": {"query": "up", "adress": "x"}}}], "argz": []}`,
			status: 400, fields: []string{"metrics[0].intervall", "metrics[0].provider.prometheus.adress", "argz"}},
		{name: "wrong types, a provider's too", contentType: jsonType,
			body:   `{"metrics": [{"name": "m", "count": true, "provider": {"prometheus": {"query": "up", "timeout": "10"}}}]}`,
			status: 400, fields: []string{"metrics[0].count", "metrics[0].provider.prometheus.timeout"}},
		{name: "unknown kind", contentType: yamlType, body: "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nspec: {}\n",
			status: 400, fields: []string{"kind"}},
		{name: "a query parameter without a name", path: "/v1/analyses?=x&arg.namespace=echo", contentType: jsonType, body: good,
			status: 400, fields: []string{"query"}},
		{name: "no metrics", contentType: jsonType, body: `{"metrics": []}`,
			status: 400, fields: []string{"metrics"}},
		{name: "validation rules", contentType: jsonType,
			body:   `{"metrics": [{"name": "m", "interval": "soon", "count": "abc", "provider": {"prometheus": {"query": "up"}}}, {"name": "m", "provider": {"prometheus": {"query": "up"}}}]}`,
			status: 400, fields: []string{"metrics[0].interval", "metrics[0].count", "metrics[1].name"}},
		{name: "a condition that does not compile", contentType: jsonType, body: metric(`"successCondition": "result[0] >>= 1"`),
			status: 400, fields: []string{"metrics[0].successCondition"}},
		{name: "a provider this canaryd does not run", contentType: jsonType, body: `{"metrics": [{"name": "m", "provider": {"datadog": {"query": "x"}}}]}`,
			status: 400, fields: []string{"metrics[0].provider.datadog"}},
		{name: "a web metric without --web-allow", contentType: jsonType, body: `{"metrics": [{"name": "m", "provider": {"web": {"url": "http://x"}}}]}`,
			status: 400, fields: []string{"metrics[0].provider.web.url"}},
		{name: "a Prometheus that is not allowed", contentType: jsonType,
			body:   `{"metrics": [{"name": "m", "provider": {"prometheus": {"address": "http://elsewhere:9090", "query": "up"}}}]}`,
			status: 400, fields: []string{"metrics[0].provider.prometheus.address"}},
		{name: "an argument without a value", path: "/v1/analyses", contentType: yamlType, body: seed(t),
			status: 400, fields: []string{"args[0].value"}},
		{name: "an undeclared argument", path: "/v1/analyses?arg.namespace=echo&arg.nope=1", contentType: yamlType, body: seed(t),
			status: 400, fields: []string{"args.nope"}},
		{name: "an argument given twice differently", path: "/v1/analyses?arg.namespace=a&arg.namespace=b", contentType: yamlType, body: seed(t),
			status: 400, fields: []string{"arg.namespace"}},
		{name: "an unknown query parameter", path: "/v1/analyses?wiat=true", contentType: jsonType, body: good,
			status: 400, fields: []string{"wiat"}},
		{name: "wait that is not a boolean", path: "/v1/analyses?wait=soon", contentType: jsonType, body: good,
			status: 400, fields: []string{"wait"}},
		{name: "wait on evaluate", path: "/v1/evaluate?wait=true", contentType: jsonType, body: good,
			status: 400, fields: []string{"wait"}},
		{name: "query and body problems together", path: "/v1/analyses?wait=maybe", contentType: jsonType, body: metric(`"successCondition": "result["`),
			status: 400, fields: []string{"wait", "metrics[0].successCondition"}},
		{name: "a webhook that is not allowed", path: "/v1/analyses?webhook=https://hooks.example.com.evil.test/canary", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook"}},
		{name: "a webhook that is not a URL", path: "/v1/analyses?webhook=hooks", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook"}},
		{name: "a webhook that only looks allowed", path: "/v1/analyses?webhook=https://hooks.example.com/canaryx", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook"}},
		{name: "a webhook with credentials", path: "/v1/analyses?webhook=https://u:p@hooks.example.com/canary", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook"}},
		{name: "webhook events that do not exist", path: "/v1/analyses?webhook=https://hooks.example.com/canary&webhook.events=completed,measurements&webhook.events=all",
			contentType: jsonType, body: good, status: 400, fields: []string{"webhook.events[1]", "webhook.events[2]"}},
		{name: "webhook events without a webhook", path: "/v1/analyses?webhook.events=measurement", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook.events"}},
		{name: "a webhook given twice, differently", path: "/v1/analyses?webhook=https://hooks.example.com/canary/1&webhook=https://hooks.example.com/canary/2",
			contentType: jsonType, body: good, status: 400, fields: []string{"webhook"}},
		{name: "a webhook on evaluate", path: "/v1/evaluate?webhook=https://hooks.example.com/canary&webhook.events=completed", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook", "webhook.events"}},
		{name: "a webhook on a gate", path: "/v1/gates?webhook=https://hooks.example.com/canary", contentType: jsonType, body: good,
			status: 400, fields: []string{"webhook"}},
		{name: "evaluate, invalid", path: "/v1/evaluate", contentType: jsonType, body: metric(`"failureLimit": "x"`),
			status: 400, fields: []string{"metrics[0].failureLimit"}},
		{name: "unknown route", method: http.MethodGet, path: "/v2/analyses",
			status: 404, typ: server.ProblemNotFound},
		{name: "unknown analysis", method: http.MethodGet, path: "/v1/analyses/nope",
			status: 404, typ: server.ProblemNotFound},
		{name: "terminate an unknown analysis", method: http.MethodDelete, path: "/v1/analyses/nope",
			status: 404, typ: server.ProblemNotFound},
		{name: "wrong method", method: http.MethodPut, path: "/v1/analyses", contentType: jsonType, body: good,
			status: 405, typ: server.ProblemMethodNotAllowed},
		{name: "unknown phase filter", method: http.MethodGet, path: "/v1/analyses?phase=Done",
			status: 400, fields: []string{"phase"}},
	} {
		if tc.method == "" {
			tc.method = http.MethodPost
		}
		if tc.path == "" {
			tc.path = "/v1/analyses"
		}
		if tc.typ == "" {
			tc.typ = server.ProblemInvalidInput
		}
		resp := s.do(tc.method, tc.path, tc.contentType, tc.body)
		if resp.status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.status, tc.status, resp.body)
			continue
		}
		p := resp.problem(t)
		if p.Type != tc.typ || p.Title == "" || p.Detail == "" {
			t.Errorf("%s: problem %+v, want type %s with a title and a detail", tc.name, p, tc.typ)
		}
		got := map[string]bool{}
		for _, e := range p.Errors {
			got[e.Field] = true
			if e.Message == "" {
				t.Errorf("%s: field error %q has no message", tc.name, e.Field)
			}
		}
		for _, f := range tc.fields {
			if !got[f] {
				t.Errorf("%s: no error on field %q; errors: %+v", tc.name, f, p.Errors)
			}
		}
	}

	if list := s.analyses.List(); len(list) != 0 {
		t.Errorf("bad requests left %d analyses behind", len(list))
	}
	if allow := s.do(http.MethodPut, "/v1/analyses/x", "", "").header.Get("Allow"); allow != "GET, DELETE" {
		t.Errorf("405 Allow = %q, want %q", allow, "GET, DELETE")
	}
}

// TestYAMLContentTypes checks that every YAML media type, and JSON, is
// accepted.
func TestYAMLContentTypes(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	// Evaluating a bad spec proves the body was read as the type allows
	// without measuring anything.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/yaml", "application/x-yaml", "text/yaml"} {
		resp := s.do(http.MethodPost, "/v1/evaluate", ct, `{"metrics": []}`)
		if resp.status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(resp.problem(t).Errors), "metrics") {
			t.Errorf("%s: status %d %s, want 400 on metrics (the body was read)", ct, resp.status, resp.body)
		}
	}
}
