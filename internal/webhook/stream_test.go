package webhook

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

func TestDelivery(t *testing.T) {
	for _, tc := range []struct {
		name          string
		codes         []int
		wantAttempts  int
		wantDelivered bool
		wantStatus    int
		wantError     string
	}{
		{"200 at once", []int{200}, 1, true, 200, ""},
		{"204 at once", []int{204}, 1, true, 204, ""},
		{"503 then success", []int{503, 200}, 2, true, 200, ""},
		{"500, 502, then success", []int{500, 502, 200}, 3, true, 200, ""},
		{"429 retried", []int{429, 200}, 2, true, 200, ""},
		{"408 retried", []int{408, 200}, 2, true, 200, ""},
		{"400 not retried", []int{400, 200}, 1, false, 400, "400 Bad Request"},
		{"401 not retried", []int{401, 200}, 1, false, 401, "401 Unauthorized"},
		{"404 not retried", []int{404, 200}, 1, false, 404, "404 Not Found"},
		{"410 not retried", []int{410, 200}, 1, false, 410, "410 Gone"},
		{"304 is not success", []int{304, 200}, 1, false, 304, "304 Not Modified"},
		{"503 until the budget is spent", []int{503}, -1, false, 503, "gave up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, codes(tc.codes...))
			ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.MaxElapsed = 300 * time.Millisecond })
			st := ts.stream(t, "a1", rc.URL()+"/hook", nil)
			st.Send(completed("a1"))
			waitFor(t, st)

			hits := rc.Hits()
			if tc.wantAttempts > 0 && len(hits) != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", len(hits), tc.wantAttempts)
			}
			if tc.wantAttempts < 0 && len(hits) < 2 {
				t.Errorf("attempts = %d, want retries", len(hits))
			}
			for i, h := range hits {
				for header, want := range map[string]string{
					"webhook-id":   "a1.1", // the same across retries
					"Content-Type": "application/json",
					"User-Agent":   "canaryd-webhook/1",
				} {
					if got := h.header.Get(header); got != want {
						t.Errorf("attempt %d: %s = %q, want %q", i+1, header, got, want)
					}
				}
				if sec, err := strconv.ParseInt(h.header.Get("webhook-timestamp"), 10, 64); err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
					t.Errorf("attempt %d: webhook-timestamp = %q, want unix seconds of now", i+1, h.header.Get("webhook-timestamp"))
				}
				if got := h.header.Get("webhook-signature"); got != "" {
					t.Errorf("attempt %d: webhook-signature = %q without a secret, want none", i+1, got)
				}
				if ev := decodeEvent(t, h); ev.Type != api.EventCompleted || ev.Analysis == nil || ev.Analysis.ID != "a1" {
					t.Errorf("attempt %d: body = %s, want the completed event with its analysis", i+1, h.body)
				}
			}

			got := st.Status()
			want := api.WebhookStatus{URL: rc.URL() + "/hook", LastStatus: tc.wantStatus}
			if tc.wantDelivered {
				want.Delivered = 1
			} else {
				want.Failed = 1
			}
			if got.URL != want.URL || got.Delivered != want.Delivered || got.Failed != want.Failed || got.LastStatus != want.LastStatus {
				t.Errorf("Status = %+v, want %+v", got, want)
			}
			if !strings.Contains(got.LastError, tc.wantError) || (tc.wantError == "") != (got.LastError == "") {
				t.Errorf("LastError = %q, want it to contain %q", got.LastError, tc.wantError)
			}

			outcome := "failed"
			if tc.wantDelivered {
				outcome = "delivered"
			}
			if got := ts.metric(t, `canaryd_webhook_deliveries_total{outcome="`+outcome+`"}`); got != 1 {
				t.Errorf("deliveries_total{outcome=%q} = %v, want 1", outcome, got)
			}
			if got := ts.metric(t, `canaryd_webhook_attempts_total{code="`+strconv.Itoa(tc.codes[0])+`"}`); got < 1 {
				t.Errorf("attempts_total{code=\"%d\"} = %v, want at least 1", tc.codes[0], got)
			}
			if got := ts.metric(t, "canaryd_webhook_delivery_duration_seconds_count"); got != 1 {
				t.Errorf("delivery_duration_seconds_count = %v, want 1", got)
			}
		})
	}
}

