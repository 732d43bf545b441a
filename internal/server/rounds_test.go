package server_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
)

// stuckSource is a source whose measurements do not return, whatever
// their context says, until the test releases them: the stand-in for a
// measurement or condition that does not honour its deadline. With
// claimBound it also claims to (analysis.ContextBound), so that nothing
// watches it from another goroutine.
type stuckSource struct {
	claimBound bool
	entered    chan struct{}
	release    chan struct{}
	once       sync.Once
}

// newStuckSource returns a stuck source; the test frees it with a cleanup
// registered after start's, so that it runs before them.
func newStuckSource(claimBound bool) *stuckSource {
	return &stuckSource{claimBound: claimBound, entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (s *stuckSource) free() { s.once.Do(func() { close(s.release) }) }

func (s *stuckSource) Measure(context.Context, time.Time) analysis.Observation {
	s.entered <- struct{}{}
	<-s.release
	return analysis.Observation{Value: []float64{1}, Display: "[1]"}
}

func (s *stuckSource) BoundByContext() bool { return s.claimBound }

func (s *stuckSource) sources(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return s, nil, nil
}

// within fails the test unless f returns within d: the bounds tested here
// are seconds, so d is generous.
func within[T any](t *testing.T, what string, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s: no answer within %s", what, d)
		panic("unreachable")
	}
}

// TestRoundLimit checks that rounds and gates beyond --max-rounds get a
// 429 naming the flag, on every endpoint that answers one, and that a slot
// is free again once its round has stopped.
func TestRoundLimit(t *testing.T) {
	// Claiming to honour its context, it is measured on the engine's own
	// goroutine: a round of it is answered at its deadline, and its work
	// goes on until the test frees it.
	stuck := newStuckSource(true)
	s := start(t, options{sources: stuck.sources, maxRounds: 2, templates: templatesDir(t, nil)})
	t.Cleanup(stuck.free)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Answered at its deadline, an Error round.
			if resp, err := s.send(http.MethodPost, "/v1/evaluate?timeout=1s", jsonType, once("echo-good")); err != nil || resp.status != http.StatusServiceUnavailable {
				t.Errorf("a round of a stuck source: %v, status %d; want 503", err, resp.status)
			}
		}()
	}
	<-stuck.entered
	<-stuck.entered
	for _, tc := range []struct{ path, contentType, body string }{
		{"/v1/evaluate", jsonType, once("echo-good")},
		{"/v1/templates/success-rate/evaluate?arg.namespace=echo", "", ""},
		{"/v1/gates", jsonType, once("echo-good")},
		{"/v1/gates/success-rate?arg.namespace=echo", "", ""},
	} {
		resp := s.do(http.MethodPost, tc.path, tc.contentType, tc.body)
		if resp.status != http.StatusTooManyRequests || resp.header.Get("Retry-After") == "" {
			t.Errorf("%s with 2 rounds under way and --max-rounds 2: status %d, Retry-After %q; want 429 with Retry-After", tc.path, resp.status, resp.header.Get("Retry-After"))
			continue
		}
		if p := resp.problem(t); p.Type != server.ProblemTooManyAnalyses || !strings.Contains(p.Detail, "--max-rounds") {
			t.Errorf("%s: problem %+v, want too-many-analyses naming --max-rounds", tc.path, p)
		}
	}
	wg.Wait()
	// The rounds were answered, but their measurements have not
	// returned: their work still holds the slots.
	if resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, once("echo-good")); resp.status != http.StatusTooManyRequests {
		t.Errorf("a round while the work of two answered rounds is stuck: status %d, want 429", resp.status)
	}
	stuck.free()
	waitFor(t, "a round to be taken again", func() bool {
		return s.do(http.MethodPost, "/v1/evaluate", jsonType, once("echo-good")).status == http.StatusOK
	})
}

// TestRoundAnswersByItsDeadline checks that a round is answered by its
// deadline even when a measurement does not return and claims to honour
// its context (so that nothing but the server's own bound stops the wait).
func TestRoundAnswersByItsDeadline(t *testing.T) {
	stuck := newStuckSource(true)
	s := start(t, options{sources: stuck.sources})
	t.Cleanup(stuck.free)
	resp := within(t, "a round with ?timeout=300ms", 5*time.Second, func() response {
		return s.do(http.MethodPost, "/v1/evaluate?timeout=300ms", jsonType, once("echo-good"))
	})
	if resp.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", resp.status, resp.body)
	}
	a := resp.analysis(t)
	if ms := a.MetricResults[0].Measurements[0]; a.Phase != api.PhaseError || ms.Phase != api.PhaseError || !strings.HasPrefix(ms.Message, "deadline exceeded") {
		t.Errorf("round %s, measurement %s %q; want Error, deadline exceeded", a.Phase, ms.Phase, ms.Message)
	}
	// Answered while the handler waits for the measurement: whole, and
	// on a connection that no next request waits on.
	if resp.header.Get("Content-Length") != strconv.Itoa(len(resp.body)) {
		t.Errorf("Content-Length %q for %d bytes; want the length", resp.header.Get("Content-Length"), len(resp.body))
	}
	raw := within(t, "another round with ?timeout=300ms", 5*time.Second, func() *http.Response {
		resp, err := http.Post(s.url+"/v1/evaluate?timeout=300ms", jsonType, strings.NewReader(once("echo-good")))
		if err != nil {
			t.Error(err)
			return &http.Response{}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	})
	if raw.StatusCode != http.StatusServiceUnavailable || !raw.Close {
		t.Errorf("status %d, connection closed after it: %t; want 503, closed", raw.StatusCode, raw.Close)
	}
}

