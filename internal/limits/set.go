package limits

import "time"

// Limits are the bounds of one canaryd, one field a limit: the service's
// flags set them (internal/config), the HTTP server and the analyses
// enforce them, and internal/compile checks a spec against those of a
// spec. A zero field bounds nothing, which is what the command line
// compiles with: a spec run by its own author needs no protection from
// itself. A service fills the fields left zero with WithDefaults, so that
// none of its bounds can be switched off.
type Limits struct {
	// MaxMetrics is the most metrics one analysis may have: its spec is
	// refused on "metrics" before anything else of it is looked at.
	MaxMetrics int
	// MaxConditionLength bounds each successCondition or failureCondition
	// in bytes (checked before it is parsed), and MaxConditionNodes its
	// syntax tree (expr's node budget).
	MaxConditionLength int
	MaxConditionNodes  uint
	// MaxAnalysisDuration is how long an analysis may run. A metric whose
	// schedule alone (initialDelay + (count − 1) × interval) is longer
	// could only end in an Error, so it is refused on its count. Zero is
	// no bound, also after WithDefaults (--max-analysis-duration 0); a
	// backtest, which runs in virtual time within its own window, is
	// compiled without it.
	MaxAnalysisDuration time.Duration
	// MaxQueryLength bounds each query (a provider's query, a judge's
	// canary and baseline) and MaxFieldLength every other string field but
	// the conditions, in bytes with the arguments substituted;
	// MaxResolvedSize bounds all of a spec's metrics together. Each is
	// checked from the lengths of the values and the number of tags,
	// before anything substituted is built.
	MaxQueryLength  int
	MaxFieldLength  int
	MaxResolvedSize int
	// VerbatimArgs substitutes the arguments of Argo documents
	// (argoproj.io/v1alpha1) as they are, as Argo Rollouts does, rather
	// than escaping or checking them: not a bound but the lifting of one,
	// for a canaryd whose callers are all trusted with the structure of
	// every query and condition.
	VerbatimArgs bool

	// MaxStreams is how many streams may follow one analysis at once.
	MaxStreams int
	// MaxRounds is how many rounds (the evaluate endpoints) and gates may
	// be answered at once.
	MaxRounds int
	// MaxJudgeLooks is the most looks one POST /v1/judge may post, and
	// the most intervals of the baseline's history beside them.
	MaxJudgeLooks int
	// MaxReportRenders is how many HTML reports may be drawn at once,
	// ReportQueryRate how many range queries a second they may send, all
	// together, and ReportCacheBytes bounds the bands and series kept for
	// reports drawn again.
	MaxReportRenders int
	ReportQueryRate  int
	ReportCacheBytes int64
	// MaxQueryTimeout caps a metric's query timeout: a longer one is
	// lowered to it, as Prometheus lowers a query's timeout to its own
	// --query.timeout.
	MaxQueryTimeout time.Duration
	// MaxResultValues is the most values a query's result may have (a
	// vector's samples, a matrix's points); a measurement with more is an
	// Error naming it, found while the response is decoded.
	MaxResultValues int
	// MaxBacktests is how many backtests may run at once.
	MaxBacktests int
	// MaxBacktestWindow is the longest stretch of history, from start to
	// end, a backtest may replay, MaxBacktestStarts the most analyses one
	// backtest series may start (window ÷ every), and
	// MaxBacktestMeasurements bounds the measurements one backtest request
	// may take, estimated from its schedule before it runs.
	MaxBacktestWindow       time.Duration
	MaxBacktestStarts       int
	MaxBacktestMeasurements int
	// MaxRetainedBytes bounds the results held in memory (running and
	// finished analyses, estimated from what they recorded); finished
	// ones are evicted oldest first to stay under it.
	MaxRetainedBytes int64
	// MinRetention is how long a finished analysis is kept at least,
	// whatever MaxRetainedBytes and --max-finished say: a new analysis is
	// refused rather than evict a younger one.
	MinRetention time.Duration
}

// Default returns every limit at its default, the constant of the same
// name.
func Default() Limits {
	return Limits{
		MaxMetrics:              MaxMetrics,
		MaxConditionLength:      MaxConditionLength,
		MaxConditionNodes:       MaxConditionNodes,
		MaxAnalysisDuration:     MaxAnalysisDuration,
		MaxQueryLength:          MaxQueryLength,
		MaxFieldLength:          MaxFieldLength,
		MaxResolvedSize:         MaxResolvedSize,
		MaxStreams:              MaxStreams,
		MaxRounds:               MaxRounds,
		MaxJudgeLooks:           MaxJudgeLooks,
		MaxReportRenders:        MaxReportRenders,
		ReportQueryRate:         ReportQueryRate,
		ReportCacheBytes:        ReportCacheBytes,
		MaxQueryTimeout:         MaxQueryTimeout,
		MaxResultValues:         MaxResultValues,
		MaxBacktests:            MaxBacktests,
		MaxBacktestWindow:       MaxBacktestWindow,
		MaxBacktestStarts:       MaxBacktestStarts,
		MaxBacktestMeasurements: MaxBacktestMeasurements,
		MaxRetainedBytes:        MaxRetainedBytes,
		MinRetention:            MinRetention,
	}
}

// WithDefaults returns l with each bound left zero (or negative) at its
// default. MaxAnalysisDuration, whose zero is no bound, and VerbatimArgs
// are kept as they are.
func (l Limits) WithDefaults() Limits {
	fill(&l.MaxMetrics, MaxMetrics)
	fill(&l.MaxConditionLength, MaxConditionLength)
	fill(&l.MaxConditionNodes, MaxConditionNodes)
	fill(&l.MaxQueryLength, MaxQueryLength)
	fill(&l.MaxFieldLength, MaxFieldLength)
	fill(&l.MaxResolvedSize, MaxResolvedSize)
	fill(&l.MaxStreams, MaxStreams)
	fill(&l.MaxRounds, MaxRounds)
	fill(&l.MaxJudgeLooks, MaxJudgeLooks)
	fill(&l.MaxReportRenders, MaxReportRenders)
	fill(&l.ReportQueryRate, ReportQueryRate)
	fill(&l.ReportCacheBytes, ReportCacheBytes)
	fill(&l.MaxQueryTimeout, MaxQueryTimeout)
	fill(&l.MaxResultValues, MaxResultValues)
	fill(&l.MaxBacktests, MaxBacktests)
	fill(&l.MaxBacktestWindow, MaxBacktestWindow)
	fill(&l.MaxBacktestStarts, MaxBacktestStarts)
	fill(&l.MaxBacktestMeasurements, MaxBacktestMeasurements)
	fill(&l.MaxRetainedBytes, MaxRetainedBytes)
	fill(&l.MinRetention, MinRetention)
	return l
}

// SpecLimits are the limits a service compiles a spec with
// (compile.WithLimits): l with its defaults, and maxDuration as the bound
// on an analysis' duration, 0 for none (a backtest's).
func (l Limits) SpecLimits(maxDuration time.Duration) Limits {
	l = l.WithDefaults()
	l.MaxAnalysisDuration = maxDuration
	return l
}

// fill sets *v to d when it is not positive.
func fill[T int | int64 | uint | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
