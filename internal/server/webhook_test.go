package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// delivery is one POST a test receiver got.
type delivery struct {
	at     time.Time
	path   string
	header http.Header
	body   []byte
}

// receiver is a real webhook receiver on loopback: it records every
// delivery and answers as respond says (n counts its requests from 0;
// nil answers 204).
type receiver struct {
	srv     *httptest.Server
	respond func(n int, w http.ResponseWriter)

	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, delivery{at: time.Now(), path: r.URL.Path, header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		if rc.respond == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		rc.respond(n, w)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// statuses answers the n-th request with codes[n], later ones with the last.
func statuses(codes ...int) func(int, http.ResponseWriter) {
	return func(n int, w http.ResponseWriter) { w.WriteHeader(codes[min(n, len(codes)-1)]) }
}

// prefix is the receiver's URL under /hooks, the prefix tests allow.
func (rc *receiver) prefix() string { return rc.srv.URL + "/hooks" }

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// wait waits until the receiver has n deliveries and returns them.
func (rc *receiver) wait(t *testing.T, n int) []delivery {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d webhook deliveries", n), func() bool { return len(rc.deliveries()) >= n })
	return rc.deliveries()
}

// event checks a delivery against the WebhookEvent schema and decodes it.
func (d delivery) event(t *testing.T) api.Event {
	t.Helper()
	checkSchema(t, "WebhookEvent", d.body)
	var ev api.Event
	if err := json.Unmarshal(d.body, &ev); err != nil {
		t.Fatalf("webhook body is not an event: %v: %s", err, d.body)
	}
	return ev
}

// verifySignature is what a receiver does with the Standard Webhooks
// headers: the HMAC-SHA256 of id.timestamp.body with the shared key.
func verifySignature(key []byte, d delivery) error {
	id, ts := d.header.Get("webhook-id"), d.header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q is not unix seconds", ts)
	}
	if skew := d.at.Sub(time.Unix(sec, 0)); skew > time.Minute || skew < -time.Minute {
		return fmt.Errorf("webhook-timestamp %s is %s from the delivery", ts, skew)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(d.body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(d.header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no valid webhook-signature")
}

// finite measures count times, 100 ms apart: long enough to hang up in
// the middle, short enough for a test.
func finite(namespace string, count int) string {
	return fmt.Sprintf(`metrics:
- name: finite
  interval: 100ms
  count: %d
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: %q
`, count, promtest.SeedQuery(namespace))
}

// metric returns the value of a sample of /metrics, by its text-format
// name and labels; -1 when absent.
func (s *testServer) metric(series string) float64 {
	s.t.Helper()
	for _, line := range strings.Split(string(s.do(http.MethodGet, "/metrics", "", "").body), "\n") {
		if name, value, ok := strings.Cut(line, " "); ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				s.t.Fatalf("metric %s: %v", series, err)
			}
			return v
		}
	}
	return -1
}

// webhookOf reads an analysis and returns its webhook status.
func (s *testServer) webhookOf(id string) api.WebhookStatus {
	s.t.Helper()
	a := s.do(http.MethodGet, "/v1/analyses/"+id, "", "").analysis(s.t)
	if a.Webhook == nil {
		s.t.Fatalf("analysis %s has no webhook field", id)
	}
	return *a.Webhook
}

// waitWebhook polls the analysis until its webhook status satisfies ok.
func (s *testServer) waitWebhook(id string, what string, ok func(api.WebhookStatus) bool) api.WebhookStatus {
	s.t.Helper()
	var st api.WebhookStatus
	waitFor(s.t, what, func() bool {
		st = s.webhookOf(id)
		return ok(st)
	})
	return st
}

// TestWebhooks delivers analyses' events to real receivers on loopback,
// from analyses run against a real Prometheus.
func TestWebhooks(t *testing.T) {
	prom := promtest.Start(t)
	urls := []string{prom.URL}
	key := []byte("a test key of 32 bytes, no more.")

	t.Run("completed, signed", func(t *testing.T) {
		rc := newReceiver(t, nil)
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}, webhookKey: key})
		resp := s.do(http.MethodPost, "/v1/analyses?arg.namespace=echo-bad&webhook="+url.QueryEscape(rc.prefix()+"/deploy-42"), yamlType, seed(t))
		if resp.status != http.StatusAccepted {
			t.Fatalf("status %d, want 202: %s", resp.status, resp.body)
		}
		a := resp.analysis(t)
		if a.Webhook == nil || a.Webhook.URL != rc.prefix()+"/deploy-42" || a.Webhook.Delivered != 0 || a.Webhook.Failed != 0 {
			t.Errorf("the started analysis' webhook is %+v, want its URL and no deliveries yet", a.Webhook)
		}

		d := rc.wait(t, 1)[0]
		if d.path != "/hooks/deploy-42" {
			t.Errorf("delivered to %s, want /hooks/deploy-42", d.path)
		}
		for h, want := range map[string]string{"Content-Type": "application/json", "User-Agent": "canaryd-webhook/1", "webhook-id": a.ID + ".1"} {
			if got := d.header.Get(h); got != want {
				t.Errorf("%s: %q, want %q", h, got, want)
			}
		}
		if err := verifySignature(key, d); err != nil {
			t.Errorf("the signature does not verify with the configured key: %v", err)
		}
		if err := verifySignature([]byte("another key"), d); err == nil {
			t.Error("the signature verifies with another key")
		}
		ev := d.event(t)
		if ev.Type != api.EventCompleted || ev.AnalysisID != a.ID || ev.Analysis == nil || ev.Analysis.Phase != api.PhaseFailed || ev.Analysis.CompletedAt == nil {
			t.Fatalf("delivered %s, want the completed event with the Failed analysis", d.body)
		}
		if ev.Analysis.Webhook != nil {
			t.Errorf("the completed event's analysis reports its own delivery: %+v", ev.Analysis.Webhook)
		}

		st := s.waitWebhook(a.ID, "the delivery to be reported", func(st api.WebhookStatus) bool { return st.Delivered == 1 })
		if st.Failed != 0 || st.LastStatus != http.StatusNoContent || st.LastError != "" {
			t.Errorf("webhook status %+v, want 1 delivered, none failed, last status 204", st)
		}
		var list server.AnalysisList
		mustJSON(t, s.do(http.MethodGet, "/v1/analyses", "", "").body, &list)
		if len(list.Analyses) != 1 || list.Analyses[0].Webhook == nil || list.Analyses[0].Webhook.Delivered != 1 {
			t.Errorf("the list does not show the webhook's delivery: %+v", list.Analyses)
		}
		if got := s.metric(`canaryd_webhook_deliveries_total{outcome="delivered"}`); got != 1 {
			t.Errorf(`canaryd_webhook_deliveries_total{outcome="delivered"} = %v, want 1`, got)
		}
		if got := s.metric(`canaryd_webhook_attempts_total{code="204"}`); got != 1 {
			t.Errorf(`canaryd_webhook_attempts_total{code="204"} = %v, want 1`, got)
		}
		if len(rc.deliveries()) != 1 {
			t.Errorf("%d deliveries, want the completed event only (no measurement events were asked for)", len(rc.deliveries()))
		}
	})

	t.Run("measurements in order, then completed", func(t *testing.T) {
		rc := newReceiver(t, nil)
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}, webhookKey: key, templates: templatesDir(t, nil)})
		for _, tc := range []struct {
			name, path, contentType, body string
		}{
			{"template body", "/v1/templates/success-rate/analyses?wait=true", jsonType,
				`{"args": {"namespace": "echo-good"}, "webhook": {"url": "` + rc.prefix() + `/body", "events": ["measurement", "completed"]}}`},
			{"template body, YAML, completed implied", "/v1/templates/success-rate/analyses?wait=true", yamlType,
				"args: {namespace: echo-good}\nwebhook:\n  url: " + rc.prefix() + "/yaml\n  events: [measurement]\n"},
			{"query", "/v1/analyses?wait=true&arg.namespace=echo-good&webhook=" + url.QueryEscape(rc.prefix()+"/query") + "&webhook.events=measurement,completed",
				yamlType, seed(t)},
		} {
			before := len(rc.deliveries())
			resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
			if resp.status != http.StatusOK {
				t.Fatalf("%s: status %d: %s", tc.name, resp.status, resp.body)
			}
			a := resp.analysis(t)
			if a.Phase != api.PhaseSuccessful || a.Webhook == nil {
				t.Fatalf("%s: the waiter got %s with webhook %+v, want Successful with its webhook", tc.name, a.Phase, a.Webhook)
			}
			got := rc.wait(t, before+4)[before:]
			if len(got) != 4 {
				t.Fatalf("%s: %d deliveries, want 3 measurements and the completed event", tc.name, len(got))
			}
			var last time.Time
			for i, d := range got {
				ev := d.event(t)
				if id := d.header.Get("webhook-id"); id != a.ID+"."+strconv.Itoa(i+1) {
					t.Errorf("%s: delivery %d has webhook-id %q, want %s.%d", tc.name, i, id, a.ID, i+1)
				}
				if err := verifySignature(key, d); err != nil {
					t.Errorf("%s: delivery %d: %v", tc.name, i, err)
				}
				if i < 3 {
					if ev.Type != api.EventMeasurement || ev.Metric != "non-5xx-rate" || ev.Measurement == nil || ev.Measurement.FinishedAt == nil || ev.MetricPhase == "" {
						t.Errorf("%s: delivery %d is %s, want a measurement event of non-5xx-rate", tc.name, i, d.body)
						continue
					}
					if ev.Measurement.FinishedAt.Before(last) {
						t.Errorf("%s: measurement %d finished before the one delivered before it", tc.name, i)
					}
					last = *ev.Measurement.FinishedAt
					continue
				}
				if ev.Type != api.EventCompleted || ev.Analysis == nil || ev.Analysis.Phase != api.PhaseSuccessful || ev.Analysis.MetricResults[0].Count != 3 {
					t.Errorf("%s: the last delivery is %s, want the completed Successful analysis", tc.name, d.body)
				}
			}
			s.waitWebhook(a.ID, tc.name+": 4 deliveries reported", func(st api.WebhookStatus) bool { return st.Delivered == 4 && st.Failed == 0 })
		}
	})

	t.Run("a stream's completed event shows the webhook", func(t *testing.T) {
		rc := newReceiver(t, nil)
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}})
		_, resp := s.openStream(context.Background(), http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(rc.prefix()), jsonType, once("echo-good"), "application/x-ndjson")
		events := newEventReader(t, resp).all()
		last := events[len(events)-1]
		if last.Type != api.EventCompleted || last.Analysis.Webhook == nil || last.Analysis.Webhook.URL != rc.prefix() {
			t.Errorf("the stream's completed event is %+v, want the analysis with its webhook", last)
		}
		d := rc.wait(t, 1)[0]
		if d.header.Get("webhook-signature") != "" {
			t.Error("a delivery is signed although no key is configured")
		}
	})

	t.Run("the same webhook-id across retries", func(t *testing.T) {
		rc := newReceiver(t, statuses(http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusOK))
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}, webhookKey: key})
		a := s.do(http.MethodPost, "/v1/analyses?wait=true&webhook="+url.QueryEscape(rc.prefix()), jsonType, once("echo-good")).analysis(t)
		got := rc.wait(t, 3)
		for i, d := range got {
			if id := d.header.Get("webhook-id"); id != a.ID+".1" {
				t.Errorf("attempt %d: webhook-id %q, want %s.1 on every attempt", i, id, a.ID)
			}
			if err := verifySignature(key, d); err != nil {
				t.Errorf("attempt %d: %v", i, err)
			}
			if string(d.body) != string(got[0].body) {
				t.Errorf("attempt %d sent another body", i)
			}
		}
		st := s.waitWebhook(a.ID, "the delivery after retries", func(st api.WebhookStatus) bool { return st.Delivered == 1 })
		if st.Failed != 0 || st.LastStatus != http.StatusOK {
			t.Errorf("webhook status %+v, want delivered after retries, none failed", st)
		}
		if got := s.metric(`canaryd_webhook_attempts_total{code="503"}`); got != 1 {
			t.Errorf(`canaryd_webhook_attempts_total{code="503"} = %v, want 1`, got)
		}
	})

	t.Run("no retry on 400", func(t *testing.T) {
		rc := newReceiver(t, statuses(http.StatusBadRequest, http.StatusOK))
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}})
		a := s.do(http.MethodPost, "/v1/analyses?wait=true&webhook="+url.QueryEscape(rc.prefix()), jsonType, once("echo-good")).analysis(t)
		st := s.waitWebhook(a.ID, "the delivery to fail", func(st api.WebhookStatus) bool { return st.Failed == 1 })
		// Retries would come every few milliseconds.
		time.Sleep(200 * time.Millisecond)
		if n := len(rc.deliveries()); n != 1 {
			t.Errorf("%d attempts after a 400, want 1", n)
		}
		if st.Delivered != 0 || st.LastStatus != http.StatusBadRequest || !strings.Contains(st.LastError, "400 Bad Request") {
			t.Errorf("webhook status %+v, want failed with the 400", st)
		}
		if got := s.metric(`canaryd_webhook_deliveries_total{outcome="failed"}`); got != 1 {
			t.Errorf(`canaryd_webhook_deliveries_total{outcome="failed"} = %v, want 1`, got)
		}
	})

	t.Run("Retry-After is honoured", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter) {
			if n == 0 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		s := start(t, options{prometheus: urls, webhookAllow: []string{rc.prefix()}})
		s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(rc.prefix()), jsonType, once("echo-good"))
		got := rc.wait(t, 2)
		// Backoffs are milliseconds here: only Retry-After explains a second.
		if gap := got[1].at.Sub(got[0].at); gap < 950*time.Millisecond {
			t.Errorf("retried %s after a 429 with Retry-After: 1, want at least 1s", gap)
		}
	})
}

