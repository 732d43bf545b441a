package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound/outboundtest"
)

// connCounter wraps a Sender's dialler to count the connections it has
// open, and the most it had at once, and to record the addresses dialled.
type connCounter struct {
	open, peak atomic.Int64

	mu     sync.Mutex
	dialed []string
}

func (c *connCounter) wrap(s *Sender) {
	next := s.dial
	s.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		c.dialed = append(c.dialed, addr)
		c.mu.Unlock()
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		n := c.open.Add(1)
		for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
		}
		return &countedConn{Conn: conn, c: c}, nil
	}
}

func (c *connCounter) addresses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.dialed...)
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}

// TestBacklogBound tries to open one stream more than MaxBacklog: it is
// refused with ErrBacklogFull, a refused URL is not counted, and a stream
// that ends makes room for another.
func TestBacklogBound(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	const max = 3
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) { o.MaxBacklog = max })
	var streams []*Stream
	for i := range max {
		st := ts.stream(t, "a"+string(rune('0'+i)), rc.URL(), nil)
		st.Send(completed("a"))
		streams = append(streams, st)
	}
	if got := ts.metric(t, "canaryd_webhook_backlog"); got != max {
		t.Errorf("canaryd_webhook_backlog = %v, want %d", got, max)
	}
	st, err := ts.Stream("over", rc.URL(), nil)
	if st != nil || !errors.Is(err, ErrBacklogFull) || !strings.Contains(err.Error(), "--max-webhook-backlog") || !strings.Contains(err.Error(), "3") {
		t.Fatalf("Stream beyond the backlog = %v, %v; want ErrBacklogFull naming --max-webhook-backlog and its value", st, err)
	}
	if st := ts.stream(t, "refused", "http://169.254.169.254/", nil); st.Status().Failed != 0 {
		t.Errorf("a refused URL's stream: %+v", st.Status())
	}

	// One stream ends (abandoned, as at shutdown): room for one more.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = streams[0].Wait(ctx)
	st, err = ts.Stream("next", rc.URL(), nil)
	if err != nil {
		t.Fatalf("Stream after one ended: %v", err)
	}
	streams = append(streams[1:], st)
	if _, err := ts.Stream("over again", rc.URL(), nil); !errors.Is(err, ErrBacklogFull) {
		t.Errorf("Stream beyond the backlog again = %v, want ErrBacklogFull", err)
	}
	for _, st := range streams {
		st.Close()
		_ = st.Wait(ctx)
	}
	if got := ts.metric(t, "canaryd_webhook_backlog"); got != 0 {
		t.Errorf("canaryd_webhook_backlog = %v after every stream ended, want 0", got)
	}
}

