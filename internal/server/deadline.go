package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
)

// TimeoutHeader is the request header of a caller's deadline
// (analyses.TimeoutHeader).
const TimeoutHeader = analyses.TimeoutHeader

// maxTimeout bounds what a caller may ask for: a day is longer than any
// sensible gate, and a bound keeps the arithmetic of seconds in range.
const maxTimeout = 24 * time.Hour

// parseTimeout reads a caller's timeout: a number of seconds or a Go
// duration, positive and at most maxTimeout. The message is "" when it is
// valid.
func parseTimeout(v string) (time.Duration, string) {
	v = strings.TrimSpace(v)
	const want = "must be a Go duration (8s, 1m30s) or a number of seconds (8, 7.5), above 0 and at most 24h"
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(secs) || secs <= 0 || secs > maxTimeout.Seconds() {
			return 0, fmt.Sprintf("%s, got %q", want, v)
		}
		d = time.Duration(secs * float64(time.Second))
	} else {
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Sprintf("%s, got %q", want, v)
		}
	}
	if d <= 0 || d > maxTimeout {
		return 0, fmt.Sprintf("%s, got %q", want, v)
	}
	return d, ""
}

// shorter returns the shorter of two timeouts, 0 standing for none.
func shorter(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// timeoutHeader reads the Request-Timeout header on routes that take a
// timeout. When the query gives one too, the shorter applies: both are the
// caller's bounds. On other routes the header is ignored, as unknown
// headers are.
func (req *specRequest) timeoutHeader(r *http.Request, params queryParams) []api.FieldError {
	if !params.timeout {
		return nil
	}
	values := r.Header.Values(TimeoutHeader)
	if len(values) == 0 {
		return nil
	}
	if len(values) > 1 {
		return []api.FieldError{{Field: TimeoutHeader, Message: fmt.Sprintf("given %d times; give it once", len(values))}}
	}
	d, msg := parseTimeout(values[0])
	if msg != "" {
		return []api.FieldError{{Field: TimeoutHeader, Message: msg}}
	}
	req.timeout = shorter(req.timeout, d)
	return nil
}

// roundPlan is a compiled plan as a round runs it: every metric answers by
// the deadline of the context it is measured with (deadlineSource). It is
// made once per compiled spec, on the first round that needs it, and
// shared by every round of that spec (and by the rounds kept), so that a
// round copies no plan; the timeout each round's error names travels in its
// context (roundDeadlines.withTimeout).
type roundPlan struct {
	once sync.Once
	plan *analysis.Plan
	// series is the series of the last caller's rounds of it
	// (specRequest.roundSeries): a compiled spec's rounds are the same
	// call, its document and arguments, so that only the caller may change
	// their series.
	series atomic.Pointer[callerSeries]
}

// callerSeries is a caller's series (analyses.SeriesOf).
type callerSeries struct{ caller, series string }

// of returns the round's plan of compiled, making it on the first call.
func (p *roundPlan) of(compiled *analysis.Plan) *analysis.Plan {
	p.once.Do(func() { p.plan = withDeadline(compiled) })
	return p.plan
}

// roundPlan is the plan a round of req runs.
func (req *specRequest) roundPlan() *analysis.Plan {
	if req.round == nil {
		req.round = &roundPlan{}
	}
	return req.round.of(req.compiled.Plan)
}

// roundSeries is the series of a round of req by caller: the last
// caller's, kept with the compiled spec's plan, or worked out again
// (hashing the document and the arguments) for another caller.
func (req *specRequest) roundSeries(caller string) string {
	if req.round == nil {
		req.round = &roundPlan{}
	}
	if c := req.round.series.Load(); c != nil && c.caller == caller {
		return c.series
	}
	series := analyses.SeriesOf(api.KindRound, req.template, req.document, req.args, caller)
	req.round.series.Store(&callerSeries{caller: caller, series: series})
	return series
}

// withDeadline returns a copy of plan in which every metric answers by the
// deadline of the context it is measured with: a measurement still running
// when that deadline passes is an Error "deadline exceeded …" at once,
// whatever its source does. plan itself is not changed (it may be a
// compiled spec that other requests share).
func withDeadline(plan *analysis.Plan) *analysis.Plan {
	p := plan.Copy()
	for i := range p.Metrics {
		if m := &p.Metrics[i]; m.Source != nil {
			m.Source = deadlineSource{inner: m.Source}
		}
	}
	return p
}

// roundContext is a round's context: done when its request's is or its
// deadline passes, with the request's values, and the timeout that set
// the deadline, which a measurement cut short names.
//
// Its deadline is a sharedDeadline's (roundDeadlines), whose context it
// is a child of: the rounds that start close together share the timer
// of one deadline, so that a round arms no timer of its own (arming one
// wakes the runtime's network poller, a system call and a thread's
// wake-up, on about a third of the rounds of a busy canaryd).
type roundContext struct {
	context.Context // done at the shared deadline, or by cancel
	req             context.Context
	timeout         time.Duration
}

// roundTimeoutKey finds a roundContext among a context's values.
type roundTimeoutKey struct{}

// Value is the request's values, beside the round's own (roundTimeoutKey,
// and the context package's, which find the round's cancellation).
func (c *roundContext) Value(key any) any {
	if key == (roundTimeoutKey{}) {
		return c
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.req.Value(key)
}

// maxDeadlineShare bounds how much earlier than its timeout asks a
// round's deadline may come: a hundredth of the timeout, and at most
// this (50 ms of the default --evaluate-timeout of 8 s). A round's
// deadline never comes later than its timeout asks.
const maxDeadlineShare = 50 * time.Millisecond

// roundDeadlines are the deadlines rounds share: the latest made, which
// the next round takes when it is due at most its share before the
// round's own.
type roundDeadlines struct {
	mu  sync.Mutex
	cur *sharedDeadline
}

// sharedDeadline is a deadline, and the rounds using it.
type sharedDeadline struct {
	ctx    context.Context // context.WithDeadline(Background, at)
	cancel context.CancelFunc
	at     time.Time
	users  int // guarded by roundDeadlines.mu
}

// acquire returns a deadline at most min(timeout/100, maxDeadlineShare)
// before now+timeout and not after it, for a round to use until it
// releases it.
func (d *roundDeadlines) acquire(now time.Time, timeout time.Duration) *sharedDeadline {
	want := now.Add(timeout)
	share := min(timeout/100, maxDeadlineShare)
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cur; c != nil && !c.at.After(want) && want.Sub(c.at) <= share {
		c.users++
		return c
	}
	ctx, cancel := context.WithDeadline(context.Background(), want)
	s := &sharedDeadline{ctx: ctx, cancel: cancel, at: want, users: 1}
	if old := d.cur; old != nil && old.users == 0 {
		old.cancel()
	}
	d.cur = s
	return s
}

// release ends a round's use of s. The latest deadline is kept, unused,
// for the next round; another one's timer is stopped once no round uses
// it.
func (d *roundDeadlines) release(s *sharedDeadline) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.users--
	if s.users == 0 && s != d.cur {
		s.cancel()
	}
}

// withTimeout is context.WithTimeout(parent, timeout) for a round: done
// when parent is or the round's deadline (acquire) passes, its error then
// context.DeadlineExceeded, and its deadlineSources name timeout.
func (d *roundDeadlines) withTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	shared := d.acquire(time.Now(), timeout)
	ctx, cancel := context.WithCancel(shared.ctx)
	stop := context.AfterFunc(parent, cancel)
	var ended atomic.Bool
	return &roundContext{Context: ctx, req: parent, timeout: timeout}, func() {
		if ended.CompareAndSwap(false, true) {
			stop()
			cancel()
			d.release(shared)
		}
	}
}

