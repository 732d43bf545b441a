// Package limits is the one home of canaryd's bounds, on what one request
// can make it spend (memory, CPU time, goroutines, bytes sent onwards) and
// on what it keeps: their defaults, and Limits, the bounds of one canaryd.
// Each constant is the default of the limit of the same name; the packages
// that enforce a limit read its default from here, and internal/config
// offers it as the default of the limit's flag (--max-metrics for
// MaxMetrics), so that a default is written once. The service's flags fill
// a Limits (internal/config), which the server, the analyses and the
// compilation of specs (compile.WithLimits) are given.
//
// The package holds values only: it imports nothing of canaryd, so that
// every package can import it.
package limits

import "time"

// Bounds of one analysis' spec, checked when it is compiled.
const (
	// MaxMetrics is the most metrics one analysis may have.
	MaxMetrics = 50
	// MaxConditionLength is the longest successCondition or
	// failureCondition, in bytes.
	MaxConditionLength = 4096
	// MaxConditionNodes bounds a condition's syntax tree (expr's node
	// budget): far above any condition a person writes (Argo's examples
	// have a dozen nodes) and far below expr's own budget of 10,000, each
	// node being work at every measurement.
	MaxConditionNodes = 1000
	// MaxQueryLength is the longest query, in bytes, with its arguments
	// substituted: several times the longest query of Argo's and Flagger's
	// examples, and a sixtieth of what one body could make of a query
	// without it.
	MaxQueryLength = 16 << 10
	// MaxFieldLength bounds every other field of a resolved spec: far
	// above any name, duration, address or header value (a JWT is a few
	// KiB) and the largest header a server accepts by default.
	MaxFieldLength = 8 << 10
	// MaxResolvedSize bounds all the metrics of a resolved spec: as much
	// as the largest body a service reads (MaxBodyBytes), so substitution
	// may fill a spec up to that size, not beyond.
	MaxResolvedSize = 1 << 20
	// MaxAnalysisDuration is the longest an analysis may run.
	MaxAnalysisDuration = 24 * time.Hour
)

// Bounds of a request and of the work it starts.
const (
	// MaxBodyBytes bounds a request body: an AnalysisTemplate is a few
	// kilobytes, kubectl's managedFields included.
	MaxBodyBytes = 1 << 20
	// MaxYAMLNodes bounds the nodes of a YAML document (its scalars, keys
	// included, lists, objects and aliases), bounded from its bytes before
	// it is parsed and counted in its tree after (internal/spec), so that
	// what reading it costs is bounded by its structure and not only by
	// its bytes: a megabyte of "[1,1,1,…" is half a million nodes, some
	// 120 MB as a tree. An AnalysisTemplate has a few hundred nodes,
	// kubectl's managedFields and an AnalysisRun's status a few thousand;
	// 20,000 nodes take a few megabytes.
	MaxYAMLNodes = 20_000
	// MaxDecodes is how many request bodies may be decoded (parsed,
	// checked and compiled) at once; a request beyond it waits for a slot
	// (MaxDecodeWaiters, DecodeWait) or gets 429. Each decode is bounded by MaxBodyBytes and
	// MaxYAMLNodes; four at once keep what a burst of the costliest
	// bodies can take to some tens of megabytes, with both of a 2-core
	// canaryd's cores busy.
	MaxDecodes = 4
	// MaxDecodeWaiters is how many request bodies may wait for one of the
	// MaxDecodes slots, each at most DecodeWait; one more, or one that
	// waited that long, gets 429. A burst of small templates (fifty
	// pipelines posting at once) waits microseconds for its turn, while
	// the bodies waiting, each already read and within MaxBodyBytes, are
	// bounded in number and in time.
	MaxDecodeWaiters = 64
	DecodeWait       = time.Second
	// MaxJudgeLooks is the most looks one POST /v1/judge may post, and
	// the most intervals of the baseline's history beside them. A 1 MiB
	// body holds some 15,000 looks; 10,000 are a look a minute for a week,
	// and some tens of milliseconds of the count test.
	MaxJudgeLooks = 10_000
	// MaxAnalyses is how many analyses may run at once.
	MaxAnalyses = 100
	// MaxStreams is how many streams may follow one analysis at once:
	// more than a dashboard and a few pipelines would ever open.
	MaxStreams = 64
	// MaxRounds is how many rounds (the evaluate endpoints) and gates may
	// be answered at once. A round's work is a query per metric and a
	// condition per measurement; 64 at once keep a 2-core canaryd
	// responsive (its /healthz answering in milliseconds) with room for a
	// few dozen pipelines asking together.
	MaxRounds = 64
	// EvaluateTimeout bounds a round of the evaluate endpoints when the
	// caller sets no deadline: below the 10 s after which Argo Rollouts'
	// web provider gives up, so that Argo reads canaryd's answer (an Error
	// round, 503) rather than a timeout of its own.
	EvaluateTimeout = 8 * time.Second
	// MaxWebhookBacklog is how many analyses may have webhook deliveries
	// owed at once: twice MaxAnalyses, room for every analysis that may run
	// to have a webhook, and as many again whose last deliveries are still
	// being retried.
	MaxWebhookBacklog = 2 * MaxAnalyses
)