func TestSignature(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name, file string // the --webhook-secret-file's contents
	}{
		{"raw key", "a-raw-shared-secret\n"},
		{"standard webhooks key", "whsec_" + base64.StdEncoding.EncodeToString(key) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secret := tc.file // the receiver is given the same file
			var verified atomic.Int32
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
				// The receiver verifies every attempt: each has its own
				// timestamp and signature.
				if n == 0 {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			parsed, err := ParseSecret([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.Secret = parsed })
			st := ts.stream(t, "a1", rc.URL(), nil)
			st.Send(completed("a1"))
			waitFor(t, st)

			hits := rc.Hits()
			if len(hits) != 2 {
				t.Fatalf("attempts = %d, want 2", len(hits))
			}
			for i, h := range hits {
				if err := verify(secret, h.header, h.body, time.Now()); err != nil {
					t.Errorf("attempt %d: the receiver's verification failed: %v (signature %q)", i+1, err, h.header.Get("webhook-signature"))
				} else {
					verified.Add(1)
				}
				if err := verify(secret, h.header, append(h.body, ' '), time.Now()); err == nil {
					t.Errorf("attempt %d: a tampered body verified", i+1)
				}
				if err := verify(secret, h.header, h.body, time.Now().Add(time.Hour)); err == nil {
					t.Errorf("attempt %d: an hour-old delivery verified", i+1)
				}
				if err := verify("whsec_"+base64.StdEncoding.EncodeToString([]byte("another key")), h.header, h.body, time.Now()); err == nil {
					t.Errorf("attempt %d: verified with the wrong key", i+1)
				}
			}
			if hits[0].header.Get("webhook-id") != hits[1].header.Get("webhook-id") {
				t.Errorf("webhook-id %q then %q, want the same across retries", hits[0].header.Get("webhook-id"), hits[1].header.Get("webhook-id"))
			}
			if verified.Load() != 2 {
				t.Errorf("verified %d attempts, want 2", verified.Load())
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		value func() string
		// earliest is when the second attempt may come at the soonest,
		// given the first attempt's arrival and the header.
		earliest func(first time.Time, value string) time.Time
	}{
		{"503 with seconds", http.StatusServiceUnavailable,
			func() string { return "1" },
			func(first time.Time, _ string) time.Time { return first.Add(time.Second) }},
		{"429 with seconds", http.StatusTooManyRequests,
			func() string { return "1" },
			func(first time.Time, _ string) time.Time { return first.Add(time.Second) }},
		{"429 with an HTTP date", http.StatusTooManyRequests,
			func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) },
			func(_ time.Time, v string) time.Time { d, _ := http.ParseTime(v); return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex // the receiver's goroutine writes value
			var value string
			rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 0 {
					mu.Lock()
					value = tc.value()
					w.Header().Set("Retry-After", value)
					mu.Unlock()
					w.WriteHeader(tc.code)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			ts := newTestSender(t, []string{rc.URL()}, nil)
			st := ts.stream(t, "a1", rc.URL(), nil)
			st.Send(completed("a1"))
			waitFor(t, st)
			hits := rc.Hits()
			if len(hits) != 2 {
				t.Fatalf("attempts = %d, want 2", len(hits))
			}
			mu.Lock()
			defer mu.Unlock()
			if earliest := tc.earliest(hits[0].at, value); hits[1].at.Before(earliest) {
				t.Errorf("second attempt came %v after the first, before the Retry-After %q allowed (%v)", hits[1].at.Sub(hits[0].at), value, earliest.Sub(hits[0].at))
			}
			if got := st.Status(); got.Delivered != 1 {
				t.Errorf("Status = %+v, want delivered", got)
			}
		})
	}
}

func TestRetryAfterBeyondBudget(t *testing.T) {
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.MaxElapsed = 2 * time.Second })
	st := ts.stream(t, "a1", rc.URL(), nil)
	start := time.Now()
	st.Send(completed("a1"))
	waitFor(t, st)
	if got := len(rc.Hits()); got != 1 {
		t.Errorf("attempts = %d, want 1: the receiver asked for more than the budget", got)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("gave up after %v, want at once rather than waiting for nothing", elapsed)
	}
	if got := st.Status(); got.Failed != 1 || !strings.Contains(got.LastError, "retry after 1h0m0s") {
		t.Errorf("Status = %+v, want failed, naming the Retry-After", got)
	}
}

