package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// wantError is a field error a problem must have: its field, and its
// pointer into the body ("-" for none: the field is not in the body).
type wantError struct {
	field, pointer string
	// message, when set, must be part of the message.
	message string
}

const noPointer = "-"

// checkErrors fails the test unless p's errors are exactly want, in any
// order, each with RFC 9457's detail equal to its message.
func checkErrors(t *testing.T, name string, p api.Problem, want ...wantError) {
	t.Helper()
	if len(p.Errors) != len(want) {
		t.Errorf("%s: errors %s, want %d: %+v", name, errorsText(p.Errors), len(want), want)
		return
	}
	for _, w := range want {
		found := false
		for _, e := range p.Errors {
			pointer := noPointer
			if e.Pointer != nil {
				pointer = *e.Pointer
			}
			if e.Field == w.field && pointer == w.pointer && strings.Contains(e.Message, w.message) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no error on %q with pointer %q and a message containing %q; errors: %s", name, w.field, w.pointer, w.message, errorsText(p.Errors))
		}
	}
	for _, e := range p.Errors {
		if e.Message == "" || e.Detail != e.Message {
			t.Errorf("%s: error on %q: detail %q, message %q; want the message, twice", name, e.Field, e.Detail, e.Message)
		}
	}
}

func errorsText(errs []api.FieldError) string {
	var b strings.Builder
	for _, e := range errs {
		pointer := "none"
		if e.Pointer != nil {
			pointer = fmt.Sprintf("%q", *e.Pointer)
		}
		fmt.Fprintf(&b, "\n  {field %q, pointer %s, message %q}", e.Field, pointer, e.Message)
	}
	return b.String()
}

// argConditionTemplate has a condition made longer by an argument, so
// that a request can make it as long as it likes.
const argConditionTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: arg-condition}
spec:
  args:
    - name: condition
  metrics:
    - name: m
      successCondition: '"{{args.condition}}" != ""'
      provider: {prometheus: {query: up}}
