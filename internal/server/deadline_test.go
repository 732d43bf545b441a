package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
)

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration // 0: refused
	}{
		{"8", 8 * time.Second},
		{"7.5", 7500 * time.Millisecond},
		{" 10 ", 10 * time.Second},
		{"8s", 8 * time.Second},
		{"1m30s", 90 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"24h", 24 * time.Hour},
		{"0", 0},
		{"0s", 0},
		{"-1", 0},
		{"-1s", 0},
		{"25h", 0},
		{"1e300", 0},
		{"NaN", 0},
		{"Inf", 0},
		{"soon", 0},
		{"", 0},
		{"8 s", 0},
	} {
		got, msg := parseTimeout(tc.in)
		if got != tc.want || (msg == "") != (tc.want != 0) {
			t.Errorf("parseTimeout(%q) = %s, %q; want %s", tc.in, got, msg, tc.want)
		}
	}
}

func TestShorter(t *testing.T) {
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, 0, 0},
		{0, time.Second, time.Second},
		{time.Second, 0, time.Second},
		{time.Second, 2 * time.Second, time.Second},
		{2 * time.Second, time.Second, time.Second},
	} {
		if got := shorter(tc.a, tc.b); got != tc.want {
			t.Errorf("shorter(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestAbsoluteURL(t *testing.T) {
	for _, tc := range []struct {
		name, host, forwarded string
		tls                   bool
		want                  string
	}{
		{"plain", "canaryd.canary.svc:8080", "", false, "http://canaryd.canary.svc:8080/v1/analyses/x"},
		{"TLS", "canaryd.example.com", "", true, "https://canaryd.example.com/v1/analyses/x"},
		{"behind a TLS proxy", "canaryd.example.com", "https", false, "https://canaryd.example.com/v1/analyses/x"},
		{"proxies listed", "canaryd.example.com", "HTTPS, http", false, "https://canaryd.example.com/v1/analyses/x"},
		{"a proto that is no scheme", "canaryd.example.com", "javascript", false, "http://canaryd.example.com/v1/analyses/x"},
		{"no host", "", "", false, "/v1/analyses/x"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/analyses", nil)
		r.Host = tc.host
		if tc.forwarded != "" {
			r.Header.Set("X-Forwarded-Proto", tc.forwarded)
		}
		if !tc.tls {
			r.TLS = nil
		} else {
			r.TLS = &tls.ConnectionState{}
		}
		if got := absoluteURL(r, "/v1/analyses/x"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestAbsoluteURLAsURLWritesIt checks that the URLs written without
// url.URL (plainURLPart) are what url.URL writes, and that those with
// characters it escapes are still written by it.
func TestAbsoluteURLAsURLWritesIt(t *testing.T) {
	for _, host := range []string{"canaryd:8080", "127.0.0.1:18080", "[::1]:8080", "Canaryd.Example.COM", "a_b.example", "a~b-c", "h%41st", "bücher.example", "host with space"} {
		for _, path := range []string{"/v1/analyses/01hzxkq3r4m5n6p7q8r9s0t1v2", "/v1/analyses/x y", "/v1/analyses/%2F", "/v1/analyses/é", "/v1/[x]", "/v1/x~y_z-1.2:3"} {
			r := httptest.NewRequest(http.MethodPost, "/v1/evaluate", nil)
			r.Host = host
			want := (&url.URL{Scheme: "http", Host: host, Path: path}).String()
			if got := absoluteURL(r, path); got != want {
				t.Errorf("host %q, path %q: %q, want %q as url.URL writes it", host, path, got, want)
			}
		}
	}
}

// TestDeadlineSource checks that a round's deadline holds for a source that
// ignores its context (watched from another goroutine) as for one bound by
// it (called directly), and that both say which deadline passed.
func TestDeadlineSource(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		<-release
		return analysis.Observation{Value: 1.0}
	})
	for name, src := range map[string]analysis.Source{"ignores its context": stuck, "bound by its context": boundSource{}} {
		ctx, cancel := new(roundDeadlines).withTimeout(context.Background(), 50*time.Millisecond)
		obs := deadlineSource{inner: src}.Measure(ctx, time.Now())
		cancel()
		if obs.Err == nil || !strings.HasPrefix(obs.Err.Error(), "deadline exceeded") || !strings.Contains(obs.Err.Error(), "50ms") {
			t.Errorf("a source that %s: %v, want deadline exceeded naming 50ms", name, obs.Err)
		}
	}
	ok := deadlineSource{inner: boundSource{}}.Measure(context.Background(), time.Now())
	if ok.Err != nil || ok.Value != 1.0 {
		t.Errorf("a source that answers in time: %+v", ok)
	}
}

// boundSource waits for its context when it has a deadline, and answers 1
// at once when it has none.
type boundSource struct{}

func (boundSource) BoundByContext() bool { return true }

func (boundSource) Measure(ctx context.Context, _ time.Time) analysis.Observation {
	if _, ok := ctx.Deadline(); !ok {
		return analysis.Observation{Value: 1.0}
	}
	<-ctx.Done()
	return analysis.Observation{Err: ctx.Err()}
}

// TestRoundsShareDeadlines checks that rounds that start close together
// share one deadline, never later than each one's timeout asks and at
// most a hundredth of it (maxDeadlineShare at most) before, and that a
// deadline no round uses and that is not the latest is stopped.
func TestRoundsShareDeadlines(t *testing.T) {
	var d roundDeadlines
	start := time.Now()
	const timeout = 8 * time.Second
	first := d.acquire(start, timeout)
	second := d.acquire(start.Add(maxDeadlineShare), timeout)
	if second != first {
		t.Errorf("a round %s after another did not share its deadline", maxDeadlineShare)
	}
	third := d.acquire(start.Add(maxDeadlineShare+time.Millisecond), timeout)
	if third == first {
		t.Errorf("a round %s after another shared its deadline, more than %s before its own", maxDeadlineShare+time.Millisecond, maxDeadlineShare)
	}
	longer := d.acquire(start, 2*timeout)
	if longer == third || !longer.at.Equal(start.Add(2*timeout)) {
		t.Errorf("a round with a longer timeout got a deadline at %s, want %s", longer.at.Sub(start), 2*timeout)
	}
	short := d.acquire(start, 100*time.Millisecond)
	if short == longer || short.at.After(start.Add(100*time.Millisecond)) {
		t.Errorf("a round of 100ms got a deadline at %s", short.at.Sub(start))
	}
	// first is no longer the latest: its timer stops with its last round.
	d.release(first)
	if first.ctx.Err() != nil {
		t.Errorf("a deadline still used by a round was stopped: %v", first.ctx.Err())
	}
	d.release(second)
	if !errors.Is(first.ctx.Err(), context.Canceled) {
		t.Errorf("a deadline no round uses, not the latest, is %v, want stopped", first.ctx.Err())
	}
	// The latest is kept, unused, for the next round.
	d.release(short)
	if short.ctx.Err() != nil {
		t.Errorf("the latest deadline was stopped: %v", short.ctx.Err())
	}
	d.release(third)
	d.release(longer)
}

// TestRoundContext checks a round's context: its deadline no later than
// its timeout asks, context.DeadlineExceeded once it passes (for contexts
// made from it too), Canceled when its request's ends, and the request's
// values.
func TestRoundContext(t *testing.T) {
	var d roundDeadlines
	type key struct{}
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "request"))
	defer cancelParent()
	before := time.Now()
	ctx, cancel := d.withTimeout(parent, 20*time.Millisecond)
	defer cancel()
	if at, ok := ctx.Deadline(); !ok || at.After(time.Now().Add(20*time.Millisecond)) || at.Before(before.Add(20*time.Millisecond-maxDeadlineShare)) {
		t.Errorf("deadline %v (set: %v), want within the round's share before 20ms", at.Sub(before), ok)
	}
	if ctx.Value(key{}) != "request" || roundTimeout(ctx) != 20*time.Millisecond {
		t.Errorf("the round's context lost the request's value (%v) or its timeout (%s)", ctx.Value(key{}), roundTimeout(ctx))
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	<-child.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("after the deadline: %v, a child's %v; want context.DeadlineExceeded", ctx.Err(), child.Err())
	}
	cancel()
	cancel() // a second call changes nothing

	gone, cancelGone := d.withTimeout(parent, time.Hour)
	defer cancelGone()
	cancelParent()
	<-gone.Done()
	if !errors.Is(gone.Err(), context.Canceled) {
		t.Errorf("after the request ended: %v, want context.Canceled", gone.Err())
	}
}

// TestRoundContextWatch checks a round's watch of its end
// (analyses.DoneWatcher): called once, on a goroutine of its own, when
// the shared deadline of the rounds using it passes, when the request
// ends, at once when set on a context done already, and when the context
// was told of its end before the watch was set; never once stopped.
func TestRoundContextWatch(t *testing.T) {
	var d roundDeadlines
	watch := func(ctx context.Context) (called chan error, f func()) {
		called = make(chan error, 2)
		return called, func() { called <- ctx.Err() }
	}

	// Three rounds on one deadline, each told as it passes.
	var rounds []chan error
	for range 3 {
		ctx, cancel := d.withTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		called, f := watch(ctx)
		ctx.(*roundContext).AfterDone(f)
		rounds = append(rounds, called)
	}
	for i, called := range rounds {
		if err := <-called; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("round %d: watched at its deadline with %v, want context.DeadlineExceeded", i, err)
		}
	}

	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := d.withTimeout(parent, time.Hour)
	defer cancel()
	called, f := watch(ctx)
	ctx.(*roundContext).AfterDone(f)
	cancelParent()
	if err := <-called; !errors.Is(err, context.Canceled) {
		t.Errorf("watched at the request's end with %v, want context.Canceled", err)
	}

	done, cancelDone := d.withTimeout(context.Background(), time.Hour)
	cancelDone()
	called, f = watch(done)
	done.(*roundContext).AfterDone(f)
	if err := <-called; !errors.Is(err, context.Canceled) {
		t.Errorf("set on a context done already: watched with %v", err)
	}

	told, cancelTold := d.withTimeout(context.Background(), time.Hour)
	told.(*roundContext).ended() // its deadline's end, before its context's
	called, f = watch(told)
	told.(*roundContext).AfterDone(f)
	cancelTold()
	if err := <-called; err == nil {
		t.Error("told of its end before the watch was set: watched before its context was done")
	}

	stopped, cancelStopped := d.withTimeout(context.Background(), time.Hour)
	called, f = watch(stopped)
	stopped.(*roundContext).AfterDone(f)
	if !stopped.(*roundContext).StopAfterDone() {
		t.Error("StopAfterDone before the end did not stop the watch")
	}
	cancelStopped()
	if stopped.(*roundContext).StopAfterDone() {
		t.Error("StopAfterDone stopped a watch twice")
	}
	for _, c := range append(rounds, called) {
		select {
		case err := <-c:
			t.Errorf("a watch called twice, or once stopped (%v)", err)
		default:
		}
	}
}
