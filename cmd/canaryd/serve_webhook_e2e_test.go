package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/analyses/" + running.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got api.Analysis
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if got.MetricResults[0].Count > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the analysis did not start measuring:\n%s", logs.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := rc.completed(running.ID, logs); got.Phase != api.PhaseError || got.Message != server.ShutdownMessage {
		t.Errorf("the webhook got %s %q, want Error %q", got.Phase, got.Message, server.ShutdownMessage)
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
