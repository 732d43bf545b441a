package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// Templates of the tests, beside those of testdata/templates.
const (
	// foreverTemplate measures every 50 ms until it is stopped.
	foreverTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: forever}
spec:
  args: [{name: namespace, value: echo-good}]
  metrics:
    - name: forever
      interval: 50ms
      successCondition: result[0] >= 0.99
      provider:
        prometheus:
          query: 'sum(rate(istio_requests_total{destination_workload_namespace="{{args.namespace}}"}[1m]))'
`
	// flaggerTemplate declares the arguments Flagger's payload gives
	// (name, namespace) and one its metadata may set (threshold).
	flaggerTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: flagger-success-rate}
spec:
  args:
    - name: name
    - name: namespace
    - name: threshold
      value: "0.99"
  metrics:
    - name: non-5xx-rate
      successCondition: result[0] >= {{args.threshold}}
      provider:
        prometheus:
          query: |
            sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="{{args.namespace}}", response_code!~"5.."}[1m]))
            /
            sum(rate(istio_requests_total{reporter="destination", destination_workload_namespace="{{args.namespace}}"}[1m]))
`
	// secretTemplate has values GET /v1/templates/{name} must not show.
	secretTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: with-secrets}
spec:
  args:
    - {name: api-token, value: hunter2}
    - {name: namespace, value: echo}
  metrics:
    - name: m
      provider:
        prometheus:
          query: up
          headers:
            - {key: Authorization, value: Bearer s3cret}
            - {key: X-Scope-OrgID, value: tenant-1}
          authentication:
            basicAuth: {username: u, password: pa55}
    - name: w
      provider:
        web:
          url: https://status.example.com/ok
          headers:
            - {key: X-Api-Key, value: w3bkey}
            - {key: Accept, value: application/json}
`
	brokenTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: broken}
spec:
  metrics:
    - name: m
      successCondition: result >
      provider: {prometheus: {query: up}}
`
)

// templatesDir writes a templates directory: the templates of
// testdata/templates with their intervals shortened to 50 ms, so that an
// analysis of three measurements takes a tenth of a second, and extra
// files.
func templatesDir(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("../../testdata/templates/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/templates: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("interval: 30s", "interval: 50ms", "interval: 1m", "interval: 50ms").Replace(string(data))
		if text == string(data) {
			t.Fatalf("%s has no interval of 30s or 1m any more; update the test", f)
		}
		writeTemplate(t, dir, filepath.Base(f), text)
	}
	for name, content := range extra {
		writeTemplate(t, dir, name, content)
	}
	return dir
}