// Bounds of what a query may cost and return.
const (
	// MaxQueryTimeout caps a metric's Prometheus timeout.
	MaxQueryTimeout = time.Minute
	// MaxResultValues is the most values a query's result may have (a
	// vector's samples, a matrix's points): far more than a condition
	// needs to judge (a range query of an hour at a 15s step is 240 points
	// a series), few enough that a result costs at most a few hundred
	// kilobytes and its conditions tens of milliseconds.
	MaxResultValues = 10_000
	// ResponseBytesPerValue is what one value of a result may take in a
	// Prometheus answer, its series' labels included: an answer longer
	// than MaxResultValues (as set) times this, plus ResponseBytesFixed,
	// is an Error, read no further.
	ResponseBytesPerValue = 1 << 10
	// ResponseBytesFixed is the part of an answer's bound that does not
	// grow with the values: the envelope, warnings and annotations.
	ResponseBytesFixed = 64 << 10
	// MaxResponseBytesInFlight bounds the bytes of Prometheus answers
	// being read at once, by every measurement together: a read beyond it
	// waits, within its query's timeout, for others to finish. With
	// ResponseBytesPerValue it keeps a burst of large answers (a dozen
	// subqueries of millions of samples at once) from taking the process'
	// memory.
	MaxResponseBytesInFlight = 64 << 20
)

// Bounds of backtests.
const (
	// MaxBacktests is how many backtests may run at once: a backtest sends
	// its queries as fast as Prometheus answers them, so a few at once are
	// as many as a Prometheus should take from one canaryd.
	MaxBacktests = 4
	// MaxBacktestWindow is the longest stretch of history, from start to
	// end, a backtest may replay: 31 days.
	MaxBacktestWindow = 31 * 24 * time.Hour
	// MaxBacktestStarts is the most analyses one backtest series may start.
	MaxBacktestStarts = 1000
	// MaxBacktestMeasurements bounds the measurements one backtest request
	// may take, estimated from its schedule before it runs.
	MaxBacktestMeasurements = 50000
)

// Bounds of the results kept in memory.
const (
	// MaxFinished is how many finished analyses are kept readable.
	MaxFinished = 1000
	// MaxRetainedBytes bounds the results held: room for MaxFinished
	// analyses of some 60 KiB each, a quarter of the shipped Deployment's
	// 256 MiB, beside what measurements in flight take.
	MaxRetainedBytes = 64 << 20
	// MinRetention is how long a finished analysis is kept at least: long
	// enough for a caller that polls (Argo, Spinnaker, a pipeline) to read
	// a result it was told is ready.
	MinRetention = time.Minute
)

// Bounds of the HTML reports (GET /v1/analyses/{id} with Accept:
// text/html), which anyone who may read an analysis may ask for as often
// as they like.
const (
	// MaxReportRenders is how many HTML reports may be drawn at once: a
	// report is a query per metric and a few seconds of conditions at
	// most, and a few at once are as many as people reading them need.
	MaxReportRenders = 4
	// ReportCacheBytes bounds the shaded bands and the series kept for
	// reports drawn again: a finished analysis' do not change. A series
	// chart is at most 8 series of 240 points, some 50 KiB.
	ReportCacheBytes = 32 << 20
	// ReportQueryRate is how many range queries a second the HTML reports
	// may send to Prometheus, all reports together: a dashboard's worth,
	// far below what a Prometheus answers.
	ReportQueryRate = 10
)
