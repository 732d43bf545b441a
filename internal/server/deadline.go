package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
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

// withDeadline returns a copy of plan in which every metric answers by the
// deadline of the context it is measured with: a measurement still running
// when that deadline passes is an Error "deadline exceeded …" at once,
// whatever its source does. plan itself is not changed (it may be a
// compiled spec that other requests share).
func withDeadline(plan *analysis.Plan, timeout time.Duration) *analysis.Plan {
	p := plan.Copy()
	for i := range p.Metrics {
		if m := &p.Metrics[i]; m.Source != nil {
			m.Source = deadlineSource{inner: m.Source, timeout: timeout}
		}
	}
	return p
}

// deadlineSource is a Source that returns when its context's deadline
// passes, even if the source it wraps has not.
type deadlineSource struct {
	inner   analysis.Source
	timeout time.Duration
}

func (d deadlineSource) Measure(ctx context.Context, at time.Time) analysis.Observation {
	if b, ok := d.inner.(analysis.ContextBound); ok && b.BoundByContext() {
		// It returns by the deadline by itself: no goroutine to watch it.
		return d.cutShort(ctx, d.inner.Measure(ctx, at))
	}
	got := make(chan analysis.Observation, 1)
	// Ends when the wrapped source returns. Sources honour ctx, so that is
	// at the latest soon after its deadline; the buffered channel lets it
	// end even when nobody is left to read it.
	go func() { got <- d.inner.Measure(ctx, at) }()
	select {
	case obs := <-got:
		return d.cutShort(ctx, obs)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return analysis.Observation{Err: d.exceeded()}
		}
		return analysis.Observation{Err: ctx.Err()}
	}
}

// cutShort makes a query that failed because the deadline cut it short say
// so in the caller's terms rather than the transport's.
func (d deadlineSource) cutShort(ctx context.Context, obs analysis.Observation) analysis.Observation {
	if obs.Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		obs.Err = d.exceeded()
	}
	return obs
}

func (d deadlineSource) exceeded() error {
	return fmt.Errorf("deadline exceeded: the measurement had not finished when the round's deadline of %s passed "+
		"(set it with ?timeout= or the %s header, below the caller's own timeout)", d.timeout, TimeoutHeader)
}
