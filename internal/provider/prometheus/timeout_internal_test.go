package prometheus

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWithTimeout checks that a query's context ends at the earlier of
// its timeout and its caller's deadline, and that a timeout of 0 has
// ended already, as context.WithTimeout's would.
func TestWithTimeout(t *testing.T) {
	hour, stopHour := context.WithTimeout(t.Context(), time.Hour)
	defer stopHour()
	second, stopSecond := context.WithTimeout(t.Context(), time.Second)
	defer stopSecond()
	for _, tc := range []struct {
		name     string
		parent   context.Context
		timeout  time.Duration
		same     bool // the caller's context itself
		deadline time.Duration
	}{
		{"the timeout first", hour, time.Second, false, time.Second},
		{"the caller's deadline first", second, time.Hour, true, time.Second},
		{"no deadline", t.Context(), time.Minute, false, time.Minute},
	} {
		ctx, cancel := withTimeout(tc.parent, tc.timeout, time.Now())
		d, ok := ctx.Deadline()
		if !ok || time.Until(d) > tc.deadline || time.Until(d) < tc.deadline-time.Minute/2 {
			t.Errorf("%s: deadline in %v (%v), want about %v", tc.name, time.Until(d), ok, tc.deadline)
		}
		if (ctx == tc.parent) != tc.same {
			t.Errorf("%s: the caller's context returned: %v, want %v", tc.name, ctx == tc.parent, tc.same)
		}
		cancel()
		if tc.same && tc.parent.Err() != nil {
			t.Errorf("%s: cancel ended the caller's context", tc.name)
		}
	}
	for _, parent := range []context.Context{t.Context(), hour, second} {
		ctx, cancel := withTimeout(parent, 0, time.Now())
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("a timeout of 0: %v, want %v at once", ctx.Err(), context.DeadlineExceeded)
		}
		cancel()
	}
}
