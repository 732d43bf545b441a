package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/promtest"
)

// hookReceiver is a webhook receiver on loopback that keeps the events it
// gets after checking their signatures with key, as a receiver would.
type hookReceiver struct {
	t   *testing.T
	key []byte
	srv *httptest.Server

	mu     sync.Mutex
	events []api.Event
}

func newHookReceiver(t *testing.T, key []byte) *hookReceiver {
	rc := &hookReceiver{t: t, key: key}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute || !hmac.Equal([]byte(r.Header.Get("webhook-signature")), []byte(want)) {
			t.Errorf("a delivery (webhook-id %q) whose signature does not verify", id)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev api.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("a delivery that is not an event: %s", body)
		}
		rc.mu.Lock()
		rc.events = append(rc.events, ev)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// completed waits for the completed event of the analysis id.
func (rc *hookReceiver) completed(id string, logs *serveLogs) api.Analysis {
	rc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		rc.mu.Lock()
		for _, ev := range rc.events {
			if ev.AnalysisID == id && ev.Type == api.EventCompleted && ev.Analysis != nil {
				rc.mu.Unlock()
				return *ev.Analysis
			}
		}
		rc.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	rc.t.Fatalf("no completed event of %s reached the webhook:\n%s", id, logs.text())
	return api.Analysis{}
}

// TestServeWebhookEndToEnd runs the built binary with --webhook-allow and
// a Standard Webhooks secret file: an analysis' result reaches a receiver
// on loopback, signed, and on SIGTERM an analysis cut short by the grace
// period delivers its Error result before the process exits.
func TestServeWebhookEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	prom := promtest.Start(t)
	key := []byte("an end-to-end key\x00\xff of raw bytes")
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, []byte("whsec_"+base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc := newHookReceiver(t, key)
	hook := rc.srv.URL + "/hooks"

	const grace = 500 * time.Millisecond
	cmd, base, logs, exited := startServe(t, "--prometheus-url", prom.URL, "--webhook-allow", hook,
		"--webhook-secret-file", secretFile, "--shutdown-grace", grace.String(), "--webhook-max-elapsed", "10s")

	status, a := postAnalysis(t, base, "?arg.namespace=echo-good&webhook="+url.QueryEscape(hook+"/deploy?token=t0ken"), seedSpec(t))
	if status != http.StatusAccepted || a.Webhook == nil || a.Webhook.URL != hook+"/deploy?REDACTED" {
		t.Fatalf("POST with a webhook: %d, webhook %+v; want 202 with the webhook's redacted URL", status, a.Webhook)
	}
	if got := rc.completed(a.ID, logs); got.Phase != api.PhaseSuccessful || got.MetricResults[0].Count != 3 {
		t.Errorf("the webhook got %s after %d measurements, want Successful after 3", got.Phase, got.MetricResults[0].Count)
	}

	if status, _ := postAnalysis(t, base, "?webhook="+url.QueryEscape("http://127.0.0.1:9/hooks"), foreverSpec()); status != http.StatusBadRequest {
		t.Errorf("a webhook outside --webhook-allow: %d, want 400", status)
	}

	// An analysis that would run for ever, with nobody waiting on it but
	// its webhook.
	status, running := postAnalysis(t, base, "?webhook="+url.QueryEscape(hook), foreverSpec())
	if status != http.StatusAccepted {
		t.Fatalf("the analysis to be cut short: %d", status)
	}
	if _, ok := waitAnalysis(t, base, running.ID, 10*time.Second, func(a api.Analysis) bool {
		return len(a.MetricResults) > 0 && a.MetricResults[0].Count > 0
	}); !ok {
		t.Fatalf("the analysis did not start measuring:\n%s", logs.text())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := rc.completed(running.ID, logs); got.Phase != api.PhaseError || got.Message != analyses.ShutdownMessage {
		t.Errorf("the webhook got %s %q, want Error %q", got.Phase, got.Message, analyses.ShutdownMessage)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d, want 0:\n%s", code, logs.text())
		}
	case <-time.After(grace + 15*time.Second):
		t.Fatalf("the process did not exit after SIGTERM:\n%s", logs.text())
	}
	text := logs.text()
	for _, secret := range []string{"t0ken", "whsec_", base64.StdEncoding.EncodeToString(key), string(key)} {
		if strings.Contains(text, secret) {
			t.Errorf("the log shows %q:\n%s", secret, text)
		}
	}
	for _, want := range []string{`"webhook_signed":true`, `"msg":"analysis started"`, `"webhook":"` + hook + `/deploy?REDACTED"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %s:\n%s", want, text)
		}
	}
}

// TestServeWebhookBadSecret checks that a secret file that holds no key
// stops serve before it starts, exit 64, with the problem and not the
// file's content.
func TestServeWebhookBadSecret(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"empty", "\n", "the secret is empty"},
		{"bad whsec_", "whsec_%%SECRET%%", "not valid base64"},
	} {
		file := filepath.Join(dir, tc.name)
		if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--webhook-secret-file", file},
			func(string) string { return "" }, nil, io.Discard, &stderr)
		if code != exitUsage {
			t.Errorf("%s: exit code %d, want %d", tc.name, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), "--webhook-secret-file") || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr does not say what is wrong (%q):\n%s", tc.name, tc.want, stderr.String())
		}
		if strings.Contains(stderr.String(), "SECRET") {
			t.Errorf("%s: stderr shows the file's content:\n%s", tc.name, stderr.String())
		}
	}
	var stderr strings.Builder
	code := run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--webhook-allow", "https://hooks.example.com/ci?token=x"},
		func(string) string { return "" }, nil, io.Discard, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--webhook-allow") {
		t.Errorf("an allow prefix with a query: exit code %d, want %d naming --webhook-allow:\n%s", code, exitUsage, stderr.String())
	}
}

// writeWebhookKey writes a raw key to a --webhook-secret-file.
// answering starts a server on loopback that answers every request with
// status, and counts them. It is closed at the end of the test.
func answering(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func writeWebhookKey(t *testing.T, key []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(file, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestServeWebhookBacklog runs the binary with --max-webhook-backlog 2 and
// a receiver that answers 503: a third analysis with a webhook gets a 429
// naming the webhook and the flag while two are owed, one without a
// webhook still starts, and an analysis whose completed event is being
// retried shows the event, its attempts and the receiver's answer in its
// webhook field.
func TestServeWebhookBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	prom := promtest.Start(t)
	rc, hits := answering(t, http.StatusServiceUnavailable)
	hook := rc.URL + "/hooks"
	_, base, logs, _ := startServe(t, "--prometheus-url", prom.URL, "--webhook-allow", hook,
		"--max-webhook-backlog", "2", "--webhook-max-elapsed", "1m")

	var owed []api.Analysis
	for i := range 2 {
		status, a := postAnalysis(t, base, "?webhook="+url.QueryEscape(hook), foreverSpec())
		if status != http.StatusAccepted {
			t.Fatalf("analysis %d with a webhook: %d, want 202:\n%s", i, status, logs.text())
		}
		owed = append(owed, a)
	}
	resp, err := http.Post(base+"/v1/analyses?webhook="+url.QueryEscape(hook), "application/yaml", strings.NewReader(foreverSpec()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var p api.Problem
	_ = json.Unmarshal(body, &p)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(p.Errors) != 1 ||
		p.Errors[0].Field != "webhook" || !strings.Contains(p.Errors[0].Message, "--max-webhook-backlog") || !strings.Contains(p.Detail, "--max-webhook-backlog") {
		t.Errorf("a third analysis with a webhook: %d %s; want 429 naming the webhook and --max-webhook-backlog", resp.StatusCode, body)
	}
	if status, _ := postAnalysis(t, base, "", foreverSpec()); status != http.StatusAccepted {
		t.Errorf("an analysis without a webhook: %d, want 202", status)
	}

	// Terminated, the first analysis owes its completed event, which the
	// receiver refuses with 503: the webhook field shows it being retried.
	req, _ := http.NewRequest(http.MethodDelete, base+"/v1/analyses/"+owed[0].ID, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	a, ok := waitAnalysis(t, base, owed[0].ID, 15*time.Second, func(a api.Analysis) bool {
		return a.Webhook != nil && a.Webhook.Retrying != nil && a.Webhook.Retrying.Attempts >= 2
	})
	if !ok {
		t.Fatalf("the webhook field never showed the retries (%d attempts at the receiver): %+v\n%s", hits.Load(), a.Webhook, logs.text())
	}
	if w := a.Webhook; w.Pending != 1 || w.Retrying.WebhookID != a.ID+".1" || w.Retrying.LastError != "the receiver answered 503 Service Unavailable" ||
		w.Retrying.NextAttemptAt.IsZero() || w.Failed != 0 {
		t.Errorf("webhook %+v, retrying %+v; want the completed event pending, retried after 503", w, w.Retrying)
	}
}

// TestServeWebhookIgnoresProxy runs the binary with HTTP_PROXY,
// HTTPS_PROXY and ALL_PROXY pointing at a proxy that must see nothing:
// deliveries go straight to their receivers. The receiver is named
// "localhost." (allowed as "localhost"), which net/http's environment
// proxy would take if canaryd did not name the host as its allow list
// does. (The environment proxy spares loopback addresses and "localhost",
// and tests contact nothing but loopback, so the transport's own Proxy is
// checked in internal/webhook's TestIgnoresProxyVariables.)
func TestServeWebhookIgnoresProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	prom := promtest.Start(t)
	proxy, proxied := answering(t, http.StatusBadGateway)
	key := []byte("a key for the proxy test")

	type destination struct {
		rc    *hookReceiver
		allow string // the --webhook-allow prefix
		hook  string // the webhook URL asked for
	}
	local := newHookReceiver(t, key)
	_, port, _ := net.SplitHostPort(local.srv.Listener.Addr().String())
	dests := []destination{{local, "http://localhost:" + port + "/hooks", "http://localhost.:" + port + "/hooks"}}

	var env []string
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, v+"="+proxy.URL)
	}
	env = append(env, "NO_PROXY=", "no_proxy=")
	args := []string{"serve", "--listen", "127.0.0.1:0", "--prometheus-url", prom.URL, "--webhook-secret-file", writeWebhookKey(t, key)}
	for _, d := range dests {
		args = append(args, "--webhook-allow", d.allow)
	}
	_, logs, exited := startProcess(t, args, env...)
	base := "http://" + logs.waitAddress(t, exited)

	for _, d := range dests {
		status, a := postAnalysis(t, base, "?arg.namespace=echo-good&webhook="+url.QueryEscape(d.hook), seedSpec(t))
		if status != http.StatusAccepted {
			t.Fatalf("POST with the webhook %s: %d, want 202:\n%s", d.hook, status, logs.text())
		}
		if got := d.rc.completed(a.ID, logs); got.Phase != api.PhaseSuccessful {
			t.Errorf("the webhook %s got %s, want Successful", d.hook, got.Phase)
		}
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy got %d requests, want none:\n%s", n, logs.text())
	}
}
