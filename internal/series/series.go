// Package series is what a metric's source shows of the data its
// measurements sample: its own query's series over a range of time, as a
// range query answers them. The Prometheus source (a metric's query) and
// the judge's (its canary and baseline queries) give them; the HTML report
// draws them beneath the metric's measurements.
//
// Every answer is bounded before it is kept: a query asks for at most
// Query.MaxPoints points a series (its step is chosen for that), at most
// Query.MaxSeries series are kept (the others only counted), every label
// text is cut to MaxLabelBytes, and the answer's bytes are the source's
// own bound (a Prometheus datasource's --max-result-values).
package series

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxLabelBytes is the most bytes of a series' labels kept, as text: a
// longer one is cut, and ends in "…".
const MaxLabelBytes = 256

// Query is a range query of a source's own query.
type Query struct {
	Start, End time.Time
	Step       time.Duration
	// MaxSeries is how many series are kept; the others are counted
	// (Set.More).
	MaxSeries int
	// MaxPoints is the most points a series may have: a query whose range
	// and step would give more is refused before it is sent, and points
	// an answer has beyond it are not kept.
	MaxPoints int
}

// Check reports why q cannot be sent, nil when it can.
func (q Query) Check() error {
	switch {
	case q.Step <= 0:
		return errors.New("the step must be positive")
	case q.End.Before(q.Start):
		return errors.New("the range ends before it starts")
	case q.MaxSeries <= 0 || q.MaxPoints <= 0:
		return errors.New("the query keeps no series or no point")
	case int64(q.End.Sub(q.Start)/q.Step)+1 > int64(q.MaxPoints):
		return fmt.Errorf("a step of %s from %s to %s gives more than %d points a series", q.Step,
			q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339), q.MaxPoints)
	}
	return nil
}

// StepFor is the step that gives at most points points a series from
// start to end: a whole number of milliseconds, at least one.
func StepFor(start, end time.Time, points int) time.Duration {
	if points < 2 || !end.After(start) {
		return time.Second
	}
	step := (end.Sub(start) + time.Duration(points-2)) / time.Duration(points-1)
	step = (step + time.Millisecond - 1).Truncate(time.Millisecond)
	return max(step, time.Millisecond)
}

// Point is one value of a series at one instant.
type Point struct {
	T time.Time
	V float64
}

// Series is one series of an answer.
type Series struct {
	// Labels are the series' labels as PromQL writes them,
	// {a="b", c="d"}; "{}" for a series without any (a sum()).
	Labels string
	// Side names the query of a judge metric the series is of: "canary"
	// or "baseline"; empty for a metric's own query.
	Side string
	// Points are in time order. A baseline of a judge's control is shifted
	// by its offset, so that it overlays the canary's time.
	Points []Point
}

// Set is a range query's answer.
type Set struct {
	Series []Series
	// More is how many series the answer had beyond those kept.
	More int
	// Step is the step asked for.
	Step time.Duration
}

// Source is a metric's source that can run its own query over a range.
type Source interface {
	QuerySeries(ctx context.Context, q Query) (Set, error)
}

// ErrNoQuery is the error of a Source that wraps one without a query to
// run over a range (a web metric's).
var ErrNoQuery = errors.New("the metric's source has no query to run over a range")

// CutLabels cuts a labels text to MaxLabelBytes, on a rune boundary.
func CutLabels(s string) string {
	if len(s) <= MaxLabelBytes {
		return s
	}
	cut := MaxLabelBytes - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
