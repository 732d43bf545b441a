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

// Option configures Compile.
type Option func(*compileOptions)

type compileOptions struct {
	limits   limits.Limits
	programs *condition.Programs
	backtest bool // ForBacktest
}

// WithLimits makes Compile refuse what goes beyond l, whose zero fields
// bound nothing (limits.Limits).
func WithLimits(l limits.Limits) Option { return func(o *compileOptions) { o.limits = l } }

// resolveOptions are the options of spec.Spec.Resolve for l, for the spec
// of an argoproj.io/v1alpha1 document when argo is set: the bounds on the
// resolved text, and which arguments are secret (IsSecretArg).
func resolveOptions(l limits.Limits, argo bool) spec.ResolveOptions {
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
func conditionOptions(l limits.Limits) []condition.Option {
	return []condition.Option{condition.MaxLength(l.MaxConditionLength), condition.MaxNodes(l.MaxConditionNodes)}
}

// checkMetricCount refuses a spec with more metrics than MaxMetrics.
func checkMetricCount(l limits.Limits, s *spec.Spec) []api.FieldError {
	if l.MaxMetrics <= 0 || len(s.Metrics) <= l.MaxMetrics {
		return nil
	}
	return []api.FieldError{{Field: "metrics", Message: fmt.Sprintf(
		"the spec has %d metrics, more than the %d this canaryd runs in one analysis (--max-metrics)", len(s.Metrics), l.MaxMetrics)}}
}

// checkSchedule refuses a metric whose schedule cannot fit in
// MaxAnalysisDuration. The field is the metric's count, which is what
// makes a schedule long, unless the initialDelay alone is too long.
func checkSchedule(l limits.Limits, m *analysis.Metric) []api.FieldError {
	if l.MaxAnalysisDuration <= 0 || m.Count == nil || *m.Count < 1 {
		return nil
	}
	need := scheduleLength(m.InitialDelay, *m.Count, m.Interval)
	if need <= l.MaxAnalysisDuration {
		return nil
	}
	if m.InitialDelay > l.MaxAnalysisDuration {
		return []api.FieldError{{Field: "initialDelay", Message: fmt.Sprintf(
			"an initialDelay of %s is longer than an analysis may run here (--max-analysis-duration %s); it could only end with phase Error",
			m.InitialDelay, l.MaxAnalysisDuration)}}
	}
	return []api.FieldError{{Field: "count", Message: fmt.Sprintf(
		"%d measurements %s apart (after an initialDelay of %s) take at least %s, longer than an analysis may run here (--max-analysis-duration %s); it could only end with phase Error",
		*m.Count, m.Interval, m.InitialDelay, need, l.MaxAnalysisDuration)}}
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