// TestStopsKeepTheirBounds checks that DELETE, a gate's deadline and the
// shutdown answer within their bounds while a measurement does not return.
func TestStopsKeepTheirBounds(t *testing.T) {
	t.Run("DELETE", func(t *testing.T) {
		stuck := newStuckSource(false)
		s := start(t, options{sources: stuck.sources})
		t.Cleanup(stuck.free)
		a := s.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good")).analysis(t)
		<-stuck.entered
		resp := within(t, "DELETE", 10*time.Second, func() response {
			return s.do(http.MethodDelete, "/v1/analyses/"+a.ID, "", "")
		})
		if resp.status != http.StatusAccepted {
			t.Fatalf("DELETE of an analysis whose measurement does not return: status %d, want 202: %s", resp.status, resp.body)
		}
		if got := resp.analysis(t); got.Phase != api.PhaseRunning {
			t.Errorf("the analysis as it stands: phase %s, want Running", got.Phase)
		}
		stuck.free()
		final := s.waitFinished(a.ID)
		if final.Message != "Run Terminated" {
			t.Errorf("the analysis ended %s %q, want Run Terminated", final.Phase, final.Message)
		}
		if resp := s.do(http.MethodDelete, "/v1/analyses/"+a.ID, "", ""); resp.status != http.StatusOK {
			t.Errorf("DELETE once it has stopped: status %d, want 200", resp.status)
		}
	})

	t.Run("a gate's deadline", func(t *testing.T) {
		stuck := newStuckSource(false)
		s := start(t, options{sources: stuck.sources})
		t.Cleanup(stuck.free)
		resp := within(t, "a gate with ?timeout=200ms", 10*time.Second, func() response {
			return s.do(http.MethodPost, "/v1/gates?timeout=200ms", jsonType, once("echo-good"))
		})
		if resp.status != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503: %s", resp.status, resp.body)
		}
		if a := resp.analysis(t); a.Phase != api.PhaseError || !strings.HasPrefix(a.Message, "gate timed out") {
			t.Errorf("gate answered %s %q, want Error, gate timed out", a.Phase, a.Message)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		stuck := newStuckSource(false)
		s := start(t, options{sources: stuck.sources})
		t.Cleanup(stuck.free)
		s.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good"))
		<-stuck.entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the grace has run out
		within(t, "Drain", 10*time.Second, func() int { return s.analyses.Drain(ctx) })
		if n := len(s.logs.FilterMessage("analysis left running at shutdown: it did not stop within 3s of being aborted").All()); n != 1 {
			t.Errorf("%d log lines about the analysis left running, want 1", n)
		}
	})
}

// TestRoundIsOneLogLine checks that a round writes one log line, its
// request's, and that the line tells what the service's own line of the
// round told: its id, phase, message, series and whether it was kept.
func TestRoundIsOneLogLine(t *testing.T) {
	failing := func(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Value: []float64{0.5}, Display: "[0.5]"}
		}), nil, nil
	}
	s := start(t, options{sources: failing})
	resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, once("echo-good"))
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	// Sent before the line is written (writeRoundNow): whole, its length
	// given, not chunked.
	if resp.header.Get("Content-Length") != strconv.Itoa(len(resp.body)) {
		t.Errorf("Content-Length %q for %d bytes; want the length", resp.header.Get("Content-Length"), len(resp.body))
	}
	a := resp.analysis(t)
	if a.Phase != api.PhaseFailed || a.Message == "" || resp.header.Get("Location") == "" {
		t.Fatalf("round %s %q, Location %q; want a Failed round with its message, kept", a.Phase, a.Message, resp.header.Get("Location"))
	}
	// The answer is sent before the request's line is written: wait for
	// the line.
	var about []map[string]any
	waitFor(t, "the round's request line", func() bool {
		about = nil
		for _, e := range s.logs.All() {
			if fields := e.ContextMap(); fields["analysis_id"] == a.ID {
				fields["msg"] = e.Message
				about = append(about, fields)
			}
		}
		for _, line := range about {
			if line["msg"] == "request" {
				return true
			}
		}
		return false
	})
	if len(about) != 1 {
		t.Fatalf("%d log lines about the round, want one: %v", len(about), about)
	}
	line := about[0]
	want := map[string]any{"msg": "request", "route": "/v1/evaluate", "status": int64(http.StatusOK),
		"phase": string(api.PhaseFailed), "message": a.Message, "series": a.Series, "kept": true}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("the round's line has %s %v (%T), want %v: %v", k, line[k], line[k], v, line)
		}
	}
	if a.Series == "" {
		t.Errorf("the round names no series, so the line's is not checked: %+v", a)
	}
}