// TestHangingReceiverIsBounded sends the completed events of as many
// analyses as the backlog allows to a receiver that never answers, as
// 2,000 analyses once did: the goroutines stay about one per stream, the
// connections within MaxConnsPerHost, the circuit opens and the waiting
// events say why; once the receiver answers, every event is delivered.
func TestHangingReceiverIsBounded(t *testing.T) {
	var hanging atomic.Bool
	hanging.Store(true)
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if !hanging.Load() {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	const (
		streams = 60
		conns   = 4
	)
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) {
		o.MaxBacklog = streams
		o.MaxConnsPerHost = conns
		o.AttemptTimeout = 300 * time.Millisecond
		o.MaxElapsed = 20 * time.Second
		o.BreakerFailures = 8
		o.BreakerCooldown = 400 * time.Millisecond
	})
	var cc connCounter
	cc.wrap(ts.Sender)
	base := runtime.NumGoroutine()

	var all []*Stream
	for i := range streams {
		id := "a" + string(rune('A'+i%26)) + string(rune('0'+i/26))
		st := ts.stream(t, id, rc.URL()+"/hook", nil)
		st.Send(completed(id))
		all = append(all, st)
	}
	if _, err := ts.Stream("one too many", rc.URL()+"/hook", nil); !errors.Is(err, ErrBacklogFull) {
		t.Errorf("stream %d: %v, want ErrBacklogFull", streams+1, err)
	}

	// Each stream has one goroutine; each connection a few (the client's
	// read and write loops, the in-process receiver's own). Without the
	// bounds every stream would hold a connection and its goroutines.
	bound := base + streams + 8*conns + 10
	peakGoroutines := 0
	deadline := time.Now().Add(15 * time.Second)
	var paused api.WebhookStatus
	for ts.metric(t, "canaryd_webhook_circuit_opens_total") < 1 || paused.Retrying == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the circuit did not open, or no stream shows it: %+v", all[0].Status())
		}
		peakGoroutines = max(peakGoroutines, runtime.NumGoroutine())
		for _, st := range all {
			if s := st.Status(); s.Retrying != nil && strings.Contains(s.Retrying.LastError, "circuit breaker") {
				paused = s
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if peakGoroutines > bound {
		t.Errorf("%d goroutines at the peak, want at most %d (%d before the streams)", peakGoroutines, bound, base)
	}
	if p := cc.peak.Load(); p > 2*conns {
		// net/http counts a connection out just before it closes it, so
		// a new one may be dialled an instant before the old one is
		// closed; twice the cap allows for that, and is far below one
		// per stream.
		t.Errorf("%d connections at once to the receiver, want at most about %d (MaxConnsPerHost)", p, conns)
	}
	r := paused.Retrying
	if paused.Pending != 1 || r.WebhookID == "" || !strings.Contains(r.LastError, "paused") || r.NextAttemptAt.IsZero() ||
		strings.Contains(r.LastError, "?") {
		t.Errorf("a waiting stream's status = %+v, retrying %+v; want its event pending, paused by the circuit breaker", paused, r)
	}

	hanging.Store(false)
	close(release)
	for _, st := range all {
		st.Close()
		waitFor(t, st)
		if s := st.Status(); s.Delivered != 1 || s.Pending != 0 || s.Retrying != nil {
			t.Errorf("after the receiver answered: %+v, want delivered, nothing pending", s)
		}
	}
	if got := ts.metric(t, "canaryd_webhook_backlog"); got != 0 {
		t.Errorf("canaryd_webhook_backlog = %v, want 0", got)
	}
}

// TestBreaker opens a destination's circuit after BreakerFailures failed
// attempts in a row: meanwhile no attempt reaches it, a new event waits,
// and the status says why; after the cool-down one probe closes it.
func TestBreaker(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	const cooldown = time.Second
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) {
		o.BreakerFailures = 3
		o.BreakerCooldown = cooldown
		o.MaxElapsed = 10 * time.Second
	})
	st := ts.stream(t, "a1", rc.URL()+"/hook?token=hunter2", nil)
	st.Send(completed("a1"))
	waitUntil(t, "the circuit to open", func() bool { return ts.metric(t, "canaryd_webhook_circuit_opens_total") == 1 })
	opened := time.Now()

	// A second analysis' event to the same destination makes no attempt.
	other := ts.stream(t, "a2", rc.URL()+"/other", nil)
	other.Send(completed("a2"))
	waitUntil(t, "the second stream to wait", func() bool { return other.Status().Retrying != nil })
	s := st.Status()
	if s.Retrying == nil || s.Retrying.Attempts != 3 || !strings.Contains(s.Retrying.LastError, "circuit breaker") ||
		!strings.Contains(s.Retrying.LastError, "503 Service Unavailable") || s.Pending != 1 || s.Failed != 0 {
		t.Errorf("status while the circuit is open: %+v retrying %+v; want the event pending after 3 attempts, paused, with the last error", s, s.Retrying)
	}
	if o := other.Status().Retrying; o.Attempts != 0 || !strings.Contains(o.LastError, "paused until") {
		t.Errorf("the second stream while the circuit is open: %+v, want no attempt, paused", o)
	}
	for _, x := range []string{s.Retrying.LastError, other.Status().Retrying.LastError} {
		if strings.Contains(x, "hunter2") {
			t.Errorf("the status shows the URL's query: %q", x)
		}
	}
	if n := len(rc.Hits()); n != 3 {
		t.Errorf("%d attempts reached the receiver while the circuit was open, want the 3 that opened it", n)
	}

	failing.Store(false)
	waitFor(t, st)
	waitFor(t, other)
	if d := time.Since(opened); d < cooldown-100*time.Millisecond {
		t.Errorf("delivered %v after the circuit opened, want after the cool-down (%v)", d, cooldown)
	}
	for _, x := range []*Stream{st, other} {
		if s := x.Status(); s.Delivered != 1 || s.Retrying != nil || s.LastError != "" {
			t.Errorf("after the cool-down: %+v, want delivered", s)
		}
	}
	if n := len(rc.Hits()); n != 5 {
		t.Errorf("%d attempts in all, want 3 + the probe + the other event", n)
	}
}

