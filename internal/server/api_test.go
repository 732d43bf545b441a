package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// TestAPI runs every endpoint and mode against a real Prometheus holding
// the fixture's namespaces: echo-good (0.5% 5xx) passes the seed template's
// successCondition, echo-bad (5% 5xx) fails it. One Prometheus serves all
// the subtests; each has its own canaryd.
func TestAPI(t *testing.T) {
	prom := promtest.Start(t)
	urls := []string{prom.URL}

	t.Run("async", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		resp := s.do(http.MethodPost, "/v1/analyses?arg.namespace=echo-good", yamlType, seed(t))
		if resp.status != http.StatusAccepted {
			t.Fatalf("status %d, want 202: %s", resp.status, resp.body)
		}
		a := resp.analysis(t)
		if got, want := resp.header.Get("Location"), s.url+"/v1/analyses/"+a.ID; got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
		if !regexp.MustCompile(`^[a-z2-7]{35}$`).MatchString(a.ID) {
			t.Errorf("id %q is not an epoch and 26 random characters, 35 of lower-case base32", a.ID)
		}
		if a.Phase != api.PhaseRunning || a.Template != "success-rate-args" || a.Args["namespace"] != "echo-good" {
			t.Errorf("started analysis: phase %s, template %q, args %v; want Running, success-rate-args, namespace=echo-good", a.Phase, a.Template, a.Args)
		}
		final := s.waitFinished(a.ID)
		if final.Phase != api.PhaseSuccessful {
			t.Errorf("phase %s (%s), want Successful", final.Phase, final.Message)
		}
		if got := final.MetricResults[0].Count; got != 3 {
			t.Errorf("count %d, want 3", got)
		}
		if final.CompletedAt == nil {
			t.Error("completedAt is missing on a finished analysis")
		}
	})

	t.Run("wait", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		for _, tc := range []struct {
			namespace string
			want      api.Phase
			message   string
		}{
			{"echo-good", api.PhaseSuccessful, ""},
			{"echo-bad", api.PhaseFailed, `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`},
		} {
			resp := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace="+tc.namespace, yamlType, seed(t))
			if resp.status != http.StatusOK {
				t.Fatalf("%s: status %d, want 200: %s", tc.namespace, resp.status, resp.body)
			}
			a := resp.analysis(t)
			if a.Phase != tc.want || a.Message != tc.message {
				t.Errorf("%s: phase %s, message %q; want %s, %q", tc.namespace, a.Phase, a.Message, tc.want, tc.message)
			}
			if resp.header.Get("Location") != s.url+"/v1/analyses/"+a.ID {
				t.Errorf("%s: Location = %q", tc.namespace, resp.header.Get("Location"))
			}
		}
	})

	t.Run("streams", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		for _, tc := range []struct {
			name, accept, namespace string
			want                    api.Phase
			measurements            int
		}{
			{"ndjson good", "application/x-ndjson", "echo-good", api.PhaseSuccessful, 3},
			{"ndjson bad", "application/x-ndjson", "echo-bad", api.PhaseFailed, 2},
			{"sse good", "text/event-stream", "echo-good", api.PhaseSuccessful, 3},
			{"sse bad", "text/event-stream", "echo-bad", api.PhaseFailed, 2},
		} {
			_, resp := s.openStream(context.Background(), http.MethodPost, "/v1/analyses?arg.namespace="+tc.namespace, yamlType, seed(t), tc.accept)
			if got := resp.Header.Get("Content-Type"); got != tc.accept {
				t.Errorf("%s: Content-Type %q, want %q", tc.name, got, tc.accept)
			}
			events := newEventReader(t, resp).all()
			if len(events) != tc.measurements+1 {
				t.Fatalf("%s: %d events, want %d measurements and the completed event: %+v", tc.name, len(events), tc.measurements, events)
			}
			for i, ev := range events[:tc.measurements] {
				if ev.Type != api.EventMeasurement || ev.Metric != "non-5xx-rate" || ev.Measurement == nil {
					t.Errorf("%s: event %d = %+v, want a measurement of non-5xx-rate", tc.name, i, ev)
				}
			}
			last := events[len(events)-1]
			if last.Type != api.EventCompleted || last.Analysis == nil || last.Analysis.Phase != tc.want {
				t.Errorf("%s: last event %+v, want completed with phase %s", tc.name, last, tc.want)
			}
		}
	})

	t.Run("get stream and terminate", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		a := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t)
		waitFor(t, "a first measurement", func() bool {
			return s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").analysis(t).MetricResults[0].Count > 0
		})
		_, resp := s.openStream(context.Background(), http.MethodGet, "/v1/analyses/"+a.ID, "", "", "application/x-ndjson")
		events := newEventReader(t, resp)
		first, ok := events.next()
		if !ok || first.Type != api.EventMeasurement {
			t.Fatalf("first event %+v, want a replayed measurement", first)
		}

		del := s.do(http.MethodDelete, "/v1/analyses/"+a.ID, "", "")
		if del.status != http.StatusOK {
			t.Fatalf("DELETE: status %d: %s", del.status, del.body)
		}
		final := del.analysis(t)
		if final.Phase != api.PhaseSuccessful || final.Message != "Run Terminated" || final.CompletedAt == nil {
			t.Errorf("DELETE answered phase %s, message %q; want Successful, Run Terminated, completed", final.Phase, final.Message)
		}
		rest := events.all()
		if len(rest) == 0 || rest[len(rest)-1].Type != api.EventCompleted || rest[len(rest)-1].Analysis.Message != "Run Terminated" {
			t.Errorf("the stream did not end with the terminated analysis: %+v", rest)
		}
		if again := s.do(http.MethodDelete, "/v1/analyses/"+a.ID, "", "").analysis(t); again.Phase != final.Phase || !again.CompletedAt.Equal(*final.CompletedAt) {
			t.Errorf("a second DELETE changed the analysis: %+v", again)
		}
	})

	t.Run("hang-up terminates", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, accept string
		}{
			{"wait", "/v1/analyses?wait=true", ""},
			{"ndjson", "/v1/analyses", "application/x-ndjson"},
			{"sse", "/v1/analyses", "text/event-stream"},
		} {
			s := start(t, options{prometheus: urls})
			ctx, cancel := context.WithCancel(context.Background())
			req := s.request(ctx, http.MethodPost, tc.path, yamlType, forever("echo-good"), "Accept", tc.accept)
			done := make(chan struct{})
			// Ends when the request fails, at the latest when ctx is
			// cancelled below.
			go func() {
				defer close(done)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = readAllQuiet(resp)
				}
			}()
			waitFor(t, tc.name+": a running analysis with a measurement", func() bool {
				list := s.analyses.List()
				return len(list) == 1 && list[0].MetricResults[0].Count > 0
			})
			cancel()
			<-done
			waitFor(t, tc.name+": the analysis to be terminated", func() bool {
				return s.analyses.List()[0].Phase.Completed()
			})
			if a := s.analyses.List()[0]; a.Phase != api.PhaseSuccessful || a.Message != "Run Terminated" {
				t.Errorf("%s: after the hang-up: phase %s, message %q; want Successful, Run Terminated", tc.name, a.Phase, a.Message)
			}
		}
	})

	t.Run("get stream hang-up leaves the analysis running", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		a := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t)
		ctx, cancel := context.WithCancel(context.Background())
		_, resp := s.openStream(ctx, http.MethodGet, "/v1/analyses/"+a.ID, "", "", "text/event-stream")
		if _, ok := newEventReader(t, resp).next(); !ok {
			t.Fatal("the stream ended before its first event")
		}
		cancel()
		time.Sleep(200 * time.Millisecond)
		if got := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").analysis(t); got.Phase != api.PhaseRunning {
			t.Errorf("phase %s after a reader hung up, want Running", got.Phase)
		}
	})

	t.Run("heartbeats", func(t *testing.T) {
		s := start(t, options{prometheus: urls, heartbeat: 20 * time.Millisecond})
		spec := strings.Replace(forever("echo-good"), "interval: 50ms", "interval: 1h", 1)
		_, resp := s.openStream(context.Background(), http.MethodPost, "/v1/analyses", yamlType, spec, "application/x-ndjson")
		events := newEventReader(t, resp)
		var heartbeats int
		for heartbeats < 2 {
			ev, ok := events.next()
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.Type == "heartbeat" {
				heartbeats++
			}
		}
	})

	t.Run("evaluate", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		for _, tc := range []struct {
			namespace string
			want      api.Phase
		}{
			{"echo-good", api.PhaseSuccessful},
			{"echo-bad", api.PhaseFailed},
		} {
			resp := s.do(http.MethodPost, "/v1/evaluate?arg.namespace="+tc.namespace, yamlType, seed(t))
			if resp.status != http.StatusOK {
				t.Fatalf("%s: status %d, want 200: %s", tc.namespace, resp.status, resp.body)
			}
			a := resp.analysis(t)
			if a.Phase != tc.want || len(a.MetricResults) != 1 || len(a.MetricResults[0].Measurements) != 1 {
				t.Errorf("%s: phase %s with %d metric results; want %s with exactly one measurement", tc.namespace, a.Phase, len(a.MetricResults), tc.want)
			}
		}
		// Each round is kept, readable at its id, as a round.
		kept := s.analyses.List()
		if len(kept) != 2 {
			t.Fatalf("%d analyses listed after two rounds, want the two rounds", len(kept))
		}
		for _, a := range kept {
			if a.Kind != api.KindRound || !a.Phase.Completed() {
				t.Errorf("kept round %s: kind %q, phase %s", a.ID, a.Kind, a.Phase)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		done := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good")).analysis(t)
		running := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t)

		var all server.AnalysisList
		mustJSON(t, s.do(http.MethodGet, "/v1/analyses", "", "").body, &all)
		if got := ids(all.Analyses); len(got) != 2 || got[0] != running.ID || got[1] != done.ID {
			t.Errorf("listed %v, want newest first: [%s %s]", got, running.ID, done.ID)
		}
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"?phase=Running", []string{running.ID}},
			{"?phase=Successful", []string{done.ID}},
			{"?phase=Failed", nil},
			{"?phase=Running&phase=Successful", []string{running.ID, done.ID}},
		} {
			var list server.AnalysisList
			mustJSON(t, s.do(http.MethodGet, "/v1/analyses"+tc.query, "", "").body, &list)
			if got := ids(list.Analyses); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: listed %v, want %v", tc.query, got, tc.want)
			}
		}
	})

	t.Run("retention", func(t *testing.T) {
		fake := clock.NewFake(time.Now())
		s := start(t, options{prometheus: urls, clock: fake, retention: time.Hour, maxFinished: 2})
		var ids []string
		for range 3 {
			a := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good")).analysis(t)
			ids = append(ids, a.ID)
			fake.Advance(time.Minute)
		}
		if got := s.do(http.MethodGet, "/v1/analyses/"+ids[0], "", ""); got.status != http.StatusNotFound {
			t.Errorf("the oldest of 3 finished analyses with --max-finished 2: status %d, want 404", got.status)
		}
		for _, id := range ids[1:] {
			if got := s.do(http.MethodGet, "/v1/analyses/"+id, "", ""); got.status != http.StatusOK {
				t.Errorf("%s: status %d, want 200 within the retention", id, got.status)
			}
		}
		// ids[1] finished at +1m, ids[2] at +2m; now is +3m.
		fake.Advance(time.Hour - 2*time.Minute)
		if got := s.do(http.MethodGet, "/v1/analyses/"+ids[1], "", ""); got.status != http.StatusNotFound {
			t.Errorf("an analysis finished an hour ago: status %d, want 404", got.status)
		}
		if got := s.do(http.MethodGet, "/v1/analyses/"+ids[2], "", ""); got.status != http.StatusOK {
			t.Errorf("an analysis finished 59 minutes ago: status %d, want 200", got.status)
		}
		fake.Advance(time.Minute)
		var list server.AnalysisList
		mustJSON(t, s.do(http.MethodGet, "/v1/analyses", "", "").body, &list)
		if len(list.Analyses) != 0 {
			t.Errorf("listed %d analyses after every retention ran out, want none", len(list.Analyses))
		}
	})

	t.Run("max analyses", func(t *testing.T) {
		s := start(t, options{prometheus: urls, maxRunning: 1})
		first := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")).analysis(t)
		resp := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good"))
		if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" {
			t.Fatalf("second analysis: status %d, Retry-After %q; want 429 with Retry-After", resp.status, resp.header.Get("Retry-After"))
		}
		if p := resp.problem(t); p.Type != server.ProblemTooManyAnalyses {
			t.Errorf("problem type %q, want %q", p.Type, server.ProblemTooManyAnalyses)
		}
		s.do(http.MethodDelete, "/v1/analyses/"+first.ID, "", "")
		if resp := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")); resp.status != http.StatusAccepted {
			t.Errorf("after the first ended: status %d, want 202", resp.status)
		}
	})

	t.Run("drain", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		waiter := make(chan response, 1)
		// Ends when the wait is answered: Drain below aborts the analysis.
		go func() {
			resp, err := s.send(http.MethodPost, "/v1/analyses?wait=true", yamlType, forever("echo-good"))
			if err != nil {
				t.Error(err)
			}
			waiter <- resp
		}()
		_, stream := s.openStream(context.Background(), http.MethodPost, "/v1/analyses", yamlType, forever("echo-good"), "text/event-stream")
		waitFor(t, "two running analyses", func() bool { return len(s.analyses.List()) == 2 })

		grace, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		drained := make(chan int, 1)
		// Ends when the grace has run out and both analyses are aborted.
		go func() { drained <- s.analyses.Drain(grace) }()
		waitFor(t, "draining", s.analyses.Draining)

		if resp := s.do(http.MethodGet, "/readyz", "", ""); resp.status != http.StatusServiceUnavailable {
			t.Errorf("/readyz while draining: %d, want 503", resp.status)
		}
		if resp := s.do(http.MethodGet, "/healthz", "", ""); resp.status != http.StatusOK {
			t.Errorf("/healthz while draining: %d, want 200", resp.status)
		}
		for _, path := range []string{"/v1/analyses", "/v1/evaluate"} {
			resp := s.do(http.MethodPost, path, yamlType, once("echo-good"))
			if resp.status != http.StatusServiceUnavailable || resp.problem(t).Type != server.ProblemShuttingDown {
				t.Errorf("POST %s while draining: %d %s, want a 503 shutting-down problem", path, resp.status, resp.body)
			}
		}

		if n := <-drained; n != 2 {
			t.Errorf("Drain aborted %d analyses, want 2", n)
		}
		got := (<-waiter).analysis(t)
		if got.Phase != api.PhaseError || got.Message != analyses.ShutdownMessage {
			t.Errorf("the waiter got phase %s, message %q; want Error, %q", got.Phase, got.Message, analyses.ShutdownMessage)
		}
		events := newEventReader(t, stream).all()
		last := events[len(events)-1]
		if last.Type != api.EventCompleted || last.Analysis.Phase != api.PhaseError || last.Analysis.Message != analyses.ShutdownMessage {
			t.Errorf("the stream ended with %+v, want the completed Error analysis", last)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, seed(t))
		s.do(http.MethodPost, "/v1/evaluate?arg.namespace=echo-good", yamlType, seed(t))
		s.do(http.MethodGet, "/v1/analyses/nope", "", "")
		// A round's answer is sent before its request is counted and
		// logged (writeRoundNow): wait for the count.
		var body string
		waitFor(t, "the round's request to be counted", func() bool {
			body = string(s.do(http.MethodGet, "/metrics", "", "").body)
			return strings.Contains(body, `canaryd_http_requests_total{code="200",method="POST",route="/v1/evaluate"} 1`)
		})
		for _, want := range []string{
			"canaryd_analyses_started_total 1",
			`canaryd_analyses_finished_total{phase="Failed"} 1`,
			"canaryd_analyses_running 0",
			`canaryd_measurements_total{phase="Failed"} 2`,
			`canaryd_measurements_total{phase="Successful"} 1`,
			`canaryd_evaluations_total{phase="Successful"} 1`,
			`canaryd_http_requests_total{code="200",method="POST",route="/v1/analyses"} 1`,
			`canaryd_http_requests_total{code="404",method="GET",route="/v1/analyses/{id}"} 1`,
			`canaryd_http_request_duration_seconds_count{code="200",method="POST",route="/v1/evaluate"} 1`,
			"canaryd_prometheus_query_duration_seconds_bucket",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("logs carry the analysis id", func(t *testing.T) {
		s := start(t, options{prometheus: urls})
		a := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-good", yamlType, seed(t)).analysis(t)
		var about int
		for _, e := range s.logs.All() {
			fields := e.ContextMap()
			if strings.Contains(e.Message, "analysis") || e.Message == "measurement" {
				about++
				if fields["analysis_id"] != a.ID {
					t.Errorf("log line %q about the analysis has analysis_id %v, want %s", e.Message, fields["analysis_id"], a.ID)
				}
			}
		}
		if about < 5 { // started, 3 measurements, finished
			t.Errorf("%d log lines about the analysis, want at least 5", about)
		}
	})
}

// TestEvaluateErrorRound checks that an Error round answers 503 with the
// round as its body. A real Prometheus cannot be made to fail on demand, so
// a fake one answers 503 here.
func TestEvaluateErrorRound(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	s := start(t, options{prometheus: []string{down.URL}})
	resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, once("echo-good"))
	if resp.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", resp.status, resp.body)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json (the round, not a problem)", ct)
	}
	a := resp.analysis(t)
	if a.Phase != api.PhaseError || len(a.MetricResults) != 1 || a.MetricResults[0].Measurements[0].Phase != api.PhaseError {
		t.Errorf("round %+v, want phase Error with the Error measurement", a)
	}
}