func TestNetworkErrorGivesUp(t *testing.T) {
	rc := newReceiver(t, nil)
	url := rc.URL()
	rc.srv.Close() // nothing listens there any more: connection refused
	const budget = 300 * time.Millisecond
	ts := newTestSender(t, []string{url}, func(o *Options) {
		o.MaxElapsed = budget
		// Retried for the whole budget, not cut short by the circuit
		// breaker (see TestBreaker).
		o.BreakerFailures = 1000
	})
	st := ts.stream(t, "a1", url, nil)
	start := time.Now()
	st.Send(completed("a1"))
	waitFor(t, st)
	elapsed := time.Since(start)
	if elapsed < budget-ts.maxBackoff || elapsed > budget+2*time.Second {
		t.Errorf("gave up after %v, want at about MaxElapsed (%v)", elapsed, budget)
	}
	if got := ts.metric(t, `canaryd_webhook_attempts_total{code="error"}`); got < 2 {
		t.Errorf(`attempts_total{code="error"} = %v, want retries`, got)
	}
	got := st.Status()
	if got.Failed != 1 || got.Delivered != 0 || got.LastStatus != 0 || !strings.Contains(got.LastError, "gave up") || !strings.Contains(got.LastError, "no response") {
		t.Errorf("Status = %+v, want one failure, given up after no response", got)
	}
	if got := ts.metric(t, `canaryd_webhook_deliveries_total{outcome="failed"}`); got != 1 {
		t.Errorf(`deliveries_total{outcome="failed"} = %v, want 1`, got)
	}
}

func TestRedirect(t *testing.T) {
	evil := newReceiver(t, codes(200)) // not on the allow list
	for _, tc := range []struct {
		name          string
		code          int // the redirect's status; 307 when 0
		location      func(self string) string
		client        *http.Client
		wantDelivered bool
		wantEvilHits  int
	}{
		{"to a disallowed host", 0, func(string) string { return evil.URL() + "/steal?token=hunter2" }, nil, false, 0},
		{"to a disallowed host, 308", 308, func(string) string { return evil.URL() + "/steal?token=hunter2" }, nil, false, 0},
		{"to a disallowed host, caller's client", 0, func(string) string { return evil.URL() + "/steal?token=hunter2" }, &http.Client{Timeout: 5 * time.Second}, false, 0},
		{"to the metadata address", 0, func(string) string { return "http://169.254.169.254/latest/meta-data/" }, nil, false, 0},
		{"to a disallowed scheme", 0, func(string) string { return "file:///etc/passwd" }, nil, false, 0},
		{"to an allowed path", 0, func(self string) string { return self + "/new" }, nil, true, 0},
		{"to an allowed path, 308", 308, func(self string) string { return self + "/new" }, nil, true, 0},
		{"302 would turn the POST into a GET", 302, func(self string) string { return self + "/new" }, nil, false, 0},
		{"303 would turn the POST into a GET", 303, func(self string) string { return self + "/new" }, nil, false, 0},
		{"a redirect loop", 0, func(self string) string { return self + "/old" }, nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/old" {
					w.Header().Set("Location", tc.location("http://"+r.Host))
					w.WriteHeader(cmp.Or(tc.code, http.StatusTemporaryRedirect))
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.Client = tc.client })
			st := ts.stream(t, "a1", rc.URL()+"/old", nil)
			st.Send(completed("a1"))
			waitFor(t, st)

			got := st.Status()
			if (got.Delivered == 1) != tc.wantDelivered {
				t.Errorf("Status = %+v, want delivered %v", got, tc.wantDelivered)
			}
			if !tc.wantDelivered {
				if n := len(rc.Hits()); n != 1 && !strings.Contains(tc.name, "loop") {
					t.Errorf("requests = %d, want 1: a refused redirect is final", n)
				}
				for _, h := range rc.Hits() {
					if h.path != "/old" {
						t.Errorf("a request reached %s", h.path)
					}
				}
				if !strings.Contains(got.LastError, "redirect not followed") || strings.Contains(got.LastError, "hunter2") {
					t.Errorf("LastError = %q, want a refused redirect, without the target's query", got.LastError)
				}
			} else {
				hits := rc.Hits()
				if len(hits) != 2 || hits[1].path != "/new" || string(hits[1].body) != string(hits[0].body) {
					t.Errorf("hits = %d, want the event POSTed again at /new", len(hits))
				}
			}
			if n := len(evil.Hits()); n != tc.wantEvilHits {
				t.Errorf("the disallowed host got %d requests, want %d", n, tc.wantEvilHits)
			}
		})
	}
}

