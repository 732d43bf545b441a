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
//
// It watches its own end for the round (AfterDone, an
// analyses.DoneWatcher): the end of its request tells it, and its shared
// deadline tells the rounds using it, so that the round's watch costs no
// context of its own.
type roundContext struct {
	context.Context // done at the shared deadline, or by cancel
	req             context.Context
	timeout         time.Duration
	cancel          context.CancelFunc // the embedded context's

	// watch is called once the context is done (AfterDone); watchState
	// says whether it is set, called or stopped, or whether the context
	// was told of its end before one was set.
	watch      func()
	watchState atomic.Int32
	// prev and next link the rounds using the same shared deadline
	// (sharedDeadline.rounds), under roundDeadlines.mu.
	prev, next *roundContext
}

// The states of a roundContext's watch.
const (
	watchNone int32 = iota
	watchSet
	watchEnded // told of the context's end with no watch set
	watchCalled
	watchStopped
)

var _ analyses.DoneWatcher = (*roundContext)(nil)

// AfterDone has f called, on a goroutine of its own, once c is done: at
// once if it is.
func (c *roundContext) AfterDone(f func()) {
	c.watch = f
	if !c.watchState.CompareAndSwap(watchNone, watchSet) {
		// Told of its end already.
		c.watchState.Store(watchCalled)
		go c.callWatch()
		return
	}
	if c.Err() != nil {
		c.ended()
	}
}

// StopAfterDone stops AfterDone's call, and reports whether it did
// before the call began.
func (c *roundContext) StopAfterDone() bool {
	return c.watchState.CompareAndSwap(watchSet, watchStopped)
}

// ended tells c that it is done, or is about to be (its deadline's
// context ends its own): it calls the watch, if one is set and was not
// called, and otherwise has AfterDone call it. Every end of c tells it:
// its request's, its deadline's, its cancel.
func (c *roundContext) ended() {
	for {
		switch c.watchState.Load() {
		case watchNone:
			if c.watchState.CompareAndSwap(watchNone, watchEnded) {
				return
			}
		case watchSet:
			if c.watchState.CompareAndSwap(watchSet, watchCalled) {
				go c.callWatch()
				return
			}
		default:
			return
		}
	}
}

// callWatch calls the watch once c is done.
func (c *roundContext) callWatch() {
	<-c.Done()
	c.watch()
}

// requestEnded ends c with its request.
func (c *roundContext) requestEnded() {
	c.cancel()
	c.ended()
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
	// stopTelling stops the call that tells the rounds using it that
	// their deadline has passed (roundContext.ended).
	stopTelling func() bool
	// Guarded by roundDeadlines.mu: how many rounds use it, and the
	// first of them (roundContext.next links the others).
	users  int
	rounds *roundContext
}

// end stops a deadline that no round uses.
func (s *sharedDeadline) end() {
	s.stopTelling()
	s.cancel()
}

// acquire returns a deadline at most min(timeout/100, maxDeadlineShare)
// before now+timeout and not after it, for a round to use until it
// releases it.
func (d *roundDeadlines) acquire(now time.Time, timeout time.Duration) *sharedDeadline {
	return d.acquireFor(now, timeout, nil)
}

// acquireFor is acquire for round, which is counted among the deadline's
// rounds (nil for none) until it releases it.
func (d *roundDeadlines) acquireFor(now time.Time, timeout time.Duration, round *roundContext) *sharedDeadline {
	want := now.Add(timeout)
	share := min(timeout/100, maxDeadlineShare)
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.cur
	if s == nil || s.at.After(want) || want.Sub(s.at) > share {
		ctx, cancel := context.WithDeadline(context.Background(), want)
		s = &sharedDeadline{ctx: ctx, cancel: cancel, at: want}
		s.stopTelling = context.AfterFunc(ctx, func() { d.tell(s) })
		if old := d.cur; old != nil && old.users == 0 {
			old.end()
		}
		d.cur = s
	}
	s.users++
	if round != nil {
		round.next = s.rounds
		if s.rounds != nil {
			s.rounds.prev = round
		}
		s.rounds = round
	}
	return s
}

// tell tells the rounds using s that their deadline has passed.
func (d *roundDeadlines) tell(s *sharedDeadline) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for c := s.rounds; c != nil; c = c.next {
		c.ended()
	}
}

// release ends a round's use of s. The latest deadline is kept, unused,
// for the next round; another one's timer is stopped once no round uses
// it.
func (d *roundDeadlines) release(s *sharedDeadline) {
	d.releaseFor(s, nil)
}

// releaseFor is release for round, acquired with acquireFor.
func (d *roundDeadlines) releaseFor(s *sharedDeadline, round *roundContext) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if round != nil {
		if round.prev != nil {
			round.prev.next = round.next
		} else {
			s.rounds = round.next
		}
		if round.next != nil {
			round.next.prev = round.prev
		}
		round.prev, round.next = nil, nil
	}
	s.users--
	if s.users == 0 && s != d.cur {
		s.end()
	}
}

// withTimeout is context.WithTimeout(parent, timeout) for a round: done
// when parent is or the round's deadline (acquire) passes, its error then
// context.DeadlineExceeded, and its deadlineSources name timeout.
func (d *roundDeadlines) withTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	c := &roundContext{req: parent, timeout: timeout}
	shared := d.acquireFor(time.Now(), timeout, c)
	c.Context, c.cancel = context.WithCancel(shared.ctx)
	stop := context.AfterFunc(parent, c.requestEnded)
	var ended atomic.Bool
	return c, func() {
		if ended.CompareAndSwap(false, true) {
			stop()
			c.cancel()
			c.ended()
			d.releaseFor(shared, c)
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
