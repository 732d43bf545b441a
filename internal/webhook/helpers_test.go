package webhook

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/canaryd/canaryd/api"
)

// hit is one request a receiver got.
type hit struct {
	at     time.Time
	header http.Header
	body   []byte
	path   string
	query  string
}

// receiver is a real webhook receiver on loopback that records what it
// gets and answers as respond says (n counts its requests from 0).
type receiver struct {
	srv     *httptest.Server
	respond func(n int, w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	hits []hit
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.hits)
		rc.hits = append(rc.hits, hit{at: at, header: r.Header.Clone(), body: body, path: r.URL.Path, query: r.URL.RawQuery})
		rc.mu.Unlock()
		if rc.respond != nil {
			rc.respond(n, w, r)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// codes answers the n-th request with codes[n], and later ones with the last.
func codes(cs ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(cs[min(n, len(cs)-1)])
	}
}

func (rc *receiver) URL() string { return rc.srv.URL }

func (rc *receiver) Hits() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// testSender is a Sender with small backoffs, its own registry and
// observed logs.
type testSender struct {
	*Sender
	reg  *prometheus.Registry
	logs *observer.ObservedLogs
}

func newTestSender(t *testing.T, allow []string, mod func(*Options)) *testSender {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	o := Options{
		Allow:          allow,
		MaxElapsed:     3 * time.Second,
		InitialBackoff: 5 * time.Millisecond,
		MaxBackoff:     20 * time.Millisecond,
		AttemptTimeout: 2 * time.Second,
		Logger:         zap.New(core),
		Registerer:     reg,
	}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testSender{Sender: s, reg: reg, logs: logs}
}

// stream is Stream, failing the test if it cannot be had.
func (ts *testSender) stream(t *testing.T, analysisID, rawURL string, events []string) *Stream {
	t.Helper()
	st, err := ts.Stream(analysisID, rawURL, events)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return st
}

// metric returns the value of the sample named by its text-format name and
// labels, e.g. `canaryd_webhook_deliveries_total{outcome="delivered"}`; 0
// when absent.
func (ts *testSender) metric(t *testing.T, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(ts.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return v
		}
	}
	return 0
}

// logText renders every observed log line, fields and all, for grepping.
func (ts *testSender) logText() string {
	var b strings.Builder
	for _, e := range ts.logs.All() {
		fmt.Fprintf(&b, "%s %s %v\n", e.Level, e.Message, e.ContextMap())
	}
	return b.String()
}

// waitFor waits for st to finish, failing the test after a generous bound.
func waitFor(t *testing.T, st *Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := st.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func measurement(id string, n int) api.Event {
	return api.Event{
		Type: api.EventMeasurement, AnalysisID: id, Metric: "success-rate",
		Measurement: &api.Measurement{Phase: api.PhaseSuccessful, Value: strconv.Itoa(n)},
		MetricPhase: api.PhaseRunning,
	}
}

func completed(id string) api.Event {
	return api.Event{Type: api.EventCompleted, AnalysisID: id, Analysis: &api.Analysis{
		ID: id, Phase: api.PhaseSuccessful, MetricResults: []api.MetricResult{{Name: "success-rate", Phase: api.PhaseSuccessful}},
	}}
}

func decodeEvent(t *testing.T, h hit) api.Event {
	t.Helper()
	var ev api.Event
	if err := json.Unmarshal(h.body, &ev); err != nil {
		t.Fatalf("body is not an event: %v: %s", err, h.body)
	}
	return ev
}

// verify is how a receiver checks a delivery, docs/webhooks.md's snippet: secret
// is what the operator put in --webhook-secret-file, in either form.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	secret = strings.TrimRight(secret, "\r\n")
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		var err error
		if key, err = base64.StdEncoding.DecodeString(rest); err != nil {
			return err
		}
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("bad webhook-timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("webhook-timestamp too far from now (replay?)")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no valid signature")
}