func TestMeasurementEventsInOrder(t *testing.T) {
	var inFlight, maxInFlight atomic.Int32
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if v := inFlight.Add(1); v > maxInFlight.Load() {
			maxInFlight.Store(v)
		}
		defer inFlight.Add(-1)
		time.Sleep(time.Duration(n%3) * time.Millisecond)
		if n == 2 { // the third event fails once, and must still come before the fourth
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	ts := newTestSender(t, []string{rc.URL()}, nil)
	st := ts.stream(t, "a1", rc.URL(), []string{"measurement", "completed"})
	const n = 20
	for i := range n {
		st.Send(measurement("a1", i))
	}
	st.Send(completed("a1"))
	waitFor(t, st)

	var gotIDs, wantIDs []string
	var gotValues []string
	for _, h := range rc.Hits() {
		id := h.header.Get("webhook-id")
		if len(gotIDs) > 0 && gotIDs[len(gotIDs)-1] == id {
			continue // a retry
		}
		gotIDs = append(gotIDs, id)
		if ev := decodeEvent(t, h); ev.Type == api.EventMeasurement {
			gotValues = append(gotValues, ev.Measurement.Value)
		}
	}
	for i := 1; i <= n+1; i++ {
		wantIDs = append(wantIDs, fmt.Sprintf("a1.%d", i))
	}
	if strings.Join(gotIDs, " ") != strings.Join(wantIDs, " ") {
		t.Errorf("webhook-ids in arrival order:\n got %v\nwant %v", gotIDs, wantIDs)
	}
	for i, v := range gotValues {
		if v != strconv.Itoa(i) {
			t.Errorf("measurement event %d carries value %q, want %q: out of order", i, v, strconv.Itoa(i))
			break
		}
	}
	if last := rc.Hits()[len(rc.Hits())-1]; decodeEvent(t, last).Type != api.EventCompleted {
		t.Errorf("last event = %s, want the completed event", last.body)
	}
	if got := maxInFlight.Load(); got != 1 {
		t.Errorf("at most %d deliveries in flight at once, want 1", got)
	}
	if got := st.Status(); got.Delivered != n+1 || got.Failed != 0 {
		t.Errorf("Status = %+v, want %d delivered", got, n+1)
	}
}

func TestOnlyCompletedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
	}{
		{"no events named", nil},
		{"completed named", []string{"completed"}},
		{"unknown names ignored", []string{"bogus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, codes(200))
			ts := newTestSender(t, []string{rc.URL()}, nil)
			st := ts.stream(t, "a1", rc.URL(), tc.events)
			for i := range 3 {
				st.Send(measurement("a1", i))
			}
			st.Send(completed("a1"))
			waitFor(t, st)
			hits := rc.Hits()
			if len(hits) != 1 || decodeEvent(t, hits[0]).Type != api.EventCompleted || hits[0].header.Get("webhook-id") != "a1.1" {
				t.Errorf("got %d deliveries, want only the completed event, as a1.1", len(hits))
			}
		})
	}
}

func TestOverflowKeepsCompleted(t *testing.T) {
	release := make(chan struct{})
	first := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			close(first)
			select { // a slow receiver, holding the first delivery
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.QueueSize = 3 })
	st := ts.stream(t, "a1", rc.URL(), []string{"measurement"})
	st.Send(measurement("a1", 0))
	<-first
	start := time.Now()
	for i := 1; i < 10; i++ {
		st.Send(measurement("a1", i))
	}
	st.Send(completed("a1"))
	if d := time.Since(start); d > time.Second {
		t.Errorf("Send blocked for %v behind a slow receiver", d)
	}
	close(release)
	waitFor(t, st)

	var got []string
	for _, h := range rc.Hits() {
		got = append(got, h.header.Get("webhook-id"))
	}
	// a1.1 was in flight; a1.2…a1.7 were dropped to keep the newest three;
	// the completed event (a1.11) has its own place.
	want := []string{"a1.1", "a1.8", "a1.9", "a1.10", "a1.11"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("delivered ids = %v, want %v", got, want)
	}
	if hits := rc.Hits(); decodeEvent(t, hits[len(hits)-1]).Type != api.EventCompleted {
		t.Error("the completed event was not delivered last")
	}
	if s := st.Status(); s.Delivered != 5 || s.Failed != 6 || !strings.Contains(s.LastError, "dropped") {
		t.Errorf("Status = %+v, want 5 delivered, 6 failed (dropped)", s)
	}
	if got := ts.metric(t, `canaryd_webhook_deliveries_total{outcome="dropped"}`); got != 6 {
		t.Errorf(`deliveries_total{outcome="dropped"} = %v, want 6`, got)
	}
}