// TestWebhookRefused checks that a webhook canaryd will not send is a 400
// naming its field, before anything runs, and that nothing is sent.
func TestWebhookRefused(t *testing.T) {
	rc := newReceiver(t, nil)
	const noProm = "http://127.0.0.1:9"

	t.Run("without --webhook-allow", func(t *testing.T) {
		s := start(t, options{prometheus: []string{noProm}, templates: templatesDir(t, nil)})
		for _, tc := range []struct{ path, body, field string }{
			{"/v1/analyses?webhook=" + url.QueryEscape(rc.prefix()), once("echo-good"), "webhook"},
			{"/v1/templates/success-rate/analyses", `{"args": {"namespace": "echo"}, "webhook": {"url": "` + rc.prefix() + `"}}`, "webhook.url"},
		} {
			resp := s.do(http.MethodPost, tc.path, jsonType, tc.body)
			if resp.status != http.StatusBadRequest {
				t.Fatalf("%s: status %d, want 400: %s", tc.path, resp.status, resp.body)
			}
			p := resp.problem(t)
			if len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.Contains(p.Errors[0].Message, "--webhook-allow") {
				t.Errorf("%s: errors %+v, want one on %s saying how to allow webhooks (--webhook-allow)", tc.path, p.Errors, tc.field)
			}
		}
		if n := len(s.analyses.List()); n != 0 {
			t.Errorf("%d analyses after refused webhooks, want none", n)
		}
	})

	t.Run("a destination not allowed", func(t *testing.T) {
		s := start(t, options{prometheus: []string{noProm}, webhookAllow: []string{rc.prefix()}, templates: templatesDir(t, nil)})
		for _, tc := range []struct {
			name, path, body string
			fields           []string
		}{
			{"outside the prefix", "/v1/analyses?webhook=" + url.QueryEscape(rc.srv.URL+"/admin"), once("echo-good"), []string{"webhook"}},
			{"a longer segment", "/v1/analyses?webhook=" + url.QueryEscape(rc.srv.URL+"/hooksevil"), once("echo-good"), []string{"webhook"}},
			{"dot segments", "/v1/analyses?webhook=" + url.QueryEscape(rc.prefix()+"/../admin"), once("echo-good"), []string{"webhook"}},
			{"another port", "/v1/analyses?webhook=" + url.QueryEscape("http://127.0.0.1:9/hooks"), once("echo-good"), []string{"webhook"}},
			{"body: not allowed, a bad event", "/v1/templates/success-rate/analyses",
				`{"args": {"namespace": "echo"}, "webhook": {"url": "https://elsewhere.example.com/hooks", "events": ["completed", "progress"]}}`,
				[]string{"webhook.url", "webhook.events[1]"}},
		} {
			resp := s.do(http.MethodPost, tc.path, jsonType, tc.body)
			if resp.status != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400: %s", tc.name, resp.status, resp.body)
				continue
			}
			got := map[string]bool{}
			for _, e := range resp.problem(t).Errors {
				got[e.Field] = true
			}
			for _, f := range tc.fields {
				if !got[f] {
					t.Errorf("%s: no error on %s: %s", tc.name, f, resp.body)
				}
			}
		}
		if n := len(s.analyses.List()); n != 0 {
			t.Errorf("%d analyses after refused webhooks, want none", n)
		}
	})

	time.Sleep(100 * time.Millisecond)
	if n := len(rc.deliveries()); n != 0 {
		t.Errorf("the receiver got %d deliveries from refused requests", n)
	}
}

