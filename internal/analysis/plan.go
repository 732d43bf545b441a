package analysis

import (
	"context"
	"slices"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
)

// DefaultErrorRetryInterval is how long the engine waits after an Error
// measurement before measuring again, whatever the metric's interval says
// (Argo Rollouts' DefaultErrorRetryInterval).
const DefaultErrorRetryInterval = 10 * time.Second

// DefaultMeasurementRetention is how many measurements of a metric are kept
// when no measurementRetention rule names it.
const DefaultMeasurementRetention = 10

// DefaultConsecutiveErrorLimit is Argo Rollouts' default consecutiveErrorLimit.
const DefaultConsecutiveErrorLimit = 4

// MaxValueBytes is the most bytes a measurement's value keeps, so that a
// finished analysis holds kilobytes a measurement however large its
// results were. Sources write values within it (the Prometheus source
// ends a long list with how many values it had: "[0.1,0.2,… (12000
// values)]"); the engine cuts any longer one, marking the cut.
const MaxValueBytes = 4096

// MaxMessageBytes is the most bytes a measurement's message keeps: an
// error can quote what it failed on (Argo's asFloat quotes the whole
// result; a proxy's error page can be megabytes), and the engine cuts it
// there, marking the cut.
const MaxMessageBytes = 4096

// Measurement metadata through which a judge metric's source tells scoring
// what the judge made of a measurement (see Plan.Scoring).
const (
	// MetadataClassification holds the judge's classification: Pass, High,
	// Low, Nodata, NodataFailMetric or Error.
	MetadataClassification = "classification"
	// MetadataCritical is "true" when the measurement fails the whole
	// canary (judge.Result.Critical), absent otherwise.
	MetadataCritical = "critical"
)

// Observation is what a Source saw when it took one measurement.
type Observation struct {
	// Value is given to the conditions as `result`.
	Value any
	// Display is the measurement's value as Argo writes it: "[0.995]", "NaN".
	Display string
	// Metadata is stored on the measurement (for example query warnings).
	Metadata map[string]string
	// Err, when set, makes the measurement an Error carrying its message.
	Err error
}

// Source takes one measurement of a metric as of the instant at. It must
// honour ctx and return promptly when it is cancelled.
type Source interface {
	Measure(ctx context.Context, at time.Time) Observation
}

// ContextBound is implemented by sources that return soon after the
// context they measure with is done, whatever they are waiting for (an HTTP
// request made with that context, for one). A caller that must answer by a
// deadline can then call such a source on its own goroutine rather than
// watch it from another.
type ContextBound interface {
	BoundByContext() bool
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, at time.Time) Observation

// Measure calls f.
func (f SourceFunc) Measure(ctx context.Context, at time.Time) Observation { return f(ctx, at) }

// Judge turns a measured value into a measurement phase. An error makes the
// measurement an Error with the error's text as its message.
type Judge interface {
	Judge(value any) (api.Phase, error)
}

// ContextJudge is a Judge that can be waited for with a context: it
// returns when ctx is done, with phase Error, even if the judging it started
// has not finished (condition.Conditions runs heavier conditions on a
// bounded pool this way). The engine uses it when a metric's Judge has it,
// so that a stopped measurement, a terminated analysis and a round past its
// deadline answer at once whatever a condition is doing.
type ContextJudge interface {
	JudgeContext(ctx context.Context, value any) (api.Phase, error)
}

// Metric is one metric of a plan, with its arguments resolved, its limits
// defaulted and its conditions compiled.
type Metric struct {
	Name string
	// Interval is the gap between the end of one measurement and the start
	// of the next; zero when the spec gives none.
	Interval time.Duration
	// InitialDelay delays the metric's first measurement from the start of
	// the analysis.
	InitialDelay time.Duration
	// Count is the effective count: the number of non-Error measurements to
	// take. Nil means the metric runs until it is terminated or a limit trips.
	Count *int32
	// FailureLimit of -1 disables the failure limit.
	FailureLimit            int32
	InconclusiveLimit       int32
	ConsecutiveErrorLimit   int32
	ConsecutiveSuccessLimit int32
	DryRun                  bool
	// Retention is how many measurements are kept (the newest).
	Retention int
	// SuccessCondition and FailureCondition are the condition texts, used
	// in messages that explain a verdict.
	SuccessCondition string
	FailureCondition string
	// Metadata is stored on the metric result (for example the resolved
	// query).
	Metadata map[string]string
	// NoData is the phase of a measurement that returns no data; empty
	// leaves it to the conditions, as Argo does. See IsNoData.
	NoData api.Phase
	// Group is the metric's group when the plan is scored; "" means
	// judge.DefaultGroup.
	Group string
	// Compared marks a judge metric: when the plan is scored, its outcome
	// is the classification its last measurement carries
	// (MetadataClassification), not its phase.
	Compared bool

	Source Source
	Judge  Judge
}

// EffectiveCount applies Argo's rule to a spec's count: a missing or zero
// count means one measurement when there is no interval and an indefinite
// metric when there is one.
func EffectiveCount(count int32, interval time.Duration) *int32 {
	if count != 0 {
		return &count
	}
	if interval == 0 {
		one := int32(1)
		return &one
	}
	return nil
}

// Plan is everything the engine needs to run one analysis.
type Plan struct {
	Metrics []Metric
	// Scoring, when set, scores the analysis as Kayenta scores a canary
	// and makes its phase follow the score (see AssessScored). Nil keeps
	// Argo Rollouts' semantics.
	Scoring *judge.ScoreConfig
}

// Copy returns a copy of p with a metric list of its own, for a caller
// that changes a metric (its source, its count) without changing p, which
// other runs may share.
func (p *Plan) Copy() *Plan {
	c := *p
	c.Metrics = slices.Clone(p.Metrics)
	return &c
}

// Counted is p as a run runs it: a metric with neither a count nor an
// interval is measured once (EffectiveCount), in a copy; p itself when
// every metric has one or the other. p is not changed (it may be a
// compiled spec that other requests share).
func (p *Plan) Counted() *Plan {
	counted := p
	for i := range p.Metrics {
		if m := &p.Metrics[i]; m.Count == nil && m.Interval == 0 {
			if counted == p {
				counted = p.Copy()
			}
			counted.Metrics[i].Count = EffectiveCount(0, 0)
		}
	}
	return counted
}
