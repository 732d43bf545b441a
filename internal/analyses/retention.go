package analyses

import (
	"errors"
	"fmt"

	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/store"
)

// Retained results.
//
// What the analyses hold in memory is bounded in bytes as well as in
// number: each run keeps an estimate of its size (Ledger), kept up as its
// measurements are recorded and set exactly from its final state when it
// completes, in one sum (store.Retained.Bytes). The store.Retained holds
// the finished analyses: the memory store's own with memory:, where they
// are kept. Finished analyses are evicted oldest first when the sum is
// over MaxRetainedBytes or they are more than MaxFinished, but never one
// finished less than MinRetention ago: a new analysis is refused (429)
// instead, so that no caller can evict another's result before it has had
// the time to read it.

// Defaults of the retention bounds of AnalysesOptions (limits).
const (
	DefaultMaxRetainedBytes = limits.MaxRetainedBytes
	DefaultMinRetention     = limits.MinRetention
)

// Errors of Analyses.Start when nothing held can be evicted (the
// store's: store.Retained holds the finished analyses).
var (
	// ErrRetainedFull: the results held are at --max-retained-bytes, and
	// every finished analysis is younger than --min-retention.
	ErrRetainedFull = store.ErrRetainedFull
	// ErrFinishedFull: --max-finished finished analyses are held, every
	// one younger than --min-retention.
	ErrFinishedFull = store.ErrFinishedFull
)

// RetentionFull says why a new analysis cannot start, naming the limit.
func (a *Analyses) RetentionFull(err error) string {
	if errors.Is(err, ErrFinishedFull) {
		return fmt.Sprintf("%d finished analyses are held, the most this canaryd keeps (--max-finished), and each finished less than "+
			"--min-retention (%s) ago, so none is evicted for a new one; retry later", a.opts.MaxFinished, a.opts.MinRetention)
	}
	return fmt.Sprintf("the results held here take about %s, more than the %s this canaryd keeps (--max-retained-bytes), and the "+
		"analyses that hold them are running or finished less than --min-retention (%s) ago, so none is evicted for a new one; retry later",
		formatBytes(a.held.Bytes().Load()), formatBytes(a.opts.MaxRetainedBytes), a.opts.MinRetention)
}

// formatBytes writes a size the way the flags take it.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
