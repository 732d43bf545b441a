package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// TestServeEndToEnd builds the binary, serves a request with it against a
// real Prometheus, and sends SIGTERM while an analysis runs: the waiter must
// get the terminal Error result once the grace period is over, and the
// process must exit 0 soon after.
func TestServeEndToEnd(t *testing.T) {
	prom := promtest.Start(t)

	const grace = time.Second
	cmd, base, logs, exited := startServe(t, "--prometheus-url", prom.URL, "--shutdown-grace", grace.String())

	// A request served to its end.
	if status, a := postAnalysis(t, base, "?wait=true&arg.namespace=echo-good", seedSpec(t)); status != http.StatusOK || a.Phase != api.PhaseSuccessful {
		t.Fatalf("echo-good: %d %s (%s), want 200 Successful", status, a.Phase, a.Message)
	}

	// SIGHUP without --templates: nothing to reload, and not the default
	// action of the signal, which would end the process.
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, `"msg":"SIGHUP received; there is nothing to reload without --templates"`)
	if status := getStatus(t, base+"/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz after SIGHUP: %d, want 200", status)
	}

	// An analysis that would run for ever, with a caller waiting on it.
	type answer struct {
		status int
		a      api.Analysis
	}
	waiter := make(chan answer, 1)
	// Ends when the wait is answered: at the latest when the grace ends.
	go func() {
		status, a, err := tryPostAnalysis(base, "?wait=true", foreverSpec())
		if err != nil {
			t.Error(err)
		}
		waiter <- answer{status, a}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list server.AnalysisList
		resp, err := http.Get(base + "/v1/analyses?phase=Running")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
		}
		if len(list.Analyses) == 1 && list.Analyses[0].MetricResults[0].Count > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the analysis did not start measuring:\n%s", logs.text())
		}
		time.Sleep(20 * time.Millisecond)
	}

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Draining: not ready, nothing new; the running analysis goes on.
	waitForStatus(t, base+"/readyz", http.StatusServiceUnavailable)
	if status, _ := postAnalysis(t, base, "", foreverSpec()); status != http.StatusServiceUnavailable {
		t.Errorf("a new analysis while draining: %d, want 503", status)
	}

	select {
	case got := <-waiter:
		if got.status != http.StatusOK || got.a.Phase != api.PhaseError || got.a.Message != analyses.ShutdownMessage {
			t.Errorf("the waiter got %d, phase %s, message %q; want 200, Error, %q", got.status, got.a.Phase, got.a.Message, analyses.ShutdownMessage)
		}
		if waited := time.Since(signalled); waited < grace-100*time.Millisecond {
			t.Errorf("the analysis was stopped %s after SIGTERM, before its grace of %s", waited, grace)
		}
	case <-time.After(grace + 10*time.Second):
		t.Fatalf("the waiter got no answer:\n%s", logs.text())
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d, want 0:\n%s", code, logs.text())
		}
		if took := time.Since(signalled); took > grace+5*time.Second {
			t.Errorf("the process took %s to exit after SIGTERM with a grace of %s", took, grace)
		}
	case <-time.After(grace + 10*time.Second):
		t.Fatalf("the process did not exit after SIGTERM:\n%s", logs.text())
	}
	text := logs.text()
	for _, want := range []string{`"msg":"analysis aborted: the shutdown grace period ran out","analysis_id":"`, `"msg":"stopped"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %s:\n%s", want, text)
		}
	}
}

// waitForStatus polls url until it answers status.
func waitForStatus(t *testing.T, url string, status int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for getStatus(t, url) != status {
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d", url, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