// TestBreakerGivesUpPastBudget: a delivery whose budget ends before the
// circuit's cool-down does is given up at once, saying why.
func TestBreakerGivesUpPastBudget(t *testing.T) {
	rc := newReceiver(t, codes(http.StatusBadGateway))
	ts := newTestSender(t, []string{rc.URL()}, func(o *Options) {
		o.BreakerFailures = 2
		o.BreakerCooldown = time.Hour
		o.MaxElapsed = time.Minute
	})
	start := time.Now()
	st := ts.stream(t, "a1", rc.URL(), nil)
	st.Send(completed("a1"))
	waitFor(t, st)
	later := ts.stream(t, "a2", rc.URL(), nil)
	later.Send(completed("a2"))
	waitFor(t, later)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("given up after %v, want at once", d)
	}
	s := st.Status()
	if s.Failed != 1 || !strings.Contains(s.LastError, "gave up after 2 attempt(s)") || !strings.Contains(s.LastError, "circuit breaker") ||
		!strings.Contains(s.LastError, "past the retry budget of 1m0s") || !strings.HasSuffix(s.LastError, "; last: the receiver answered 502 Bad Gateway") {
		t.Errorf("status = %+v, want given up: circuit open past the budget, with the last error", s)
	}
	if s := later.Status(); s.Failed != 1 || !strings.Contains(s.LastError, "gave up after 0 attempt(s)") || !strings.HasSuffix(s.LastError, "; last: the receiver answered 502 Bad Gateway") {
		t.Errorf("a later event's status = %+v, want given up without an attempt, naming the failure that opened the circuit", s)
	}
	if n := len(rc.Hits()); n != 2 {
		t.Errorf("%d attempts, want the 2 that opened the circuit", n)
	}
}