// TestPanicIsA500 checks that a panic becomes a logged 500 problem that
// names the request id and nothing else.
func TestPanicIsA500(t *testing.T) {
	s := start(t, options{sources: func(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		panic("secret internals")
	}})
	resp := s.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good"), "X-Request-Id", "req-42")
	if resp.status != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", resp.status)
	}
	p := resp.problem(t)
	if p.Type != server.ProblemInternal || !strings.Contains(p.Detail, "req-42") || strings.Contains(string(resp.body), "secret") {
		t.Errorf("problem %+v: want the internal type, the request id and no internals", p)
	}
	if resp.header.Get("X-Request-Id") != "req-42" {
		t.Errorf("X-Request-Id = %q, want the caller's req-42", resp.header.Get("X-Request-Id"))
	}
	logged := s.logs.FilterMessage("panic while handling a request").All()
	if len(logged) != 1 || logged[0].ContextMap()["request_id"] != "req-42" {
		t.Errorf("the panic was not logged once with its request id: %+v", logged)
	}
	if n := len(s.analyses.List()); n != 0 {
		t.Errorf("%d analyses left after a panic, want none", n)
	}
}

func TestRequestID(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	for _, tc := range []struct {
		name, sent string
		echoed     bool
	}{
		{"a sane id is echoed", "abc-123_x.y", true},
		{"none is generated", "", false},
		{"an id with spaces is replaced", "a b", false},
		{"an overlong id is replaced", strings.Repeat("x", 200), false},
	} {
		var headers []string
		if tc.sent != "" {
			headers = []string{"X-Request-Id", tc.sent}
		}
		got := s.do(http.MethodGet, "/healthz", "", "", headers...).header.Get("X-Request-Id")
		if tc.echoed && got != tc.sent {
			t.Errorf("%s: X-Request-Id = %q, want %q", tc.name, got, tc.sent)
		}
		if !tc.echoed && (got == "" || got == tc.sent) {
			t.Errorf("%s: X-Request-Id = %q, want a fresh id", tc.name, got)
		}
	}
}