func TestCloseDeliversPending(t *testing.T) {
	rc := newReceiver(t, codes(503, 200))
	ts := newTestSender(t, []string{rc.URL()}, nil)
	st := ts.stream(t, "a1", rc.URL(), []string{"measurement"})
	for i := range 3 {
		st.Send(measurement("a1", i))
	}
	st.Close()
	st.Close() // harmless
	st.Send(measurement("a1", 3))
	waitFor(t, st)
	st.Send(completed("a1")) // after the end: ignored, and does not panic
	if got := st.Status(); got.Delivered != 3 || got.Failed != 0 {
		t.Errorf("Status = %+v, want the 3 events sent before Close delivered", got)
	}
	if got := len(rc.Hits()); got != 4 { // one retry
		t.Errorf("requests = %d, want 4", got)
	}
}

func TestCompletedEndsStream(t *testing.T) {
	rc := newReceiver(t, codes(200))
	ts := newTestSender(t, []string{rc.URL()}, nil)
	st := ts.stream(t, "a1", rc.URL(), []string{"measurement"})
	st.Send(completed("a1"))
	st.Send(measurement("a1", 0)) // after the end: ignored
	st.Send(completed("a1"))      // a second completed event: ignored
	waitFor(t, st)                // no Close needed
	if got := len(rc.Hits()); got != 1 {
		t.Errorf("requests = %d, want only the first completed event", got)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(int, http.ResponseWriter, *http.Request)
	}{
		{"while waiting to retry", codes(503)},
		{"while an attempt is in flight", func(_ int, w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // never answers
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tc.respond)
			ts := newTestSender(t, []string{rc.URL()}, func(o *Options) {
				o.MaxElapsed = time.Minute
				o.InitialBackoff, o.MaxBackoff = 50*time.Millisecond, time.Second
				o.AttemptTimeout = 30 * time.Second
			})
			st := ts.stream(t, "a1", rc.URL(), []string{"measurement"})
			st.Send(measurement("a1", 0))
			st.Send(measurement("a1", 1))
			st.Send(completed("a1"))

			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := st.Wait(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Wait = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Wait returned %v after its context ended, want promptly", d)
			}
			select {
			case <-st.done:
			default:
				t.Error("the stream's goroutine is still running after Wait returned")
			}
			got := st.Status()
			if got.Delivered != 0 || got.Failed != 3 || !strings.Contains(got.LastError, "abandoned") {
				t.Errorf("Status = %+v, want all 3 events failed, abandoned", got)
			}
			if got := ts.metric(t, `canaryd_webhook_deliveries_total{outcome="failed"}`); got != 3 {
				t.Errorf(`deliveries_total{outcome="failed"} = %v, want 3`, got)
			}
			st.Send(measurement("a1", 2)) // after Wait gave up: ignored
			if err := st.Wait(context.Background()); err != nil {
				t.Errorf("second Wait = %v, want nil: the stream has ended", err)
			}
		})
	}
}