`

// bodyRoutes are the endpoints that take a body: the four that take a
// document, and the template endpoints.
var (
	documentRoutes = []string{"/v1/analyses", "/v1/evaluate", "/v1/gates", "/v1/backtests?start=-1h"}
	templateRoutes = []string{"/v1/templates/success-rate/analyses", "/v1/templates/success-rate/evaluate",
		"/v1/templates/success-rate/backtests?start=-1h", "/v1/gates/success-rate"}
)

// TestNotUTF8 sends bodies that are not UTF-8, JSON and YAML, to every
// endpoint that takes one: each is a 400 on the body as a whole, saying
// where the first invalid byte is, and starts nothing. Without the check,
// the decoders would quietly read the invalid bytes as U+FFFD.
func TestNotUTF8(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"},
		templates: templatesDir(t, map[string]string{"flagger.yaml": flaggerTemplate})})
	query := promtest.SeedQuery("echo")
	documents := map[string]string{
		jsonType: `{"metrics": [{"name": "m` + "\xff" + `", "provider": {"prometheus": {"query": ` + strconv.Quote(query) + `}}}]}`,
		yamlType: "metrics:\n- name: m\n  provider:\n    prometheus:\n      query: 'up{namespace=\"echo\xc3(\"}'\n",
	}
	args := map[string]string{
		jsonType: `{"args": {"namespace": "echo` + "\xfe" + `"}}`,
		yamlType: "args:\n  namespace: \"\xe2\x82\"\n",
	}
	flagger := `{"name": "podinfo", "namespace": "echo` + "\xed\xa0\x80" + `", "phase": "Progressing", "checksum": "x"}` // an encoded surrogate
	type request struct{ path, contentType, body, where string }
	var requests []request
	for _, ct := range []string{jsonType, yamlType} {
		for _, path := range documentRoutes {
			requests = append(requests, request{path, ct, documents[ct], map[string]string{jsonType: "line 1, column 25", yamlType: "line 5, column 33"}[ct]})
		}
		for _, path := range templateRoutes {
			requests = append(requests, request{path, ct, args[ct], map[string]string{jsonType: "line 1, column 29", yamlType: "line 2, column 15"}[ct]})
		}
	}
	requests = append(requests, request{"/v1/gates/flagger-success-rate", jsonType, flagger, "line 1, column 39"})
	for _, r := range requests {
		name := r.contentType + " " + r.path
		resp := s.do(http.MethodPost, r.path, r.contentType, r.body)
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", name, resp.status, resp.body)
			continue
		}
		p := resp.problem(t)
		checkErrors(t, name, p, wantError{field: "body", pointer: "", message: "not valid UTF-8 (" + r.where})
	}
	if n := len(s.analyses.List()); n != 0 {
		t.Errorf("%d analyses started by bodies that are not UTF-8", n)
	}

	// Text beyond ASCII, and a byte order mark, are UTF-8: read, then
	// refused for what they say (an argument the template lacks), not for
	// their encoding.
	for _, body := range []string{`{"args": {"nämespace": "échø"}}`, "\xef\xbb\xbf" + `{"args": {"nope": "1"}}`} {
		resp := s.do(http.MethodPost, "/v1/templates/success-rate/evaluate?arg.namespace=echo", jsonType, body)
		if resp.status != http.StatusBadRequest || strings.Contains(string(resp.body), "UTF-8") {
			t.Errorf("%q: %d %s, want a 400 on the argument", body, resp.status, resp.body)
		}
	}
}

// TestOversizedPartsNamed checks that every refusal for size names the
// part that is too large in its errors, with the part's pointer into the
// body: the body over 1 MiB (413), more metrics than --max-metrics, a
// condition over --max-condition-length or the node budget, a document
// nested too deep, a backtest's window.
func TestOversizedPartsNamed(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"},
		limits:    limits.Limits{MaxMetrics: 2, MaxConditionLength: 40, MaxBacktestWindow: 2 * time.Hour},
		templates: templatesDir(t, map[string]string{"arg-condition.yaml": argConditionTemplate, "flagger.yaml": flaggerTemplate})})

	// The body over the limit, on every endpoint that takes one, told by
	// its Content-Length or found while reading it.
	huge := `{"args": {"namespace": "` + strings.Repeat("x", server.DefaultMaxBodyBytes) + `"}}`
	for _, path := range append(append([]string{"/v1/gates/flagger-success-rate"}, documentRoutes...), templateRoutes...) {
		resp := s.do(http.MethodPost, path, jsonType, huge)
		if resp.status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413", path, resp.status)
			continue
		}
		p := resp.problem(t)
		if p.Type != server.ProblemTooLarge {
			t.Errorf("%s: type %s, want %s", path, p.Type, server.ProblemTooLarge)
		}
		checkErrors(t, path, p, wantError{field: "body", pointer: "", message: "larger than the limit of 1048576 bytes"})
	}
	t.Run("chunked", func(t *testing.T) {
		req := s.request(context.Background(), http.MethodPost, "/v1/evaluate", jsonType, "")
		req.Body = io.NopCloser(strings.NewReader(huge)) // no Content-Length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data := readAll(t, resp.Body)
		checkResponse(t, req, resp.StatusCode, resp.Header, data)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413: %s", resp.StatusCode, data)
		}
		checkErrors(t, "chunked", response{status: resp.StatusCode, header: resp.Header, body: data}.problem(t),
			wantError{field: "body", pointer: "", message: "larger than the limit"})
	})

	metric := func(i int, condition string) string {
		return fmt.Sprintf(`{"name": "m%d", "successCondition": %q, "provider": {"prometheus": {"query": "up"}}}`, i, condition)
	}
	long := "result[0] > 1 || result[0] > 2 || result[0] > 3"
	bare := func(metrics ...string) string { return `{"metrics": [` + strings.Join(metrics, ", ") + `]}` }
	argo := func(metrics ...string) string {
		return `{"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": "x"}, "spec": ` + bare(metrics...) + `}`
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	type check struct {
		name, path, body string
		want             wantError
	}
	var checks []check
	for _, path := range documentRoutes {
		checks = append(checks,
			check{"a condition over --max-condition-length, bare", path, bare(metric(0, "true"), metric(1, long)),
				wantError{"metrics[1].successCondition", "/metrics/1/successCondition", "(--max-condition-length)"}},
			check{"a condition over --max-condition-length, Argo", path, argo(metric(0, long)),
				wantError{"metrics[0].successCondition", "/spec/metrics/0/successCondition", "(--max-condition-length)"}},
			check{"metrics over --max-metrics, bare", path, bare(metric(0, "true"), metric(1, "true"), metric(2, "true")),
				wantError{"metrics", "/metrics", "(--max-metrics)"}},
			check{"metrics over --max-metrics, Argo", path, argo(metric(0, "true"), metric(1, "true"), metric(2, "true")),
				wantError{"metrics", "/spec/metrics", "(--max-metrics)"}},
			check{"nested too deep", path, `{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up"}}, "x": ` + deep + `}]}`,
				wantError{"body", "", "nested more than"}},
		)
	}
	for _, path := range []string{"/v1/templates/arg-condition/analyses", "/v1/templates/arg-condition/evaluate",
		"/v1/templates/arg-condition/backtests?start=-1h", "/v1/gates/arg-condition"} {
		// The condition is the template's field, made long by the body:
		// it is not in the body, so it has no pointer.
		checks = append(checks, check{"a template's condition over --max-condition-length", path, `{"args": {"condition": "` + long + `"}}`,
			wantError{"metrics[0].successCondition", noPointer, "(--max-condition-length)"}})
	}
	checks = append(checks,
		check{"a backtest window over --max-backtest-window", "/v1/backtests?start=-3h", bare(metric(0, "true")),
			wantError{"end", noPointer, "(--max-backtest-window"}},
		check{"the same of a template", "/v1/templates/success-rate/backtests?start=-3h&arg.namespace=echo", "",
			wantError{"end", noPointer, "(--max-backtest-window"}})
	for _, c := range checks {
		name := c.name + ": " + c.path
		resp := s.do(http.MethodPost, c.path, jsonType, c.body)
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", name, resp.status, resp.body)
			continue
		}
		checkErrors(t, name, resp.problem(t), c.want)
	}

	// The node budget, at the server's default.
	s = start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	tooComplex := strings.TrimSuffix(strings.Repeat("1+", 600), "+") + " > 0"
	resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, bare(metric(0, tooComplex)))
	if resp.status != http.StatusBadRequest {
		t.Fatalf("a condition over the node budget: status %d, want 400: %s", resp.status, resp.body)
	}
	checkErrors(t, "a condition over the node budget", resp.problem(t), wantError{"metrics[0].successCondition", "/metrics/0/successCondition", "syntax nodes"})

	if n := len(s.analyses.List()); n != 0 {
		t.Errorf("%d analyses started by refused requests", n)
	}
}

