package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// TestServeShutdownMany sends SIGTERM to the built binary while 50 analyses
// run, each with a caller waiting on it, a stream following it and a
// webhook: every one of them must get the analysis' terminal Error result,
// and the process must exit 0 within the grace period and the 5 s the HTTP
// server and the webhooks get after it.
func TestServeShutdownMany(t *testing.T) {
	const n = 50
	const grace = 2 * time.Second
	prom := promtest.Start(t)

	var mu sync.Mutex
	hooked := map[string]api.Analysis{}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev api.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err == nil && ev.Type == api.EventCompleted && ev.Analysis != nil {
			mu.Lock()
			hooked[ev.AnalysisID] = *ev.Analysis
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	cmd, base, logs, exited := startServe(t, "--prometheus-url", prom.URL, "--shutdown-grace", grace.String(),
		"--webhook-allow", receiver.URL+"/hooks", "--max-analyses", "100")

	type answer struct {
		status int
		a      api.Analysis
		err    error
	}
	waiters := make(chan answer, n)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 2 * n}}
	hook := url.QueryEscape(receiver.URL + "/hooks/shutdown")
	for range n {
		// Ends when the wait is answered: at the end of the grace.
		go func() {
			resp, err := client.Post(base+"/v1/analyses?wait=true&webhook="+hook, "application/yaml", strings.NewReader(foreverSpec()))
			if err != nil {
				waiters <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			var a api.Analysis
			err = json.NewDecoder(resp.Body).Decode(&a)
			waiters <- answer{status: resp.StatusCode, a: a, err: err}
		}()
	}
	var running []api.Analysis
	deadline := time.Now().Add(20 * time.Second)
	for len(running) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d analyses running:\n%s", len(running), n, logs.text())
		}
		time.Sleep(50 * time.Millisecond)
		resp, err := client.Get(base + "/v1/analyses?phase=Running")
		if err != nil {
			t.Fatal(err)
		}
		var list server.AnalysisList
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		running = list.Analyses
	}

	// A stream on every one; each reports the last event it read.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := make(chan api.Event, n)
	var opened sync.WaitGroup
	for _, a := range running {
		opened.Add(1)
		// Ends when the stream ends: after the completed event, or when
		// ctx is cancelled at the end of the test.
		go func(id string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/analyses/"+id, nil)
			req.Header.Set("Accept", "application/x-ndjson")
			resp, err := client.Do(req)
			opened.Done()
			if err != nil {
				streams <- api.Event{AnalysisID: id}
				return
			}
			defer resp.Body.Close()
			var last api.Event
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var ev api.Event
				if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type != "heartbeat" {
					last = ev
				}
			}
			last.AnalysisID = id
			streams <- last
		}(a.ID)
	}
	opened.Wait()

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	for range n {
		got := <-waiters
		if got.err != nil || got.status != http.StatusOK || got.a.Phase != api.PhaseError || got.a.Message != analyses.ShutdownMessage {
			t.Errorf("a waiter got %d %s %q (%v), want 200 Error %q", got.status, got.a.Phase, got.a.Message, got.err, analyses.ShutdownMessage)
		}
	}
	if waited := time.Since(signalled); waited < grace-100*time.Millisecond {
		t.Errorf("the analyses were stopped %s after SIGTERM, before their grace of %s", waited, grace)
	}
	for range n {
		last := <-streams
		if last.Type != api.EventCompleted || last.Analysis == nil || last.Analysis.Phase != api.PhaseError || last.Analysis.Message != analyses.ShutdownMessage {
			t.Errorf("the stream of %s ended with %+v, want the completed Error analysis", last.AnalysisID, last)
		}
	}
	select {
	case code := <-exited:
		took := time.Since(signalled)
		if code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
		if took > grace+5*time.Second {
			t.Errorf("the process took %s to exit, want at most the grace (%s) and 5 s", took, grace)
		}
		t.Logf("exited %s after SIGTERM (grace %s)", took.Round(time.Millisecond), grace)
	case <-time.After(grace + 15*time.Second):
		t.Fatalf("the process did not exit after SIGTERM:\n%s", logs.text())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range running {
		got, ok := hooked[a.ID]
		if !ok || got.Phase != api.PhaseError || got.Message != analyses.ShutdownMessage {
			t.Errorf("the webhook of %s got %+v (%v), want its completed Error analysis before the process exited", a.ID, got.Phase, ok)
		}
	}
}
