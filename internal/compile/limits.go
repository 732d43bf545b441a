package compile

import (
	"fmt"
	"math"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/spec"
)

// Limits bound what a spec may ask of the service that runs it. Each
// field's zero value means no bound, which is what the command line runs
// with: a spec run by its own author needs no protection from itself.
type Limits struct {
	// MaxMetrics is the most metrics a spec may have. A spec with more is
	// refused on "metrics" before anything else of it is looked at.
	MaxMetrics int
	// MaxConditionLength and MaxConditionNodes bound each condition: its
	// length in bytes (checked before it is parsed) and its syntax tree
	// (expr's node budget). See condition.MaxLength, condition.MaxNodes.
	MaxConditionLength int
	MaxConditionNodes  uint
	// MaxDuration is how long an analysis may run. A metric with a count
	// whose schedule alone (initialDelay + (count − 1) × interval) is
	// longer could only end in an Error at MaxDuration, so it is refused
	// on its count. Metrics without a count run until terminated; the
	// run's own MaxDuration ends them.
	MaxDuration time.Duration
	// MaxQueryLength bounds each query (provider.prometheus.query, a
	// judge's canary and baseline) and MaxFieldLength every other string
	// field but the conditions (which MaxConditionLength bounds), in bytes
	// with the arguments substituted; MaxResolvedSize bounds all of a
	// spec's metrics together (their JSON, the values substituted). Each
	// is checked from the lengths of the values and the number of tags,
	// before anything substituted is built.
	MaxQueryLength  int
	MaxFieldLength  int
	MaxResolvedSize int
	// VerbatimArgs substitutes the arguments of an Argo document
	// (argoproj.io/v1alpha1) as they are, as Argo Rollouts does, without
	// escaping or checking them (see spec.Spec.Resolve). It is not a bound but
	// the lifting of one, for an operator whose callers are all trusted
	// with the structure of every query and condition.
	VerbatimArgs bool
}

// Defaults of the fixed limits on a resolved spec, which a service sets
// (the command line runs without limits).
const (
	DefaultMaxFieldLength  = limits.MaxFieldLength
	DefaultMaxResolvedSize = limits.MaxResolvedSize
)

// Option configures Compile.
type Option func(*compileOptions)

type compileOptions struct {
	limits   Limits
	programs *condition.Programs
}

// WithLimits makes Compile refuse what goes beyond l.
func WithLimits(l Limits) Option { return func(o *compileOptions) { o.limits = l } }

// resolveOptions are the options of spec.Spec.Resolve for l, for the spec
// of an argoproj.io/v1alpha1 document when argo is set: the bounds on the
// resolved text, and which arguments are secret (IsSecretArg).
func (l Limits) resolveOptions(argo bool) spec.ResolveOptions {
	return spec.ResolveOptions{
		SecretArg:          IsSecretArg,
		Conditions:         condition.Expr,
		MaxQueryLength:     l.MaxQueryLength,
		MaxConditionLength: l.MaxConditionLength,
		MaxFieldLength:     l.MaxFieldLength,
		MaxResolvedSize:    l.MaxResolvedSize,
		Argo:               argo,
		VerbatimArgs:       l.VerbatimArgs,
	}
}

// conditionOptions are the condition package's options for l.
func (l Limits) conditionOptions() []condition.Option {
	return []condition.Option{condition.MaxLength(l.MaxConditionLength), condition.MaxNodes(l.MaxConditionNodes)}
}

// checkMetricCount refuses a spec with more metrics than MaxMetrics.
func (l Limits) checkMetricCount(s *spec.Spec) []api.FieldError {
	if l.MaxMetrics <= 0 || len(s.Metrics) <= l.MaxMetrics {
		return nil
	}
	return []api.FieldError{{Field: "metrics", Message: fmt.Sprintf(
		"the spec has %d metrics, more than the %d this canaryd runs in one analysis (--max-metrics)", len(s.Metrics), l.MaxMetrics)}}
}

// checkSchedule refuses a metric whose schedule cannot fit in MaxDuration.
// The field is the metric's count, which is what makes a schedule long,
// unless the initialDelay alone is too long.
func (l Limits) checkSchedule(m *analysis.Metric) []api.FieldError {
	if l.MaxDuration <= 0 || m.Count == nil || *m.Count < 1 {
		return nil
	}
	need := scheduleLength(m.InitialDelay, *m.Count, m.Interval)
	if need <= l.MaxDuration {
		return nil
	}
	if m.InitialDelay > l.MaxDuration {
		return []api.FieldError{{Field: "initialDelay", Message: fmt.Sprintf(
			"an initialDelay of %s is longer than an analysis may run here (--max-analysis-duration %s); it could only end with phase Error",
			m.InitialDelay, l.MaxDuration)}}
	}
	return []api.FieldError{{Field: "count", Message: fmt.Sprintf(
		"%d measurements %s apart (after an initialDelay of %s) take at least %s, longer than an analysis may run here (--max-analysis-duration %s); it could only end with phase Error",
		*m.Count, m.Interval, m.InitialDelay, need, l.MaxDuration)}}
}

// scheduleLength is the least time count measurements take: initialDelay,
// then count − 1 intervals between them. It saturates at the largest
// duration rather than overflow.
func scheduleLength(initialDelay time.Duration, count int32, interval time.Duration) time.Duration {
	gaps := float64(count-1) * float64(interval)
	total := gaps + float64(initialDelay)
	if total >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(total)
}