// TestProblemPointers checks where each field error points: into the
// body where its field is there (an Argo document's spec under /spec, a
// template endpoint's body from its top), and nowhere for the query, a
// header or a named template's own fields.
func TestProblemPointers(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, webhookAllow: []string{"https://hooks.example.com/ci"},
		templates: templatesDir(t, map[string]string{"flagger.yaml": flaggerTemplate})})
	const (
		analyses = "/v1/templates/success-rate/analyses"
		evaluate = "/v1/templates/success-rate/evaluate"
		flagger  = "/v1/gates/flagger-success-rate"
	)
	good := once("echo")
	for _, tc := range []struct {
		name, path, contentType, body string
		headers                       []string
		want                          []wantError
	}{
		{name: "query parameters", path: "/v1/analyses?wait=soon&wiat=1", contentType: jsonType, body: good,
			want: []wantError{{"wait", noPointer, ""}, {"wiat", noPointer, ""}}},
		{name: "a header", path: "/v1/evaluate", contentType: jsonType, body: good, headers: []string{server.TimeoutHeader, "soon"},
			want: []wantError{{server.TimeoutHeader, noPointer, ""}}},
		{name: "malformed JSON", path: "/v1/analyses", contentType: jsonType, body: `{"metrics": [`,
			want: []wantError{{"body", "", "invalid JSON"}}},
		{name: "malformed YAML", path: "/v1/analyses", contentType: yamlType, body: "metrics:\n  - name: [unclosed\n",
			want: []wantError{{"body", "", "invalid YAML"}}},
		{name: "unknown fields of a bare spec", path: "/v1/analyses", contentType: jsonType,
			body: `{"metrics": [{"name": "m", "intervall": "1m", "provider": {"prometheus": {"query": "up", "adress": "x"}}}], "argz": []}`,
			want: []wantError{{"metrics[0].intervall", "/metrics/0/intervall", ""}, {"metrics[0].provider.prometheus.adress", "/metrics/0/provider/prometheus/adress", ""}, {"argz", "/argz", ""}}},
		{name: "an Argo document, YAML", path: "/v1/evaluate", contentType: yamlType,
			body: "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: 7}\nspec:\n  metrics:\n  - {name: m, count: x, provider: {prometheus: {query: up}}}\n  extra: 1\n",
			// The name's type does not keep the count from being checked.
			want: []wantError{{"metadata.name", "/metadata/name", ""}, {"extra", "/spec/extra", ""}, {"metrics[0].count", "/spec/metrics/0/count", "must be an integer"}}},
		{name: "validation of a spec, and the query", path: "/v1/analyses?wait=maybe", contentType: jsonType,
			body: `{"metrics": [{"name": "m", "interval": "soon", "provider": {"prometheus": {"query": "up"}}}, {"name": "m", "provider": {}}]}`,
			want: []wantError{{"wait", noPointer, ""}, {"metrics[0].interval", "/metrics/0/interval", ""}, {"metrics[1].name", "/metrics/1/name", ""},
				{"metrics[1].provider", "/metrics/1/provider", ""}}},
		{name: "an argument without a value", path: "/v1/analyses", contentType: yamlType, body: seed(t),
			want: []wantError{{"args[0].value", "/spec/args/0/value", ""}}},
		{name: "an undeclared argument in the query", path: "/v1/analyses?arg.namespace=echo&arg.nope=1", contentType: yamlType, body: seed(t),
			want: []wantError{{"args.nope", noPointer, ""}}},
		{name: "template: undeclared arguments, body and query", path: evaluate + "?arg.namespace=echo&arg.query=1", contentType: jsonType,
			body: `{"args": {"body": "1", "a/b~c": "2"}}`,
			want: []wantError{{"args.body", "/args/body", ""}, {"args.a/b~c", "/args/a~1b~0c", ""}, {"args.query", noPointer, ""}}},
		{name: "template: a required argument missing from the body's args", path: evaluate, contentType: yamlType, body: "args: {}\n",
			want: []wantError{{"args.namespace", "/args/namespace", "requires argument"}}},
		{name: "template: a required argument, no body", path: evaluate,
			want: []wantError{{"args.namespace", noPointer, "requires argument"}}},
		{name: "template: a body that is not an object", path: evaluate + "?arg.namespace=echo", contentType: jsonType, body: `[1]`,
			want: []wantError{{"body", "", "expected an object"}}},
		{name: "template: unknown fields and values of the wrong type", path: evaluate + "?arg.namespace=echo", contentType: jsonType,
			body: `{"argz": 1, "": 2, "args": {"threshold": [1]}}`,
			want: []wantError{{"argz", "/argz", "unknown field"}, {"body", "/", "empty name"}, {"args.threshold", "/args/threshold", "must be a string"}}},
		{name: "template: a webhook on evaluate", path: evaluate + "?arg.namespace=echo", contentType: jsonType,
			body: `{"webhook": {"url": "https://hooks.example.com/ci"}}`,
			want: []wantError{{"webhook", "/webhook", "sends no webhook"}}},
		{name: "template: a webhook refused, and its events", path: analyses + "?arg.namespace=echo", contentType: yamlType,
			body: "webhook:\n  url: https://elsewhere.example.com/ci\n  events: [completed, all]\n",
			want: []wantError{{"webhook.url", "/webhook/url", "--webhook-allow"}, {"webhook.events[1]", "/webhook/events/1", ""}}},
		{name: "template: a webhook in the query and the body", path: analyses + "?arg.namespace=echo&webhook=" + url.QueryEscape("https://hooks.example.com/ci"),
			contentType: jsonType, body: `{"webhook": {"url": "https://hooks.example.com/ci"}}`,
			want: []wantError{{"webhook", "/webhook", "given both"}}},
		{name: "Flagger: metadata the template does not declare", path: flagger, contentType: jsonType,
			body: `{"name": "podinfo", "namespace": "echo", "phase": "Progressing", "metadata": {"app.kubernetes.io/name": "x", "threshold": "0.9"}}`,
			want: []wantError{{"metadata.app.kubernetes.io/name", "/metadata/app.kubernetes.io~1name", "not declared"}}},
		{name: "Flagger: a name of the wrong type", path: flagger + "?arg.name=x&arg.namespace=echo", contentType: jsonType, body: `{"name": {"first": "x"}}`,
			want: []wantError{{"name", "/name", "must be a string"}}},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body, tc.headers...)
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tc.name, resp.status, resp.body)
			continue
		}
		checkErrors(t, tc.name, resp.problem(t), tc.want...)
	}
}