// TestWebhookOutlivesItsCaller checks that an analysis with a webhook runs
// to its end when the caller that waits on it, or streams it, hangs up,
// and that the webhook gets the result: the analysis, not its caller, is
// what the webhook was promised.
func TestWebhookOutlivesItsCaller(t *testing.T) {
	prom := promtest.Start(t)
	rc := newReceiver(t, nil)
	s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{rc.prefix()}})
	for i, tc := range []struct{ name, query, accept string }{
		{"wait", "&wait=true", ""},
		{"ndjson", "", "application/x-ndjson"},
		{"sse", "", "text/event-stream"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		req := s.request(ctx, http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(rc.prefix())+tc.query, yamlType, finite("echo-good", 4), "Accept", tc.accept)
		done := make(chan struct{})
		// Ends when the request fails, at the latest when ctx is cancelled
		// below.
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = readAllQuiet(resp)
			}
		}()
		var id string
		waitFor(t, tc.name+": a running analysis with a measurement", func() bool {
			for _, a := range s.analyses.List() {
				if a.Phase == api.PhaseRunning && a.MetricResults[0].Count > 0 {
					id = a.ID
					return true
				}
			}
			return false
		})
		cancel()
		<-done

		d := rc.wait(t, i+1)[i]
		ev := d.event(t)
		if ev.AnalysisID != id || ev.Type != api.EventCompleted || ev.Analysis.Phase != api.PhaseSuccessful ||
			ev.Analysis.Message != "" || ev.Analysis.MetricResults[0].Count != 4 {
			t.Errorf("%s: the webhook got %s, want the analysis run to its end: Successful, 4 measurements, not terminated", tc.name, d.body)
		}
		if s.logs.FilterMessage("client went away; the analysis goes on for its webhook").FilterField(zap.String("analysis_id", id)).Len() == 0 {
			t.Errorf("%s: no log line says the analysis went on for its webhook", tc.name)
		}
	}
}

