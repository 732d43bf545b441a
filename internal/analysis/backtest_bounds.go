package analysis

import "time"

// BacktestStarts returns the instants BacktestSeries starts its backtests
// at, from start to end, every apart (start alone when every is 0), and
// false once there would be more than limit: what a caller bounds before
// a series runs.
func BacktestStarts(start, end time.Time, every time.Duration, limit int) ([]time.Time, bool) {
	if every <= 0 {
		return []time.Time{start}, true
	}
	var out []time.Time
	for at := start; at.Before(end) || at.Equal(start); at = at.Add(every) {
		if len(out) == limit {
			return out, false
		}
		out = append(out, at)
	}
	return out, true
}

// MeasurementsWithin is how many measurements p's metrics take at most in
// a backtest whose horizon is span after its start, by their schedules: a
// metric measures at its initialDelay and every interval after, up to its
// count. (An Error measurement does not count towards a count; the
// retries it causes are left out of this estimate.)
func (p *Plan) MeasurementsWithin(span time.Duration) int {
	total := 0
	for i := range p.Metrics {
		m := &p.Metrics[i]
		if m.InitialDelay > span {
			continue
		}
		n := int64(1)
		if m.Interval > 0 {
			n += int64((span - m.InitialDelay) / m.Interval)
		}
		if m.Count != nil && int64(*m.Count) < n {
			n = int64(*m.Count)
		}
		total += int(min(n, 1<<31))
	}
	return total
}