func writeTemplate(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// keys decodes a JSON object as a map, to see which keys it has.
func keys(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	mustJSON(t, data, &m)
	return m
}

// TestTemplates runs every template endpoint against a real Prometheus:
// echo-good passes success-rate, echo-bad fails it.
func TestTemplates(t *testing.T) {
	prom := promtest.Start(t)
	urls := []string{prom.URL}
	webAllow := []string{"https://status.example.com/"}
	dir := templatesDir(t, map[string]string{
		"forever.yaml": foreverTemplate, "flagger.yaml": flaggerTemplate,
		"secrets.yaml": secretTemplate, "broken.yaml": brokenTemplate,
	})

	t.Run("list", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		var list server.TemplateList
		mustJSON(t, s.do(http.MethodGet, "/v1/templates", "", "").body, &list)
		var got []string
		for _, info := range list.Templates {
			got = append(got, info.Name+" "+info.Status)
			if info.Status == "error" && len(info.Errors) == 0 {
				t.Errorf("%s: status error without errors", info.Name)
			}
		}
		want := []string{"broken error", "flagger-success-rate ok", "forever ok", "latency-p99 ok", "success-rate ok", "with-secrets ok"}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("listed %v, want %v", got, want)
		}
	})

	t.Run("list without --templates", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		resp := s.do(http.MethodGet, "/v1/templates", "", "")
		if resp.status != http.StatusOK || strings.TrimSpace(string(resp.body)) != `{"templates":[]}` {
			t.Errorf("GET /v1/templates without --templates: %d %s, want 200 and an empty list", resp.status, resp.body)
		}
		for _, path := range []string{"/v1/templates/success-rate", "/v1/templates/success-rate/evaluate"} {
			method := http.MethodGet
			if strings.HasSuffix(path, "evaluate") {
				method = http.MethodPost
			}
			resp := s.do(method, path, "", "")
			if resp.status != http.StatusNotFound || !strings.Contains(resp.problem(t).Detail, "--templates") {
				t.Errorf("%s %s without --templates: %d %s, want a 404 that names --templates", method, path, resp.status, resp.body)
			}
		}
	})

	t.Run("get", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		resp := s.do(http.MethodGet, "/v1/templates/success-rate", "", "")
		if resp.status != http.StatusOK {
			t.Fatalf("status %d: %s", resp.status, resp.body)
		}
		var got server.TemplateDetail
		mustJSON(t, resp.body, &got)
		if got.Name != "success-rate" || got.Kind != "AnalysisTemplate" || got.Status != "ok" || got.File != "success-rate.yaml" {
			t.Errorf("template %+v, want success-rate, AnalysisTemplate, ok, from success-rate.yaml", got.Info)
		}
		if len(got.Args) != 1 || got.Args[0].Name != "namespace" || !got.Args[0].Required {
			t.Errorf("args %+v, want namespace, required", got.Args)
		}
		metrics, _ := got.Spec["metrics"].([]any)
		metric, _ := metrics[0].(map[string]any)
		if metric["name"] != "non-5xx-rate" || metric["interval"] != "50ms" || !strings.Contains(fmt.Sprint(metric["provider"]), "{{args.namespace}}") {
			t.Errorf("spec %v: want the metric as loaded, arguments unresolved", got.Spec)
		}
		if _, ok := metric["provider"].(map[string]any)["prometheus"].(map[string]any)["authentication"]; ok {
			t.Errorf("an unset authentication is shown: %v", metric["provider"])
		}

		body := string(s.do(http.MethodGet, "/v1/templates/with-secrets", "", "").body)
		for _, secret := range []string{"hunter2", "s3cret", "pa55", "w3bkey"} {
			if strings.Contains(body, secret) {
				t.Errorf("GET /v1/templates/with-secrets shows %q: %s", secret, body)
			}
		}
		for _, shown := range []string{"tenant-1", `"username":"u"`, `"value":"echo"`, `"value":"application/json"`} {
			if !strings.Contains(body, shown) {
				t.Errorf("GET /v1/templates/with-secrets lacks %s: %s", shown, body)
			}
		}

		for _, tc := range []struct {
			name, detail string
			errors       bool
		}{
			{"nope", `no template "nope"`, false},
			{"broken", "does not load", true},
		} {
			resp := s.do(http.MethodGet, "/v1/templates/"+tc.name, "", "")
			if resp.status != http.StatusNotFound {
				t.Errorf("%s: status %d, want 404", tc.name, resp.status)
				continue
			}
			p := resp.problem(t)
			if p.Type != server.ProblemNotFound || !strings.Contains(p.Detail, tc.detail) || (len(p.Errors) > 0) != tc.errors {
				t.Errorf("%s: problem %+v, want not-found saying %q, with errors: %v", tc.name, p, tc.detail, tc.errors)
			}
		}
	})

	t.Run("analyses", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		for _, tc := range []struct {
			name, path, contentType, body, accept string
			status                                int
			want                                  api.Phase
			namespace                             string
		}{
			{"async, args in the query", "/v1/templates/success-rate/analyses?arg.namespace=echo-good", "", "", "", http.StatusAccepted, api.PhaseSuccessful, "echo-good"},
			{"async, args in a JSON body", "/v1/templates/success-rate/analyses", jsonType, `{"args": {"namespace": "echo-bad"}}`, "", http.StatusAccepted, api.PhaseFailed, "echo-bad"},
			{"wait, args in a YAML body", "/v1/templates/success-rate/analyses?wait=true", yamlType, "args:\n  namespace: echo-good\n", "", http.StatusOK, api.PhaseSuccessful, "echo-good"},
			{"wait, the query wins", "/v1/templates/success-rate/analyses?wait=true&arg.namespace=echo-bad", jsonType, `{"args": {"namespace": "echo-good"}}`, "", http.StatusOK, api.PhaseFailed, "echo-bad"},
			{"ndjson", "/v1/templates/success-rate/analyses?arg.namespace=echo-good", "", "", "application/x-ndjson", http.StatusOK, api.PhaseSuccessful, "echo-good"},
			{"sse", "/v1/templates/success-rate/analyses?arg.namespace=echo-bad", "", "", "text/event-stream", http.StatusOK, api.PhaseFailed, "echo-bad"},
		} {
			var final api.Analysis
			if tc.accept != "" {
				_, resp := s.openStream(context.Background(), http.MethodPost, tc.path, tc.contentType, tc.body, tc.accept)
				if got := resp.Header.Get("Location"); !strings.HasPrefix(got, s.url+"/v1/analyses/") {
					t.Errorf("%s: Location = %q", tc.name, got)
				}
				events := newEventReader(t, resp).all()
				last := events[len(events)-1]
				if last.Type != api.EventCompleted || last.Analysis == nil {
					t.Fatalf("%s: the stream ended with %+v, want the completed event", tc.name, last)
				}
				if len(events) < 3 || events[0].Type != api.EventMeasurement {
					t.Errorf("%s: %d events, want measurements before the completed event", tc.name, len(events))
				}
				final = *last.Analysis
			} else {
				resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
				if resp.status != tc.status {
					t.Fatalf("%s: status %d, want %d: %s", tc.name, resp.status, tc.status, resp.body)
				}
				a := resp.analysis(t)
				if got, want := resp.header.Get("Location"), s.url+"/v1/analyses/"+a.ID; got != want {
					t.Errorf("%s: Location = %q, want %q", tc.name, got, want)
				}
				final = a
				if tc.status == http.StatusAccepted {
					if a.Phase != api.PhaseRunning {
						t.Errorf("%s: phase %s at once, want Running", tc.name, a.Phase)
					}
					final = s.waitFinished(a.ID)
				}
			}
			if final.Phase != tc.want || final.Template != "success-rate" || final.Args["namespace"] != tc.namespace {
				t.Errorf("%s: phase %s, template %q, args %v; want %s, success-rate, namespace=%s", tc.name, final.Phase, final.Template, final.Args, tc.want, tc.namespace)
			}
		}
	})

	// Spinnaker's webhook stage: POST, then poll the Location, as it is
	// (Orca refuses a relative one), for $.phase until it is not Running.
	t.Run("spinnaker", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		resp := s.do(http.MethodPost, "/v1/templates/success-rate/analyses", jsonType, `{"args": {"namespace": "echo-good"}}`)
		location, err := url.Parse(resp.header.Get("Location"))
		if resp.status != http.StatusAccepted || err != nil || !location.IsAbs() || location.Host != strings.TrimPrefix(s.url, "http://") {
			t.Fatalf("POST: %d, Location %q; want 202 with the analysis' absolute URL", resp.status, resp.header.Get("Location"))
		}
		if phase := keys(t, resp.body)["phase"]; phase != "Running" {
			t.Errorf("$.phase of the 202 = %v, want Running", phase)
		}
		var phase any
		waitFor(t, "$.phase to leave Running", func() bool {
			poll := s.do(http.MethodGet, location.Path, "", "")
			if poll.status != http.StatusOK {
				t.Fatalf("GET %s: %d", location, poll.status)
			}
			phase = keys(t, poll.body)["phase"]
			return phase != "Running"
		})
		if phase != "Successful" {
			t.Errorf("$.phase = %v, want Successful", phase)
		}
	})

	t.Run("evaluate", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		for _, tc := range []struct {
			name, path, contentType, body string
			want                          api.Phase
			args                          map[string]string
		}{
			{"echo-good, as Argo's jsonBody sends it", "/v1/templates/success-rate/evaluate", jsonType, `{"args": {"namespace": "echo-good"}}`,
				api.PhaseSuccessful, map[string]string{"namespace": "echo-good"}},
			{"echo-bad, in the query", "/v1/templates/success-rate/evaluate?arg.namespace=echo-bad", "", "",
				api.PhaseFailed, map[string]string{"namespace": "echo-bad"}},
			{"a number and a default", "/v1/templates/latency-p99/evaluate", jsonType, `{"args": {"service": "echo", "threshold-ms": 750}}`,
				api.PhaseInconclusive, map[string]string{"service": "echo", "threshold-ms": "750"}},
			{"a boolean and a number in YAML", "/v1/templates/flagger-success-rate/evaluate", yamlType, "args: {name: true, namespace: echo-good, threshold: 0.9}\n",
				api.PhaseSuccessful, map[string]string{"name": "true", "namespace": "echo-good", "threshold": "0.9"}},
		} {
			resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
			if resp.status != http.StatusOK {
				t.Fatalf("%s: status %d, want 200: %s", tc.name, resp.status, resp.body)
			}
			a := resp.analysis(t)
			if a.Phase != tc.want || fmt.Sprint(a.Args) != fmt.Sprint(tc.args) || len(a.MetricResults) != 1 || len(a.MetricResults[0].Measurements) != 1 {
				t.Errorf("%s: phase %s, args %v, %d metric results; want %s, %v, one measurement", tc.name, a.Phase, a.Args, len(a.MetricResults), tc.want, tc.args)
			}
		}
		// Each round is kept, as a round.
		for _, a := range s.analyses.List() {
			if a.Kind != api.KindRound || a.Series == "" {
				t.Errorf("listed %s: kind %q, series %q; want a round of a series", a.ID, a.Kind, a.Series)
			}
		}
		if n := len(s.analyses.List()); n != 4 {
			t.Errorf("%d analyses listed after 4 rounds, want the 4 rounds", n)
		}
	})

	// Argo's web provider reads one value with a jsonPath; a key that is
	// absent is an Error measurement, so every key must be there.
	t.Run("evaluate answers every key", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		for _, path := range []string{"/v1/templates/success-rate/evaluate?arg.namespace=echo-good", "/v1/evaluate?arg.namespace=echo-good"} {
			body := ""
			if path == "/v1/evaluate?arg.namespace=echo-good" {
				body = seed(t)
			}
			resp := s.do(http.MethodPost, path, yamlType, body)
			if ct := resp.header.Get("Content-Type"); resp.status != http.StatusOK || ct != "application/json" {
				t.Fatalf("%s: %d %s, want 200 JSON", path, resp.status, ct)
			}
			round := keys(t, resp.body)
			for _, k := range []string{"id", "phase", "message", "startedAt", "completedAt", "metricResults", "runSummary", "dryRunSummary", "template", "args"} {
				if _, ok := round[k]; !ok {
					t.Errorf("%s: the round has no %q: %s", path, k, resp.body)
				}
			}
			if round["phase"] != "Successful" || round["message"] != "" {
				t.Errorf("%s: phase %v, message %q; want Successful and an empty message", path, round["phase"], round["message"])
			}
			metric := round["metricResults"].([]any)[0].(map[string]any)
			measurement := metric["measurements"].([]any)[0].(map[string]any)
			for _, k := range []string{"message", "metadata"} {
				if _, ok := metric[k]; !ok {
					t.Errorf("%s: the metric result has no %q", path, k)
				}
				if _, ok := measurement[k]; !ok {
					t.Errorf("%s: the measurement has no %q", path, k)
				}
			}
		}
	})

	t.Run("gates", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		for _, tc := range []struct {
			name, path, contentType, body string
			status                        int
			want                          api.Phase
		}{
			{"named, Successful", "/v1/gates/success-rate", jsonType, `{"args": {"namespace": "echo-good"}}`, http.StatusOK, api.PhaseSuccessful},
			{"named, Failed", "/v1/gates/success-rate?arg.namespace=echo-bad", "", "", http.StatusPreconditionFailed, api.PhaseFailed},
			{"named, Inconclusive", "/v1/gates/latency-p99?arg.service=none", "", "", http.StatusPreconditionFailed, api.PhaseInconclusive},
			{"inline, Successful", "/v1/gates?arg.namespace=echo-good", yamlType, seed(t), http.StatusOK, api.PhaseSuccessful},
			{"inline, Failed", "/v1/gates?arg.namespace=echo-bad&timeout=30s", yamlType, seed(t), http.StatusPreconditionFailed, api.PhaseFailed},
		} {
			resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
			if resp.status != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.name, resp.status, tc.status, resp.body)
			}
			if ct := resp.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q, want the analysis as application/json", tc.name, ct)
			}
			a := resp.analysis(t)
			if a.Phase != tc.want || a.CompletedAt == nil {
				t.Errorf("%s: phase %s (%s), want a finished %s", tc.name, a.Phase, a.Message, tc.want)
			}
			if resp.header.Get("Location") != s.url+"/v1/analyses/"+a.ID {
				t.Errorf("%s: Location %q, want the analysis", tc.name, resp.header.Get("Location"))
			}
			if kept := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").analysis(t); kept.Phase != a.Phase {
				t.Errorf("%s: GET of the gate's analysis: phase %s, want %s", tc.name, kept.Phase, a.Phase)
			}
		}
	})

	// Flagger posts {name, namespace, phase, checksum, metadata}: name and
	// namespace become arguments where the template declares them, the
	// metadata entries always (the template must declare them).
	t.Run("flagger", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		payload := func(namespace, metadata string) string {
			return fmt.Sprintf(`{"name": "podinfo", "namespace": %q, "phase": "Progressing", "checksum": "85d557f47b", "metadata": %s}`, namespace, metadata)
		}
		for _, tc := range []struct {
			name, path, body string
			status           int
			args             map[string]string
		}{
			{"name and namespace are ignored where undeclared", "/v1/gates/success-rate", payload("echo-good", "{}"),
				http.StatusOK, map[string]string{"namespace": "echo-good"}},
			{"a failing canary", "/v1/gates/success-rate", payload("echo-bad", "null"),
				http.StatusPreconditionFailed, map[string]string{"namespace": "echo-bad"}},
			{"metadata sets an argument", "/v1/gates/flagger-success-rate", payload("echo-bad", `{"threshold": "0.9"}`),
				http.StatusOK, map[string]string{"name": "podinfo", "namespace": "echo-bad", "threshold": "0.9"}},
			{"args win over metadata, the query over args", "/v1/gates/flagger-success-rate?arg.threshold=0.99",
				`{"name": "podinfo", "namespace": "echo-bad", "metadata": {"threshold": "0.5"}, "args": {"threshold": "0.6", "name": "other"}}`,
				http.StatusPreconditionFailed, map[string]string{"name": "other", "namespace": "echo-bad", "threshold": "0.99"}},
		} {
			resp := s.do(http.MethodPost, tc.path, jsonType, tc.body)
			if resp.status != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.name, resp.status, tc.status, resp.body)
			}
			if got := resp.analysis(t).Args; fmt.Sprint(got) != fmt.Sprint(tc.args) {
				t.Errorf("%s: args %v, want %v", tc.name, got, tc.args)
			}
		}
		logged := s.logs.FilterMessage("analysis requested").All()
		if len(logged) == 0 || logged[0].ContextMap()["flagger_checksum"] != "85d557f47b" || logged[0].ContextMap()["flagger_canary"] != "echo-good/podinfo" {
			t.Errorf("Flagger's canary and checksum were not logged: %+v", logged)
		}
	})

	t.Run("gate hang-up terminates", func(t *testing.T) {
		s := start(t, options{prometheus: urls, templates: dir, webAllow: webAllow})
		ctx, cancel := context.WithCancel(context.Background())
		req := s.request(ctx, http.MethodPost, "/v1/gates/forever", "", "")
		done := make(chan struct{})
		// Ends when the request fails, once ctx is cancelled below.
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = readAllQuiet(resp)
			}
		}()
		waitFor(t, "a running gate with a measurement", func() bool {
			list := s.analyses.List()
			return len(list) == 1 && list[0].MetricResults[0].Count > 0
		})
		cancel()
		<-done
		waitFor(t, "the gate's analysis to be terminated", func() bool { return s.analyses.List()[0].Phase.Completed() })
		if a := s.analyses.List()[0]; a.Message != "Run Terminated" {
			t.Errorf("after the hang-up: phase %s, message %q; want Run Terminated", a.Phase, a.Message)
		}
	})
}

