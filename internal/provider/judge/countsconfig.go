package judge

import (
	"fmt"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	stats "github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/spec"
)

// The conditions of a counts metric that sets neither: the count test's
// continue and Successful are Successful, its Failed is Failed, and its
// Inconclusive (the last look's rule, or no events on a side by then) is
// Inconclusive.
const (
	DefaultCountsSuccessCondition = `result.decision in ['continue', 'Successful']`
	DefaultCountsFailureCondition = `result.decision == 'Failed'`
)

// CountConfig is the count test's configuration of a validated counts
// metric.
func (j *Metric) CountConfig() stats.CountConfig {
	return stats.CountConfig{Alpha: deref(j.Alpha), Tolerance: deref(j.Tolerance), Direction: stats.Direction(j.Direction)}
}

// DefaultHistoryStep is counts.history.step when it is not given: the
// baseline's history is read in intervals of five minutes.
const DefaultHistoryStep = 5 * time.Minute

// MaxHistoryIntervals is the most intervals a history may have
// (counts.history.lookback / counts.history.step): the 11,000 points a
// series of a range query that Prometheus returns at most. The
// datasource's --max-result-values bounds them too (a history of n
// intervals is n+1 values a series).
const MaxHistoryIntervals = maxPoints

// HistoryWindow is a validated counts metric's history: its lookback and
// step; zero without counts.history.
func (j *Metric) HistoryWindow() (lookback, step time.Duration) {
	if j.Counts == nil || j.Counts.History == nil {
		return 0, 0
	}
	h := j.Counts.History
	lookback, _ = time.ParseDuration(h.Lookback)
	step = DefaultHistoryStep
	if h.Step != "" {
		step, _ = time.ParseDuration(h.Step)
	}
	return lookback, step
}

// validateCounts checks a counts metric (see Validate):
//
//   - each side's bad and total are given;
//   - none of the sample judge's own fields is (canary, baseline, control,
//     lookback, step, nanStrategy, removeOutliers, outlierFactor,
//     confidenceLevel, effectSize, mustHaveData);
//   - alpha is in (0, 0.5], tolerance a positive rate ratio, direction
//     increase or decrease;
//   - counts.history, when given, has a lookback; its lookback and step
//     are positive durations, step at most lookback, and lookback/step at
//     most MaxHistoryIntervals;
//   - the timeout is not negative.
func (j *Metric) validateCounts(path string) []api.FieldError {
	errs := spec.StructRules(path+".counts", j.Counts)
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: strings.TrimSuffix(path+"."+field, "."), Message: fmt.Sprintf(format, args...)})
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"canary", j.Canary != ""}, {"baseline", j.Baseline != ""}, {"control", j.Control != nil},
		{"lookback", j.Lookback != ""}, {"step", j.Step != ""}, {"nanStrategy", j.NaNStrategy != ""},
		{"removeOutliers", j.RemoveOutliers}, {"outlierFactor", j.OutlierFactor != nil},
		{"confidenceLevel", j.ConfidenceLevel != nil}, {"effectSize", j.EffectSize != nil},
		{"mustHaveData", j.MustHaveData},
	} {
		if f.set {
			add(f.name, "%s is the sample judge's and does not apply with counts, which counts events from the analysis' start "+
				"with the four counters of counts.canary and counts.baseline", f.name)
		}
	}
	if a := j.Alpha; a != nil && !(*a > 0 && *a <= stats.MaxCountAlpha) {
		add("alpha", "alpha must be above 0 and at most %v (default %v), got %v", stats.MaxCountAlpha, stats.DefaultCountAlpha, *a)
	}
	if t := j.Tolerance; t != nil && !positive(*t) {
		add("tolerance", "tolerance with counts is the rate ratio canary/baseline that is still fine, a positive number "+
			"(default %v; 1.2 tolerates 20%% more), got %v", stats.DefaultCountTolerance, *t)
	}
	switch j.Direction {
	case "", string(stats.DirectionIncrease), string(stats.DirectionDecrease):
	default:
		add("direction", "direction with counts must be one of increase, decrease (the change of the rate of bad events that fails), got %q", j.Direction)
	}
	if j.Timeout != nil && *j.Timeout < 0 {
		add("timeout", "timeout should not be negative")
	}
	if j.Counts.History != nil {
		validateHistory(add, j.Counts.History)
	}
	if len(errs) == 0 {
		// The backstop that keeps these rules and the count test's in step.
		if err := j.CountConfig().WithDefaults().Validate(); err != nil {
			add("", "%s", err.Error())
		}
	}
	return errs
}

// validateHistory checks counts.history's durations (a missing lookback
// is reported by its required tag).
func validateHistory(add func(field, format string, args ...any), h *CountHistory) {
	lookback, lookbackOK := positiveDuration(add, "counts.history.lookback", h.Lookback)
	step, stepOK, stepText := DefaultHistoryStep, true, DefaultHistoryStep.String()+" (the default)"
	if h.Step != "" {
		step, stepOK = positiveDuration(add, "counts.history.step", h.Step)
		stepText = h.Step
	}
	if !lookbackOK || !stepOK {
		return
	}
	switch {
	case step > lookback:
		add("counts.history.step", "step %s must not be longer than the history's lookback %s", stepText, h.Lookback)
	case lookback/step > MaxHistoryIntervals:
		add("counts.history.step", "a history of %s at a step of %s is %d intervals, more than the %d points a series Prometheus returns: make step longer or lookback shorter",
			h.Lookback, stepText, lookback/step, MaxHistoryIntervals)
	}
}