func TestAuth(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokens: []string{"first-token", "second-token"}})
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", http.MethodGet, "/v1/analyses", "", http.StatusUnauthorized},
		{"wrong token", http.MethodGet, "/v1/analyses", "Bearer nope", http.StatusUnauthorized},
		{"another scheme", http.MethodGet, "/v1/analyses", "Basic Zmlyc3QtdG9rZW4=", http.StatusUnauthorized},
		{"a prefix of a token", http.MethodGet, "/v1/analyses", "Bearer first", http.StatusUnauthorized},
		{"first token", http.MethodGet, "/v1/analyses", "Bearer first-token", http.StatusOK},
		{"second token, scheme in lower case", http.MethodGet, "/v1/analyses", "bearer second-token", http.StatusOK},
		{"evaluate needs it too", http.MethodPost, "/v1/evaluate", "", http.StatusUnauthorized},
		{"starting needs it", http.MethodPost, "/v1/analyses", "", http.StatusUnauthorized},
		{"reading needs it", http.MethodGet, "/v1/analyses/x", "", http.StatusUnauthorized},
		{"terminating needs it", http.MethodDelete, "/v1/analyses/x", "", http.StatusUnauthorized},
		{"healthz is open", http.MethodGet, "/healthz", "", http.StatusOK},
		{"readyz is open", http.MethodGet, "/readyz", "", http.StatusOK},
		{"metrics are open", http.MethodGet, "/metrics", "", http.StatusOK},
		{"the contract is open", http.MethodGet, "/openapi.yaml", "", http.StatusOK},
	} {
		var headers []string
		if tc.auth != "" {
			headers = []string{"Authorization", tc.auth}
		}
		resp := s.do(tc.method, tc.path, jsonType, "", headers...)
		if resp.status != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.status, tc.want)
			continue
		}
		if tc.want == http.StatusUnauthorized {
			if p := resp.problem(t); p.Type != server.ProblemUnauthorized || resp.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: problem %+v with WWW-Authenticate %q", tc.name, p, resp.header.Get("WWW-Authenticate"))
			}
		}
	}
}

func TestOperations(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	resp := s.do(http.MethodGet, "/openapi.yaml", "", "")
	if resp.status != http.StatusOK || !strings.HasPrefix(string(resp.body), "openapi: 3") {
		t.Errorf("/openapi.yaml: %d %.40q", resp.status, resp.body)
	}
	var h server.Health
	mustJSON(t, s.do(http.MethodGet, "/healthz", "", "").body, &h)
	if h.Status != "ok" {
		t.Errorf("/healthz status %q, want ok", h.Status)
	}
	mustJSON(t, s.do(http.MethodGet, "/readyz", "", "").body, &h)
	if h.Status != "ready" {
		t.Errorf("/readyz status %q, want ready", h.Status)
	}
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

func ids(list []api.Analysis) []string {
	var out []string
	for _, a := range list {
		out = append(out, a.ID)
	}
	return out
}

func readAllQuiet(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String()), err
		}
	}
}