// TestTemplateErrors checks the Error verdicts of templates, evaluate and
// gates: a Prometheus that answers 503 (which a real one cannot be made to
// do on demand).
func TestTemplateErrors(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	s := start(t, options{prometheus: []string{down.URL}, templates: templatesDir(t, nil)})
	for _, tc := range []struct {
		name, path, contentType, body string
	}{
		{"template evaluate", "/v1/templates/success-rate/evaluate", jsonType, `{"args": {"namespace": "echo-good"}}`},
		{"named gate", "/v1/gates/success-rate?arg.namespace=echo-good", "", ""},
		{"inline gate", "/v1/gates?arg.namespace=echo-good", yamlType, seed(t)},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
		if resp.status != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d, want 503: %s", tc.name, resp.status, resp.body)
		}
		if ct := resp.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want the analysis, not a problem", tc.name, ct)
		}
		a := resp.analysis(t)
		ms := a.MetricResults[0].Measurements
		if a.Phase != api.PhaseError || len(ms) == 0 || ms[0].Phase != api.PhaseError {
			t.Errorf("%s: phase %s with measurements %+v, want Error with Error measurements", tc.name, a.Phase, ms)
		}
	}
}

// stallingPrometheus answers no query until the query gives up, or the
// test ends.
func stallingPrometheus(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// Read the form first: net/http notices a client gone (and ends
		// r.Context()) only once the body has been read.
		_ = r.ParseForm()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(stall.Close)
	t.Cleanup(func() { close(release) }) // runs first
	return stall.URL
}