// TestWebhookDrain is the shutdown sequence of `canaryd serve`, in
// process: Drain aborts what the grace did not let finish, and
// WaitWebhooks then delivers those Error results, and abandons the
// deliveries that cannot be made in time.
func TestWebhookDrain(t *testing.T) {
	prom := promtest.Start(t)
	key := []byte("a test key of 32 bytes, no more.")
	up := newReceiver(t, nil)
	down := newReceiver(t, statuses(http.StatusServiceUnavailable))
	s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{up.prefix(), down.prefix()}, webhookKey: key, webhookMaxElapsed: time.Minute})

	toUp := s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(up.prefix()), yamlType, forever("echo-good")).analysis(t)
	toDown := s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(down.prefix()), yamlType, forever("echo-good")).analysis(t)
	waitFor(t, "both analyses measuring", func() bool {
		list := s.analyses.List()
		return len(list) == 2 && list[0].MetricResults[0].Count > 0 && list[1].MetricResults[0].Count > 0
	})

	grace, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if n := s.analyses.Drain(grace); n != 2 {
		t.Fatalf("Drain aborted %d analyses, want 2", n)
	}
	// Both completed events are queued now; "down" answers 503 for ever.
	hooks, cancelHooks := context.WithTimeout(context.Background(), time.Second)
	defer cancelHooks()
	started := time.Now()
	if n := s.analyses.WaitWebhooks(hooks); n != 1 {
		t.Errorf("WaitWebhooks abandoned %d webhooks, want 1 (the one whose receiver is down)", n)
	}
	if took := time.Since(started); took > 3*time.Second {
		t.Errorf("WaitWebhooks took %s with a context of 1s", took)
	}

	got := up.deliveries()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d deliveries, want the completed event", len(got))
	}
	if err := verifySignature(key, got[0]); err != nil {
		t.Error(err)
	}
	ev := got[0].event(t)
	if ev.AnalysisID != toUp.ID || ev.Type != api.EventCompleted || ev.Analysis.Phase != api.PhaseError || ev.Analysis.Message != analyses.ShutdownMessage {
		t.Errorf("the webhook got %s, want the completed Error analysis with %q", got[0].body, analyses.ShutdownMessage)
	}
	if st := s.webhookOf(toUp.ID); st.Delivered != 1 || st.Failed != 0 {
		t.Errorf("delivered webhook: status %+v, want 1 delivered", st)
	}
	st := s.webhookOf(toDown.ID)
	// Its last attempt may have been cut short (status 0) or have had its
	// 503.
	if st.Delivered != 0 || st.Failed != 1 || !strings.Contains(st.LastError, "abandoned") ||
		(st.LastStatus != 0 && st.LastStatus != http.StatusServiceUnavailable) {
		t.Errorf("abandoned webhook: status %+v, want 1 failed, abandoned at shutdown", st)
	}
	if len(down.deliveries()) < 2 {
		t.Errorf("the receiver that is down got %d attempts; the delivery should have been retried until abandoned", len(down.deliveries()))
	}
}