// TestBreakerStates drives one breaker through its states on a made-up
// clock.
func TestBreakerStates(t *testing.T) {
	opens := 0
	bs := newBreakers(2, time.Minute, func() { opens++ })
	b := bs.get("hooks.example.com:443")
	if bs.get("hooks.example.com:443") != b {
		t.Fatal("get made a second breaker for the same destination")
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	must := func(step string, a admission, ok, probe bool) {
		t.Helper()
		if a.ok != ok || a.probe != probe {
			t.Fatalf("%s: admission %+v, want ok %v probe %v", step, a, ok, probe)
		}
	}
	must("closed", b.admit(t0), true, false)
	b.done(false, true, false, "503", t0)
	must("one failure", b.admit(t0), true, false)
	b.done(false, false, false, "", t0) // a success resets the count
	b.done(false, true, false, "503", t0)
	must("one failure after a success", b.admit(t0), true, false)
	b.done(false, true, false, "no response", t0)
	if opens != 1 {
		t.Fatalf("opens = %d after 2 failures in a row, want 1", opens)
	}
	a := b.admit(t0.Add(time.Second))
	must("open", a, false, false)
	if !a.until.Equal(t0.Add(time.Minute)) || a.reason() != "deliveries to hooks.example.com:443 are paused until 2026-01-02T03:05:05Z after 2 failed attempts in a row (circuit breaker); last: no response" {
		t.Errorf("open: until %v, reason %q", a.until, a.reason())
	}
	// An attempt that started before the circuit opened fails: the
	// circuit stays open as long as it was.
	b.done(false, true, false, "late", t0.Add(2*time.Second))
	if a := b.admit(t0.Add(59 * time.Second)); !a.until.Equal(t0.Add(time.Minute)) || opens != 1 {
		t.Errorf("a late failure moved the cool-down to %v (opens %d)", a.until, opens)
	}

	after := t0.Add(time.Minute + time.Second)
	must("half-open: the probe", b.admit(after), true, true)
	w := b.admit(after)
	must("half-open: the others wait", w, false, false)
	if !w.probing || !strings.Contains(w.reason(), "probes") {
		t.Errorf("waiting on the probe: %+v %q", w, w.reason())
	}
	b.done(true, true, false, "still 503", after)
	select {
	case <-w.changed:
	default:
		t.Error("the probe's end did not wake the waiters")
	}
	if opens != 2 {
		t.Errorf("opens = %d after the probe failed, want 2", opens)
	}
	a = b.admit(after)
	must("open again", a, false, false)
	if !a.until.Equal(after.Add(time.Minute)) || !strings.HasSuffix(a.reason(), "; last: still 503") {
		t.Errorf("open again: until %v, reason %q", a.until, a.reason())
	}

	later := after.Add(2 * time.Minute)
	must("half-open again", b.admit(later), true, true)
	b.done(true, false, true, "", later) // the probe abandoned at shutdown
	must("the probe abandoned: another probe", b.admit(later), true, true)
	b.done(true, false, false, "", later)
	must("closed after the probe succeeded", b.admit(later), true, false)
	b.done(false, true, false, "503", later)
	must("closed: the count starts again", b.admit(later), true, false)
}

// TestDialsCheckedHost: a host is compared in its normal spelling, and
// that spelling, not the one the caller gave, is dialled and named in
// the request: "127.0.0.1." is not looked up in DNS after 127.0.0.1 was
// allowed, and a redirect's target is treated the same way.
func TestDialsCheckedHost(t *testing.T) {
	var hosts []string
	var mu sync.Mutex
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		if r.URL.Path == "/old" {
			_, port, _ := net.SplitHostPort(r.Host)
			w.Header().Set("Location", "http://LOCALHOST.:"+port+"/new")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}
	})
	port := portOf(t, rc.URL())
	ts := newTestSender(t, []string{rc.URL(), "http://localhost:" + port}, nil)
	var cc connCounter
	cc.wrap(ts.Sender)

	for _, tc := range []struct {
		url       string
		wantDials []string
		wantHosts []string
	}{
		{"http://127.0.0.1.:" + port + "/hook", []string{"127.0.0.1:" + port}, []string{"127.0.0.1:" + port}},
		{"http://[::ffff:7f00:1]:" + port + "/hook", nil, nil}, // refused: not the allowed spelling of an address
		{"http://127.0.0.1:" + port + "/old", []string{"localhost:" + port}, []string{"127.0.0.1:" + port, "localhost:" + port}},
	} {
		mu.Lock()
		hosts = nil
		mu.Unlock()
		before := len(cc.addresses())
		ts.Sender.client.CloseIdleConnections()
		st := ts.stream(t, "a1", tc.url, nil)
		st.Send(completed("a1"))
		waitFor(t, st)
		if tc.wantDials == nil {
			if s := st.Status(); s.Failed != 1 || !strings.Contains(s.LastError, "allowed prefix") {
				t.Errorf("%s: %+v, want refused", tc.url, s)
			}
			continue
		}
		if s := st.Status(); s.Delivered != 1 {
			t.Errorf("%s: %+v, want delivered", tc.url, s)
		}
		dials := cc.addresses()[before:]
		// Only new connections are dialled; the first request of each
		// case has none idle (CloseIdleConnections).
		for _, want := range tc.wantDials {
			found := false
			for _, d := range dials {
				found = found || d == want
			}
			if !found {
				t.Errorf("%s: dialled %q, want %q", tc.url, dials, want)
			}
		}
		for _, d := range dials {
			if strings.Contains(d, "127.0.0.1.") || strings.Contains(d, "LOCALHOST") {
				t.Errorf("%s: dialled %q, a spelling the allow list did not compare", tc.url, d)
			}
		}
		mu.Lock()
		if strings.Join(hosts, " ") != strings.Join(tc.wantHosts, " ") {
			t.Errorf("%s: requests named hosts %q, want %q", tc.url, hosts, tc.wantHosts)
		}
		mu.Unlock()
	}
}

// waitUntil polls cond until it holds, failing the test after a generous
// bound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// portOf is the port of the URL raw.
func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in %q", raw)
	}
	return u.Port()
}

// TestIgnoresProxyVariables sets HTTP_PROXY, HTTPS_PROXY and ALL_PROXY to
// a real proxy before the Sender is made: deliveries go straight to their
// receivers, and the proxy sees nothing. The receiver is named
// "localhost.". net/http's environment proxy spares "localhost" and
// loopback addresses, and tests contact nothing but loopback, so the
// transport's Proxy is checked too: it must be none.
func TestIgnoresProxyVariables(t *testing.T) {
	proxied := outboundtest.ProxyVariables(t)

	rc := newReceiver(t, codes(http.StatusOK))
	hooks := []string{"http://localhost.:" + portOf(t, rc.URL()) + "/hook"}
	ts := newTestSender(t, hooks, nil)
	if tr, ok := ts.Sender.client.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Fatalf("the Sender's transport has a proxy function; want none")
	}
	for i, hook := range hooks {
		st := ts.stream(t, "a1", hook, nil)
		st.Send(completed("a1"))
		waitFor(t, st)
		if s := st.Status(); s.Delivered != 1 || len(rc.Hits()) != i+1 {
			t.Errorf("%s: status %+v, %d requests at the receiver; want delivered directly", hook, s, len(rc.Hits()))
		}
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy got %d requests, want none", n)
	}
}