// TestEvaluateDeadline checks that a round is answered by its deadline
// when Prometheus does not answer: a 503 Error round whose measurement says
// the deadline passed.
func TestEvaluateDeadline(t *testing.T) {
	s := start(t, options{prometheus: []string{stallingPrometheus(t)}, templates: templatesDir(t, nil)})
	for _, tc := range []struct {
		name, path, contentType, body string
		headers                       []string
		deadline                      string
	}{
		{"?timeout= as a duration", "/v1/evaluate?timeout=200ms", jsonType, once("echo-good"), nil, "200ms"},
		{"Request-Timeout in seconds", "/v1/templates/success-rate/evaluate?arg.namespace=echo", "", "", []string{"Request-Timeout", "0.2"}, "200ms"},
		{"both: the shorter wins", "/v1/templates/success-rate/evaluate?arg.namespace=echo&timeout=0.3", "", "", []string{"Request-Timeout", "250ms"}, "250ms"},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body, tc.headers...)
		if resp.status != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d, want 503: %s", tc.name, resp.status, resp.body)
		}
		a := resp.analysis(t)
		ms := a.MetricResults[0].Measurements[0]
		if a.Phase != api.PhaseError || ms.Phase != api.PhaseError || !strings.HasPrefix(ms.Message, "deadline exceeded") || !strings.Contains(ms.Message, tc.deadline) {
			t.Errorf("%s: phase %s, measurement %s %q; want Error, deadline exceeded, naming %s", tc.name, a.Phase, ms.Phase, ms.Message, tc.deadline)
		}
	}
}

