package judge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	stats "github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/series"
)

// Metadata of a counts measurement whose metric asks for the baseline's
// history (counts.history): how many intervals of it the count test was
// given (0 when Prometheus had none), and, when it had none, a sentence
// saying so.
const (
	MetadataHistoryIntervals = "historyIntervals"
	MetadataHistory          = "history"
)

// MaxHistoryStarts is how many analysis starts a CountSource keeps the
// baseline's history of: the analyses of one compiled template measured
// most recently. An analysis whose history was pushed out by as many
// later starts asks Prometheus for it again at its next measurement.
const MaxHistoryStarts = 8

// history is the baseline's history before an analysis' start, as the
// count test takes it (stats.CountConfig.History): the cumulative counts
// at the end of each interval, counted from the first's start. counts is
// nil when Prometheus had no data (no traffic counted): a new baseline.
type history struct {
	counts   []stats.Counts
	from, to time.Time
}

// noData is the sentence of a history that Prometheus had no data for.
func (h history) noData() string {
	return fmt.Sprintf("no data: Prometheus has no events of the baseline's counters from %s to %s (a new baseline?); "+
		"the dispersion starts from its default prior, as without a history", h.from.UTC().Format(time.RFC3339), h.to.UTC().Format(time.RFC3339))
}

// histories keeps the baseline's history of the analyses a CountSource
// measured most recently, by their start (at most MaxHistoryStarts), so
// that an analysis asks Prometheus for it once: its concurrent
// measurements (a backtest's prefetched ones) wait for the one that asks.
// A history that could not be read is not kept: the next measurement
// asks again.
type histories struct {
	mu      sync.Mutex
	entries map[int64]*historyEntry
	order   []int64 // the keys of entries, oldest first
}

type historyEntry struct {
	done chan struct{} // closed once h and err are set
	h    history
	err  error
}

// get returns the history of the analysis that started at start, fetched
// by fetch unless a measurement of the same start already did or is
// doing so.
func (hs *histories) get(ctx context.Context, start time.Time, fetch func() (history, error)) (history, error) {
	key := start.UnixNano()
	hs.mu.Lock()
	e, ok := hs.entries[key]
	if !ok {
		e = &historyEntry{done: make(chan struct{})}
		if hs.entries == nil {
			hs.entries = map[int64]*historyEntry{}
		}
		if len(hs.order) >= MaxHistoryStarts {
			delete(hs.entries, hs.order[0])
			hs.order = hs.order[1:]
		}
		hs.entries[key] = e
		hs.order = append(hs.order, key)
	}
	hs.mu.Unlock()
	if !ok {
		e.h, e.err = fetch()
		if e.err != nil {
			hs.forget(key, e)
		}
		close(e.done)
	}
	select {
	case <-e.done:
		return e.h, e.err
	case <-ctx.Done():
		return history{}, ctx.Err()
	}
}

// forget removes e, a history that could not be read.
func (hs *histories) forget(key int64, e *historyEntry) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.entries[key] != e {
		return // pushed out already
	}
	delete(hs.entries, key)
	for i, k := range hs.order {
		if k == key {
			hs.order = append(hs.order[:i], hs.order[i+1:]...)
			break
		}
	}
}

// fetchHistory range-queries the baseline's two counters over the
// HistoryLookback before start, one point every HistoryStep (the whole
// steps that fit, ending at start), and counts them as the looks are
// counted (cumulative: through resets, from the first point).
func (s *CountSource) fetchHistory(ctx context.Context, start time.Time) (history, error) {
	step := s.o.HistoryStep
	n := int(s.o.HistoryLookback / step)
	h := history{from: start.Add(-time.Duration(n) * step), to: start}
	if n+1 > s.o.MaxValues {
		return h, fmt.Errorf("counts.history: %d intervals of %s are more than the %d values a query may return (--max-result-values): make its step longer",
			n, step, s.o.MaxValues)
	}
	q := series.Query{Start: h.from, End: start, Step: step, MaxPoints: n + 1, MaxSeries: max(1, s.o.MaxValues/(n+1))}
	var cum [2][]float64
	var errs [2]error
	var wg sync.WaitGroup
	for i, src := range [2]analysis.Source{s.o.BaselineBad, s.o.BaselineTotal} {
		wg.Add(1)
		// Ends when the query returns: it is made with ctx.
		go func() {
			defer wg.Done()
			cum[i], errs[i] = counter(ctx, src, q, n, 1)
		}()
	}
	wg.Wait()
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, fmt.Errorf("counts.history: the baseline's history before the analysis' start (counts.%s from %s to %s) could not be read, "+
				"and the next measurement asks again: %w", counterFields[2+i], h.from.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), err))
		}
	}
	if len(all) > 0 {
		return h, errors.Join(all...)
	}
	if cum[1][n] <= 0 {
		return h, nil // no data: a new baseline
	}
	h.counts = make([]stats.Counts, n)
	for k := range h.counts {
		h.counts[k] = stats.Counts{Bad: cum[0][k+1], Total: cum[1][k+1]}
	}
	if err := (stats.CountConfig{History: h.counts}).WithDefaults().Validate(); err != nil {
		var fe *stats.FieldError
		var k int
		var field string
		if errors.As(err, &fe) {
			if _, scanErr := fmt.Sscanf(fe.Field, "history[%d].%s", &k, &field); scanErr == nil {
				return h, fmt.Errorf("counts.history: baseline.%s at %s, the end of the history's interval %d: %s",
					field, h.from.Add(time.Duration(k+1)*step).UTC().Format(time.RFC3339), k+1, fe.Message)
			}
		}
		return h, fmt.Errorf("counts.history: %w", err)
	}
	return h, nil
}
