package analysis

import (
	"context"
	"time"
)

// Schedule is what a measurement's source may need to know of its place
// in the analysis, beyond the instant it measures as of: a source that
// counts events from the analysis' start (the judge's counts) needs the
// start, and its look for the last measurement differs from the others'.
//
// The engine hands it through the measurement's context (ScheduleFrom)
// rather than through Source, so that the wrappers between the engine and
// a source (deadlines, scrubbing of secrets, a backtest's prefetching)
// pass it on unchanged, and sources that do not need it are not changed.
// A measurement taken outside a schedule (Evaluate's round) has none.
type Schedule struct {
	// Start is when the analysis started: a resumed run's stored
	// startedAt, a backtest's start. It is the same for every measurement
	// of a run, so that measurements as of the same instant, live, after
	// a restart or in a backtest, see the same data.
	Start time.Time
	// Interval is the metric's interval; zero when it has none.
	Interval time.Duration
	// Last is true when the measurement, unless it is an Error, reaches
	// the metric's count: no other measurement of the metric follows it.
	Last bool
}

type scheduleKey struct{}

// WithSchedule returns ctx carrying s: one allocation a measurement,
// where context.WithValue and the Schedule boxed in it took two.
func WithSchedule(ctx context.Context, s Schedule) context.Context {
	return &scheduleCtx{Context: ctx, s: s}
}

// scheduleCtx is a context carrying a Schedule, which its Value gives
// for scheduleKey{} (as a *Schedule, without boxing it again).
type scheduleCtx struct {
	context.Context
	s Schedule
}

func (c *scheduleCtx) Value(key any) any {
	if _, ok := key.(scheduleKey); ok {
		return &c.s
	}
	return c.Context.Value(key)
}

// ScheduleFrom returns the schedule of the measurement ctx is for, and
// false when it is taken outside a schedule.
func ScheduleFrom(ctx context.Context) (Schedule, bool) {
	if s, ok := ctx.Value(scheduleKey{}).(*Schedule); ok {
		return *s, true
	}
	return Schedule{}, false
}