// TestGateTimeout checks that a gate whose analysis outlasts the caller's
// deadline stops it and answers 503 with the analysis, saying why.
func TestGateTimeout(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, templates: templatesDir(t, map[string]string{"forever.yaml": foreverTemplate})})
	for _, tc := range []struct {
		name, path, contentType, body string
		headers                       []string
		advice                        string
	}{
		{"named", "/v1/gates/forever?timeout=300ms", "", "", nil, "POST /v1/templates/forever/analyses"},
		{"inline", "/v1/gates", yamlType, forever("echo-good"), []string{"Request-Timeout", "0.3"}, "POST /v1/analyses"},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body, tc.headers...)
		if resp.status != http.StatusServiceUnavailable {
			t.Fatalf("%s: status %d, want 503: %s", tc.name, resp.status, resp.body)
		}
		a := resp.analysis(t)
		if a.Phase != api.PhaseError || !strings.HasPrefix(a.Message, "gate timed out") || !strings.Contains(a.Message, tc.advice) || a.MetricResults[0].Count == 0 {
			t.Errorf("%s: phase %s, message %q, %d measurements; want Error, gate timed out, advice %q, the measurements taken",
				tc.name, a.Phase, a.Message, a.MetricResults[0].Count, tc.advice)
		}
		if kept := s.do(http.MethodGet, strings.TrimPrefix(resp.header.Get("Location"), s.url), "", "").analysis(t); kept.Phase != api.PhaseError || kept.Message != a.Message {
			t.Errorf("%s: the analysis kept is %s %q, want the timed-out one", tc.name, kept.Phase, kept.Message)
		}
	}
}

