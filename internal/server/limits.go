package server

import (
	"time"

	"github.com/canaryd/canaryd/internal/limits"
)

// Limits bound what one caller can make this canaryd do. A zero field takes
// its default (DefaultLimits); none can be switched off. The limits of
// analyses running at once (AnalysesOptions.MaxRunning), of backtests
// (MaxBacktests), of streams following one analysis (MaxStreams) and of an
// analysis' duration (MaxDuration) are the Analyses' to enforce.
type Limits struct {
	// MaxMetrics is the most metrics one analysis may have: a 400 on
	// metrics beyond it.
	MaxMetrics int
	// MaxConditionLength bounds each condition's length in bytes, and
	// MaxConditionNodes its syntax tree (expr's node budget): a 400 on the
	// condition beyond either.
	MaxConditionLength int
	MaxConditionNodes  uint
	// MaxQueryLength bounds each query, with its arguments substituted, in
	// bytes: a 400 on the query beyond it. Every other field of a spec is
	// bounded by limits.MaxFieldLength, and all of its metrics by
	// limits.MaxResolvedSize, both checked before anything
	// substituted is built.
	MaxQueryLength int
	// VerbatimArgs substitutes the arguments of Argo documents as they
	// are, as Argo Rollouts does (limits.Limits.VerbatimArgs). It lifts a
	// bound rather than sets one, and travels with the limits because
	// every spec of the server is compiled with them.
	VerbatimArgs bool
	// MaxBacktestWindow is the longest history a backtest may replay, from
	// start to end: a 400 on end beyond it.
	MaxBacktestWindow time.Duration
	// MaxBacktestStarts is the most analyses one backtest series may start:
	// a 400 on every beyond it.
	MaxBacktestStarts int
	// MaxBacktestMeasurements bounds the measurements one backtest request
	// may take, estimated from the schedule before it runs: a 400 on every
	// (or end) beyond it.
	MaxBacktestMeasurements int
	// MaxJudgeLooks is the most looks one POST /v1/judge may post: a 400
	// on looks beyond it.
	MaxJudgeLooks int
}

// Defaults of Limits, from the one home of every limit's default.
const (
	DefaultMaxMetrics              = limits.MaxMetrics
	DefaultMaxConditionLength      = limits.MaxConditionLength
	DefaultMaxConditionNodes       = limits.MaxConditionNodes
	DefaultMaxQueryLength          = limits.MaxQueryLength
	DefaultMaxBacktestWindow       = limits.MaxBacktestWindow
	DefaultMaxBacktestStarts       = limits.MaxBacktestStarts
	DefaultMaxBacktestMeasurements = limits.MaxBacktestMeasurements
	DefaultMaxJudgeLooks           = limits.MaxJudgeLooks
)

// DefaultLimits returns the limits of a server whose Options set none.
func DefaultLimits() Limits {
	return Limits{
		MaxMetrics:              DefaultMaxMetrics,
		MaxConditionLength:      DefaultMaxConditionLength,
		MaxConditionNodes:       DefaultMaxConditionNodes,
		MaxQueryLength:          DefaultMaxQueryLength,
		MaxBacktestWindow:       DefaultMaxBacktestWindow,
		MaxBacktestStarts:       DefaultMaxBacktestStarts,
		MaxBacktestMeasurements: DefaultMaxBacktestMeasurements,
		MaxJudgeLooks:           DefaultMaxJudgeLooks,
	}
}

// withDefaults fills the fields left zero.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxMetrics <= 0 {
		l.MaxMetrics = d.MaxMetrics
	}
	if l.MaxConditionLength <= 0 {
		l.MaxConditionLength = d.MaxConditionLength
	}
	if l.MaxConditionNodes == 0 {
		l.MaxConditionNodes = d.MaxConditionNodes
	}
	if l.MaxQueryLength <= 0 {
		l.MaxQueryLength = d.MaxQueryLength
	}
	if l.MaxBacktestWindow <= 0 {
		l.MaxBacktestWindow = d.MaxBacktestWindow
	}
	if l.MaxBacktestStarts <= 0 {
		l.MaxBacktestStarts = d.MaxBacktestStarts
	}
	if l.MaxBacktestMeasurements <= 0 {
		l.MaxBacktestMeasurements = d.MaxBacktestMeasurements
	}
	if l.MaxJudgeLooks <= 0 {
		l.MaxJudgeLooks = d.MaxJudgeLooks
	}
	return l
}

// SpecLimits are the limits a spec is compiled with on this server; a
// template store checks its templates with them too, so that a template
// that no request could run is flagged when it loads. maxDuration is the
// analyses' --max-analysis-duration (0: no bound).
func (l Limits) SpecLimits(maxDuration time.Duration) limits.Limits {
	l = l.withDefaults()
	return limits.Limits{
		MaxMetrics:          l.MaxMetrics,
		MaxConditionLength:  l.MaxConditionLength,
		MaxConditionNodes:   l.MaxConditionNodes,
		MaxAnalysisDuration: maxDuration,
		MaxQueryLength:      l.MaxQueryLength,
		MaxFieldLength:      limits.MaxFieldLength,
		MaxResolvedSize:     limits.MaxResolvedSize,
		VerbatimArgs:        l.VerbatimArgs,
	}
}