// TestWebhookSecrets checks that the signing key, and a webhook URL's
// query and credentials, appear in no response and no log line, whatever
// happens to the deliveries.
func TestWebhookSecrets(t *testing.T) {
	prom := promtest.Start(t)
	const (
		token    = "tok-SECRET-123"
		password = "pw-SECRET-789"
		keyText  = "key-SECRET-456-and-some-more"
	)
	rc := newReceiver(t, statuses(http.StatusInternalServerError, http.StatusOK))
	// A destination that never answers: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/hooks"
	ln.Close()
	s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{rc.prefix(), dead}, webhookKey: []byte(keyText), webhookMaxElapsed: 200 * time.Millisecond})

	var bodies []string
	record := func(resp response) response {
		bodies = append(bodies, string(resp.body))
		return resp
	}
	withToken := rc.prefix() + "/x?token=" + token
	a := record(s.do(http.MethodPost, "/v1/analyses?wait=true&webhook="+url.QueryEscape(withToken), jsonType, once("echo-good"))).analysis(t)
	if a.Webhook == nil || a.Webhook.URL != rc.prefix()+"/x?REDACTED" {
		t.Errorf("webhook %+v, want the URL with its query redacted", a.Webhook)
	}
	b := record(s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(dead+"?token="+token), jsonType, once("echo-good"))).analysis(t)
	withPassword := strings.Replace(rc.prefix(), "http://", "http://user:"+password+"@", 1)
	if resp := record(s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(withPassword), jsonType, once("echo-good"))); resp.status != http.StatusBadRequest {
		t.Errorf("a webhook with credentials: status %d, want 400", resp.status)
	}

	s.waitWebhook(a.ID, "the delivery after a 500", func(st api.WebhookStatus) bool { return st.Delivered == 1 })
	st := s.waitWebhook(b.ID, "the delivery to a dead port to be given up", func(st api.WebhookStatus) bool { return st.Failed == 1 })
	if !strings.Contains(st.LastError, "no response") {
		t.Errorf("the dead port's error is %q, want no response", st.LastError)
	}
	if err := verifySignature([]byte(keyText), rc.deliveries()[1]); err != nil {
		t.Error(err)
	}
	_, stream := s.openStream(context.Background(), http.MethodGet, "/v1/analyses/"+a.ID, "", "", "application/x-ndjson")
	bodies = append(bodies, string(readAll(t, stream.Body)))
	for _, path := range []string{"/v1/analyses", "/v1/analyses/" + a.ID, "/v1/analyses/" + b.ID, "/metrics"} {
		record(s.do(http.MethodGet, path, "", ""))
	}

	var logs strings.Builder
	for _, e := range s.logs.All() {
		fmt.Fprintf(&logs, "%s %s %v\n", e.Level, e.Message, e.ContextMap())
	}
	for _, secret := range []string{token, password, keyText} {
		for _, body := range bodies {
			if strings.Contains(body, secret) {
				t.Errorf("a response shows %q: %s", secret, body)
			}
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "webhook delivery failed") {
		t.Errorf("the failed deliveries are not logged, so the check above proves little:\n%s", logs.String())
	}
}