// TestTemplateBadRequests sends requests to the template and gate
// endpoints that must be refused, each with the status and the fields the
// problem must name; nothing may be left running.
func TestTemplateBadRequests(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, webhookAllow: []string{"https://hooks.example.com/ci"},
		templates: templatesDir(t, map[string]string{"flagger.yaml": flaggerTemplate, "broken.yaml": brokenTemplate})})
	const (
		analyses = "/v1/templates/success-rate/analyses"
		evaluate = "/v1/templates/success-rate/evaluate"
		gate     = "/v1/gates/success-rate"
	)
	huge := `{"args": {"namespace": "` + strings.Repeat("x", server.DefaultMaxBodyBytes) + `"}}`
	for _, tc := range []struct {
		name        string
		paths       []string
		contentType string
		body        string
		headers     []string
		status      int
		typ         string
		fields      []string
	}{
		{name: "unknown template", paths: []string{"/v1/templates/nope/analyses", "/v1/templates/nope/evaluate", "/v1/gates/nope"},
			status: 404, typ: server.ProblemNotFound},
		{name: "a template that does not load", paths: []string{"/v1/templates/broken/evaluate", "/v1/gates/broken"},
			status: 404, typ: server.ProblemNotFound, fields: []string{"metrics[0].successCondition"}},
		{name: "a required argument missing", paths: []string{analyses, evaluate, gate},
			status: 400, fields: []string{"args.namespace"}},
		{name: "required arguments missing, each named", paths: []string{"/v1/gates/flagger-success-rate"}, contentType: jsonType, body: `{"args": {}}`,
			status: 400, fields: []string{"args.name", "args.namespace"}},
		{name: "an undeclared argument in the body", paths: []string{analyses, evaluate, gate}, contentType: jsonType, body: `{"args": {"namespace": "echo", "nope": "1"}}`,
			status: 400, fields: []string{"args.nope"}},
		{name: "an undeclared argument in the query", paths: []string{analyses + "?arg.namespace=echo&arg.nope=1", gate + "?arg.namespace=echo&arg.nope=1"},
			status: 400, fields: []string{"args.nope"}},
		{name: "unknown body fields, all of them", paths: []string{analyses, evaluate}, contentType: jsonType, body: `{"argz": {}, "namespace": "echo"}`,
			status: 400, fields: []string{"argz", "namespace", "args.namespace"}},
		{name: "undeclared Flagger metadata", paths: []string{gate}, contentType: jsonType, body: `{"name": "podinfo", "namespace": "echo", "metadata": {"type": "cmd"}}`,
			status: 400, fields: []string{"metadata.type"}},
		{name: "values that are not scalars", paths: []string{gate}, contentType: yamlType, body: "args: {namespace: [a]}\nmetadata: x\nname: {a: 1}\n",
			status: 400, fields: []string{"args.namespace", "metadata", "name"}},
		{name: "not an object", paths: []string{evaluate}, contentType: jsonType, body: `["echo"]`,
			status: 400, fields: []string{"body"}},
		{name: "malformed JSON", paths: []string{analyses}, contentType: jsonType, body: `{"args": `,
			status: 400, fields: []string{"body"}},
		{name: "malformed YAML", paths: []string{gate}, contentType: yamlType, body: "args: [unclosed\n",
			status: 400, fields: []string{"body"}},
		{name: "a value that would change the conditions' structure", paths: []string{"/v1/templates/latency-p99/evaluate?arg.service=x&arg.threshold-ms=)"},
			status: 400, fields: []string{"args.threshold-ms"}},
		{name: "a value that makes the spec invalid", paths: []string{"/v1/templates/latency-p99/evaluate?arg.service=x&arg.threshold-ms=true"},
			status: 400, fields: []string{"metrics[0].successCondition"}},
		{name: "a bad timeout", paths: []string{evaluate + "?arg.namespace=echo&timeout=soon", gate + "?arg.namespace=echo&timeout=-1s", "/v1/gates?timeout=0"},
			contentType: yamlType, body: "", status: 400, fields: []string{"timeout"}},
		{name: "a bad Request-Timeout", paths: []string{evaluate + "?arg.namespace=echo", "/v1/evaluate"}, contentType: jsonType, body: once("echo"),
			headers: []string{"Request-Timeout", "forever"}, status: 400, fields: []string{"Request-Timeout"}},
		{name: "parameters the endpoint does not take", paths: []string{evaluate + "?arg.namespace=echo&wait=true", gate + "?arg.namespace=echo&webhook=https://hooks.example.com/ci"},
			status: 400, fields: []string{"wait", "webhook"}},
		{name: "a webhook in the body of an endpoint that sends none", paths: []string{evaluate, gate}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": {"url": "https://hooks.example.com/ci"}}`, status: 400, fields: []string{"webhook"}},
		{name: "a webhook that is not allowed", paths: []string{analyses}, contentType: jsonType,
			body:   `{"args": {"namespace": "echo"}, "webhook": {"url": "https://elsewhere.example.com/ci", "events": ["all"], "secret": "x"}}`,
			status: 400, fields: []string{"webhook.url", "webhook.events[0]", "webhook.secret"}},
		{name: "a webhook twice", paths: []string{analyses + "?webhook=https://hooks.example.com/ci"}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": {"url": "https://hooks.example.com/ci"}}`, status: 400, fields: []string{"webhook"}},
		{name: "webhook events that are not event types", paths: []string{analyses}, contentType: yamlType,
			body:   "args: {namespace: echo}\nwebhook: {url: 'https://hooks.example.com/ci/1', events: [completed, 7, measurements]}\n",
			status: 400, fields: []string{"webhook.events[1]", "webhook.events[2]"}},
		{name: "a webhook without its URL", paths: []string{analyses}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": {"events": ["completed"]}}`, status: 400, fields: []string{"webhook.url"}},
		{name: "a webhook URL that is not a string", paths: []string{analyses}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": {"url": 7}}`, status: 400, fields: []string{"webhook.url"}},
		{name: "a webhook that is not an object", paths: []string{analyses}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": "https://hooks.example.com/ci"}`, status: 400, fields: []string{"webhook"}},
		{name: "query events with a body webhook", paths: []string{analyses + "?webhook.events=measurement"}, contentType: jsonType,
			body: `{"args": {"namespace": "echo"}, "webhook": {"url": "https://hooks.example.com/ci"}}`, status: 400, fields: []string{"webhook.events"}},
		{name: "too large", paths: []string{analyses, evaluate, gate, "/v1/gates"}, contentType: jsonType, body: huge,
			status: 413, typ: server.ProblemTooLarge},
		{name: "a body that is not JSON or YAML", paths: []string{analyses, evaluate, gate, "/v1/gates"}, contentType: "application/x-www-form-urlencoded", body: "namespace=echo",
			status: 415, typ: server.ProblemUnsupportedMedia},
		{name: "an inline gate without a document", paths: []string{"/v1/gates"}, contentType: jsonType, body: `{"metrics": []}`,
			status: 400, fields: []string{"metrics"}},
	} {
		if tc.typ == "" {
			tc.typ = server.ProblemInvalidInput
		}
		for _, path := range tc.paths {
			resp := s.do(http.MethodPost, path, tc.contentType, tc.body, tc.headers...)
			if resp.status != tc.status {
				t.Errorf("%s: POST %s: status %d, want %d: %.300s", tc.name, path, resp.status, tc.status, resp.body)
				continue
			}
			p := resp.problem(t)
			if p.Type != tc.typ || p.Detail == "" {
				t.Errorf("%s: POST %s: problem %+v, want type %s with a detail", tc.name, path, p, tc.typ)
			}
			got := map[string]bool{}
			for _, e := range p.Errors {
				got[e.Field] = true
			}
			for _, f := range tc.fields {
				// Not every path of a case has every field: a query
				// parameter one endpoint refuses, another takes.
				if !got[f] && !(tc.name == "parameters the endpoint does not take" && !strings.Contains(path, f+"=")) {
					t.Errorf("%s: POST %s: no error on %q; errors: %+v", tc.name, path, f, p.Errors)
				}
			}
		}
	}
	if list := s.analyses.List(); len(list) != 0 {
		t.Errorf("bad requests left %d analyses behind", len(list))
	}
}

// TestTemplateLimits checks the 429 of the endpoints that start analyses
// and the 503 of every endpoint while canaryd drains.
func TestTemplateLimits(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, maxRunning: 1, templates: templatesDir(t, map[string]string{"forever.yaml": foreverTemplate})})
	first := s.do(http.MethodPost, "/v1/templates/forever/analyses", "", "")
	if first.status != http.StatusAccepted {
		t.Fatalf("first analysis: %d %s", first.status, first.body)
	}
	for _, path := range []string{"/v1/templates/forever/analyses", "/v1/gates/forever", "/v1/gates"} {
		body, ct := "", ""
		if path == "/v1/gates" {
			body, ct = forever("echo-good"), yamlType
		}
		resp := s.do(http.MethodPost, path, ct, body)
		if resp.status != http.StatusTooManyRequests || resp.problem(t).Type != server.ProblemTooManyAnalyses {
			t.Errorf("POST %s over --max-analyses: %d %s, want a 429 too-many-analyses problem", path, resp.status, resp.body)
		}
	}

	over, cancel := context.WithCancel(context.Background())
	cancel()
	s.analyses.Drain(over)
	for _, tc := range []struct{ path, contentType, body string }{
		{"/v1/templates/forever/analyses", "", ""},
		{"/v1/templates/forever/evaluate", "", ""},
		{"/v1/gates/forever", "", ""},
		{"/v1/gates", yamlType, forever("echo-good")},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
		if resp.status != http.StatusServiceUnavailable || resp.problem(t).Type != server.ProblemShuttingDown {
			t.Errorf("POST %s while draining: %d %s, want a 503 shutting-down problem", tc.path, resp.status, resp.body)
		}
	}
}

// TestTemplateAuth checks that the template and gate endpoints need the
// token like the rest of /v1.
func TestTemplateAuth(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokens: []string{"t0ken"}, templates: templatesDir(t, nil)})
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/v1/templates"},
		{http.MethodGet, "/v1/templates/success-rate"},
		{http.MethodPost, "/v1/templates/success-rate/analyses"},
		{http.MethodPost, "/v1/templates/success-rate/evaluate"},
		{http.MethodPost, "/v1/gates"},
		{http.MethodPost, "/v1/gates/success-rate"},
	} {
		if resp := s.do(tc.method, tc.path, "", ""); resp.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d, want 401", tc.method, tc.path, resp.status)
		}
	}
	if resp := s.do(http.MethodGet, "/v1/templates/success-rate", "", "", "Authorization", "Bearer t0ken"); resp.status != http.StatusOK {
		t.Errorf("GET /v1/templates/success-rate with the token: %d", resp.status)
	}
}