// roundTimeout is the timeout of the round ctx belongs to; 0 outside one.
func roundTimeout(ctx context.Context) time.Duration {
	if c, ok := ctx.Value(roundTimeoutKey{}).(*roundContext); ok {
		return c.timeout
	}
	return 0
}

// deadlineSource is a Source that returns when its context's deadline
// passes, even if the source it wraps has not.
type deadlineSource struct {
	inner analysis.Source
}

func (d deadlineSource) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if b, ok := d.inner.(analysis.ContextBound); ok && b.BoundByContext() {
		// It returns by the deadline by itself: no goroutine to watch it.
		return cutShort(ctx, d.inner.Measure(ctx, at))
	}
	got := make(chan analysis.Observation, 1)
	// Ends when the wrapped source returns. Sources honour ctx, so that is
	// at the latest soon after its deadline; the buffered channel lets it
	// end even when nobody is left to read it.
	go func() { got <- d.inner.Measure(ctx, at) }()
	select {
	case obs := <-got:
		return cutShort(ctx, obs)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return analysis.Observation{Err: exceeded(ctx)}
		}
		return analysis.Observation{Err: ctx.Err()}
	}
}

// cutShort makes a query that failed because the deadline cut it short say
// so in the caller's terms rather than the transport's.
func cutShort(ctx context.Context, obs analysis.Observation) analysis.Observation {
	if obs.Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		obs.Err = exceeded(ctx)
	}
	return obs
}

func exceeded(ctx context.Context) error {
	return fmt.Errorf("deadline exceeded: the measurement had not finished when the round's deadline of %s passed "+
		"(set it with ?timeout= or the %s header, below the caller's own timeout)", roundTimeout(ctx), TimeoutHeader)
}
