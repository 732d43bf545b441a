package judge

import (
	"math"
	"time"

	"github.com/canaryd/canaryd/internal/series"
)

// cumulative turns a counter expression's answer, range-queried from start
// at step, into the events counted since start at each of the n+1 instants
// start + k·step (k = 0…n; the first is 0), summed over its series. Within
// a series:
//
//   - an increase counts;
//   - a decrease is a counter reset (a restarted process): the new value
//     counts from zero, as Prometheus' increase() reads it;
//   - an instant without a point (no sample within Prometheus' lookback, a
//     NaN) carries the previous value: nothing is counted until the next
//     point, which counts what happened meanwhile;
//   - a series that first appears after start (a new pod, a counter's
//     first event) counts its first value from zero: it did not exist
//     before. One that has a point at start counts from that point.
//
// Each series is counted on its own before the sum, so a query that keeps
// one series per pod survives one pod's restart exactly; a sum() over pods
// sees the restart as a drop of the sum, a reset of the whole, and counts
// the other pods' totals again.
func cumulative(set series.Set, start time.Time, step time.Duration, n int) []float64 {
	out := make([]float64, n+1)
	for _, sr := range set.Series {
		var (
			prev    float64
			started bool
			count   float64
			k       = 0 // the next instant whose count is not written
		)
		for _, p := range sr.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			i := int(math.Round(float64(p.T.Sub(start)) / float64(step)))
			if i < k || i > n {
				continue // not on the grid, or a second point for it
			}
			for ; k < i; k++ {
				out[k] += count
			}
			switch {
			case !started && i == 0:
				// The value at start is where counting starts.
			case !started || p.V < prev:
				count += p.V
			default:
				count += p.V - prev
			}
			prev, started = p.V, true
			out[i] += count
			k = i + 1
		}
		for ; k <= n; k++ {
			out[k] += count
		}
	}
	return out
}