func TestRefusedStream(t *testing.T) {
	rc := newReceiver(t, codes(200))
	ts := newTestSender(t, []string{rc.URL() + "/ok"}, nil)
	st := ts.stream(t, "a1", rc.URL()+"/other?token=hunter2", []string{"measurement"})
	st.Send(measurement("a1", 0))
	st.Send(completed("a1"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := st.Wait(ctx); err != nil {
		t.Fatalf("Wait = %v, want nil at once", err)
	}
	got := st.Status()
	want := api.WebhookStatus{URL: rc.URL() + "/other?REDACTED", Failed: 2}
	if got.URL != want.URL || got.Failed != want.Failed || got.Delivered != 0 || !strings.Contains(got.LastError, "refused") {
		t.Errorf("Status = %+v, want %+v with a refusal", got, want)
	}
	if n := len(rc.Hits()); n != 0 {
		t.Errorf("the refused URL got %d requests", n)
	}
	if got := ts.metric(t, `canaryd_webhook_deliveries_total{outcome="refused"}`); got != 2 {
		t.Errorf(`deliveries_total{outcome="refused"} = %v, want 2`, got)
	}
}

func TestConcurrentSend(t *testing.T) {
	rc := newReceiver(t, codes(200))
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.QueueSize = 1000 })
	st := ts.stream(t, "a1", rc.URL(), []string{"measurement"})
	var wg sync.WaitGroup
	for g := range 4 {
		// Each sender ends after its 25 events.
		wg.Go(func() {
			for i := range 25 {
				st.Send(measurement("a1", g*100+i))
				_ = st.Status()
			}
		})
	}
	wg.Wait()
	st.Send(completed("a1"))
	waitFor(t, st)
	if got := st.Status(); got.Delivered != 101 {
		t.Errorf("Status = %+v, want 101 delivered", got)
	}
	seen := map[string]bool{}
	for _, h := range rc.Hits() {
		seen[h.header.Get("webhook-id")] = true
	}
	if len(seen) != 101 {
		t.Errorf("distinct webhook-ids = %d, want 101", len(seen))
	}
}

func TestCheckEvents(t *testing.T) {
	for _, tc := range []struct {
		events []string
		ok     bool
	}{
		{nil, true},
		{[]string{"completed"}, true},
		{[]string{"measurement", "completed"}, true},
		{[]string{"measurement", "finished"}, false},
		{[]string{"Completed"}, false},
	} {
		if err := CheckEvents(tc.events); (err == nil) != tc.ok {
			t.Errorf("CheckEvents(%q) = %v, want ok %v", tc.events, err, tc.ok)
		}
	}
}

// TestNothingSecretLeaks drives every failure that writes an error or a log
// line, with a password, a query token and a signing key in play, and greps
// the errors, the Status and every log line for them.
func TestNothingSecretLeaks(t *testing.T) {
	const token = "hunter2"
	secret := []byte("s3cr3t-signing-key-do-not-log")
	forbidden := []string{token, string(secret), base64.StdEncoding.EncodeToString(secret)}

	closed := newReceiver(t, nil)
	closedURL := closed.URL()
	closed.srv.Close()

	for _, tc := range []struct {
		name    string
		respond func(int, http.ResponseWriter, *http.Request)
		url     func(base string) string
		allow   func(base string) string
	}{
		{"credentials in the URL", codes(200),
			func(b string) string { return strings.Replace(b, "http://", "http://user:"+token+"@", 1) + "/hook" }, nil},
		{"token in the query, 500s", codes(500),
			func(b string) string { return b + "/hook?token=" + token }, nil},
		{"token in the query, 400", codes(400),
			func(b string) string { return b + "/hook?token=" + token }, nil},
		{"token in the query, network error", nil,
			func(string) string { return closedURL + "/hook?token=" + token },
			func(string) string { return closedURL }},
		{"token in the query, not allowed", codes(200),
			func(b string) string { return b + "/elsewhere?token=" + token },
			func(b string) string { return b + "/hook" }},
		{"token in a redirect", func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "http://evil.invalid/?token="+token)
			w.WriteHeader(http.StatusFound)
		}, func(b string) string { return b + "/hook?token=" + token }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tc.respond)
			allow := rc.URL()
			if tc.allow != nil {
				allow = tc.allow(rc.URL())
			}
			ts := newTestSender(t, []string{allow}, func(o *Options) {
				o.Secret = secret
				o.MaxElapsed = 200 * time.Millisecond
			})
			u := tc.url(rc.URL())
			var texts []string
			if err := ts.Check(u); err != nil {
				texts = append(texts, err.Error())
			}
			st := ts.stream(t, "a1", u, []string{"measurement"})
			st.Send(measurement("a1", 0))
			st.Send(completed("a1"))
			waitFor(t, st)
			status, _ := json.Marshal(st.Status())
			texts = append(texts, string(status), ts.logText())
			if st.Status().Failed == 0 || ts.logs.Len() == 0 {
				t.Fatalf("the case produced no failure to inspect: status %s, %d log lines", status, ts.logs.Len())
			}
			for _, text := range texts {
				for _, f := range forbidden {
					if strings.Contains(text, f) {
						t.Errorf("%q leaked into:\n%s", f, text)
					}
				}
			}
		})
	}
}
