package judge

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	stats "github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is canaryd's judge provider configuration, a metric's
// provider.judge: each measurement range-queries a canary query and a
// baseline query over the same window and compares the two samples as
// Kayenta's NetflixACAJudge does (see internal/judge). The result the
// conditions see is an object with the classification (Pass, High, Low,
// Nodata, NodataFailMetric) and the numbers behind it.
//
// It is an extension: a bare spec or a canaryd template (apiVersion
// canaryd.io/v1alpha1) may use it, an argoproj.io/v1alpha1 document may
// not, since Argo Rollouts could not run the metric (internal/spec refuses
// it there).
//
// The connection fields (address, authentication, timeout, insecure,
// headers) are the Prometheus provider's, with its allow-lists; both
// queries go through it.
type Metric struct {
	Address        string                    `json:"address,omitempty"`
	Authentication prometheus.Authentication `json:"authentication,omitempty"`
	// Timeout is in seconds, per query; nil means 30.
	Timeout  *int64              `json:"timeout,omitempty"`
	Insecure bool                `json:"insecure,omitempty"`
	Headers  []prometheus.Header `json:"headers,omitempty"`

	// Counts, instead of Canary and Baseline, judges the canary's rate of
	// bad events against the baseline's from four counters, by the
	// sequential count test (see CountsMetric). With it, Alpha, Tolerance
	// and Direction are the count test's, and the sample judge's fields
	// are refused.
	Counts *Counts `json:"counts,omitempty"`
	// Alpha is the count test's bound on a false verdict, at any number of
	// looks: (0, 0.5], default 0.05. Only with Counts.
	Alpha *float64 `json:"alpha,omitempty"`

	// Canary is the PromQL query of the canary's metric.
	Canary string `json:"canary,omitempty" validate:"required"`
	// Baseline is the PromQL query of the baseline's metric, queried over
	// the same window. Exactly one of Baseline and Control is set.
	Baseline string `json:"baseline,omitempty"`
	// Control compares the canary query with itself Control.Offset
	// earlier, instead of with a baseline query (Kayenta's
	// controlOffsetInMinutes).
	Control *Control `json:"control,omitempty"`
	// Lookback is the window of each measurement, ending at the
	// measurement's instant; Step is the resolution of the range queries.
	// Both are Go durations ("30m", "1m").
	Lookback string `json:"lookback,omitempty" validate:"required"`
	Step     string `json:"step,omitempty" validate:"required"`

	// Direction is increase, decrease or either (the default): which
	// change fails. With Counts it is increase (the default) or decrease:
	// which change of the rate of bad events fails.
	Direction string `json:"direction,omitempty" validate:"omitempty,oneof=increase decrease either"`
	// NaNStrategy is remove (the default) or replace (NaN counts as 0).
	NaNStrategy string `json:"nanStrategy,omitempty" validate:"omitempty,oneof=remove replace"`
	// RemoveOutliers drops each sample's outliers by Kayenta's IQR rule,
	// with OutlierFactor (default 3) as the IQR multiplier.
	RemoveOutliers bool     `json:"removeOutliers,omitempty"`
	OutlierFactor  *float64 `json:"outlierFactor,omitempty"`
	// ConfidenceLevel is that of the interval of the shift (default
	// 0.98); Tolerance the band ±Tolerance·|estimate| that interval must
	// clear (default 0.25). With Counts, Tolerance is the rate ratio
	// canary/baseline that is still fine (default 1: any rise fails; 1.2
	// tolerates 20% more bad events per event).
	ConfidenceLevel *float64 `json:"confidenceLevel,omitempty"`
	Tolerance       *float64 `json:"tolerance,omitempty"`
	// EffectSize sets the measure and the sizes of change that count.
	EffectSize *EffectSize `json:"effectSize,omitempty"`
	// MustHaveData makes a sample without data NodataFailMetric, a
	// failure, rather than Nodata.
	MustHaveData bool `json:"mustHaveData,omitempty"`
	// Critical and Group are for scoring: a critical metric's failure
	// fails the whole analysis, and Group names the metric's scoring group
	// (default "default"). Both need the spec's scoring.
	Critical bool   `json:"critical,omitempty"`
	Group    string `json:"group,omitempty"`
}

// Counts are the four counters of a count judge: each side's bad events
// and total events, as PromQL expressions of cumulative counters
// (istio_requests_total, a histogram's _bucket and _count).
type Counts struct {
	Canary   CountQueries `json:"canary"`
	Baseline CountQueries `json:"baseline"`
	// History, when given, asks Prometheus for the baseline's counters
	// over the Lookback before the analysis' start, one interval every
	// Step, so that the count test's dispersion starts from how bursty
	// the baseline's bad events were (stats.CountConfig.History).
	History *CountHistory `json:"history,omitempty"`
}

// CountHistory is the window of the baseline's history before the
// analysis' start: Lookback long, read every Step (default
// DefaultHistoryStep). Both are Go durations ("24h", "5m").
type CountHistory struct {
	Lookback string `json:"lookback,omitempty" validate:"required"`
	Step     string `json:"step,omitempty"`
}

// CountQueries are one side's counters.
type CountQueries struct {
	// Bad counts the bad events (errors, slow requests), Total all
	// events, Bad's included.
	Bad   string `json:"bad,omitempty" validate:"required"`
	Total string `json:"total,omitempty" validate:"required"`
}

// Control takes the baseline from the canary query itself, Offset earlier.
type Control struct {
	// Offset is a Go duration ("1h", "24h", "168h").
	Offset string `json:"offset,omitempty" validate:"required"`
}

// EffectSize is Kayenta's effectSize: the measure of the change, and the
// sizes from which a significant change counts (allowed) or, for a critical
// metric, fails the whole canary (critical).
type EffectSize struct {
	// Measure is meanRatio (the default: canary mean / baseline mean) or
	// cles (the probability that a canary point exceeds a baseline point).
	Measure string `json:"measure,omitempty" validate:"omitempty,oneof=meanRatio cles"`
	// Each threshold defaults to 1 for meanRatio (any change), 0.5 for
	// cles.
	AllowedIncrease  *float64 `json:"allowedIncrease,omitempty"`
	AllowedDecrease  *float64 `json:"allowedDecrease,omitempty"`
	CriticalIncrease *float64 `json:"criticalIncrease,omitempty"`
	CriticalDecrease *float64 `json:"criticalDecrease,omitempty"`
}

// The conditions of a judge metric that sets neither: Pass is Successful;
// High, Low and NodataFailMetric are Failed; Nodata is Inconclusive.
const (
	DefaultSuccessCondition = `result.classification == 'Pass'`
	DefaultFailureCondition = `result.classification in ['High', 'Low', 'NodataFailMetric']`
)

// Config is the judge configuration of a validated judge metric.
func (j *Metric) Config() stats.Config {
	cfg := stats.Config{
		Direction:       stats.Direction(j.Direction),
		NaNStrategy:     stats.NaNStrategy(j.NaNStrategy),
		RemoveOutliers:  j.RemoveOutliers,
		OutlierFactor:   deref(j.OutlierFactor),
		ConfidenceLevel: deref(j.ConfidenceLevel),
		Tolerance:       deref(j.Tolerance),
		MustHaveData:    j.MustHaveData,
		Critical:        j.Critical,
	}
	if e := j.EffectSize; e != nil {
		cfg.EffectSizeMeasure = e.Measure
		cfg.AllowedIncrease, cfg.AllowedDecrease = deref(e.AllowedIncrease), deref(e.AllowedDecrease)
		cfg.CriticalIncrease, cfg.CriticalDecrease = deref(e.CriticalIncrease), deref(e.CriticalDecrease)
	}
	return cfg
}

// Window returns the validated judge metric's lookback and step, and the
// control offset (0 with a baseline query).
func (j *Metric) Window() (lookback, step, offset time.Duration) {
	lookback, _ = time.ParseDuration(j.Lookback)
	step, _ = time.ParseDuration(j.Step)
	if j.Control != nil {
		offset, _ = time.ParseDuration(j.Control.Offset)
	}
	return lookback, step, offset
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// maxPoints is the most points per series a Prometheus range query may
// return (Prometheus refuses more: "exceeded maximum resolution of 11,000
// points per timeseries").
const maxPoints = 11000

// Validate checks a decoded judge configuration, whose path is path
// ("provider.judge"), with the shape rules first (canary, lookback, step
// and control.offset must be given; direction, nanStrategy and
// effectSize.measure must be among their values):
//
//   - exactly one of baseline and control;
//   - lookback, step and control.offset are positive durations, step is at
//     most lookback, and the window holds at most 11,000 points;
//   - outlierFactor (only with removeOutliers), confidenceLevel (strictly
//     between 0 and 1) and tolerance are positive numbers;
//   - the effect-size thresholds are positive, and at most 1 for cles; the
//     critical ones only for a critical metric;
//   - mustHaveData is refused with nanStrategy replace, under which missing
//     data passes whatever mustHaveData says;
//   - (critical and group only when the spec declares scoring, without
//     which they would change nothing: spec.Spec.Validate checks that,
//     which sees the spec, from what Provider.Scored tells it);
//   - the timeout is not negative.
//
// Zero values cannot be given for the numbers, since the judge reads 0 as
// "the default": each must be positive.
func (j *Metric) Validate(path string) []api.FieldError {
	if j.Counts != nil {
		return j.validateCounts(path)
	}
	// The shape rules (required fields, enumerations: the validate tags)
	// first.
	errs := spec.StructRules(path, j)
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: strings.TrimSuffix(path+"."+field, "."), Message: fmt.Sprintf(format, args...)})
	}

	baseline := strings.TrimSpace(j.Baseline) != ""
	switch {
	case !baseline && j.Control == nil:
		add("baseline", "baseline or control must be specified: a baseline query to compare the canary query with, "+
			"or control.offset to compare the canary query with itself that long before")
	case baseline && j.Control != nil:
		add("control", "baseline and control cannot both be specified: control compares the canary query with itself "+
			"control.offset earlier, instead of with a baseline query")
	}

	lookback, lookbackOK := positiveDuration(add, "lookback", j.Lookback)
	step, stepOK := positiveDuration(add, "step", j.Step)
	if j.Control != nil {
		positiveDuration(add, "control.offset", j.Control.Offset)
	}
	if lookbackOK && stepOK {
		switch {
		case step > lookback:
			add("step", "step (%s) must not be longer than lookback (%s)", j.Step, j.Lookback)
		case lookback/step+1 > maxPoints:
			add("step", "lookback %s at step %s is %d points per series, more than the %d Prometheus allows: make step longer",
				j.Lookback, j.Step, lookback/step+1, maxPoints)
		}
	}
	if j.Timeout != nil && *j.Timeout < 0 {
		add("timeout", "timeout should not be negative")
	}

	if f := j.OutlierFactor; f != nil {
		switch {
		case !j.RemoveOutliers:
			add("outlierFactor", "outlierFactor applies only with removeOutliers: true")
		case !positive(*f):
			add("outlierFactor", "outlierFactor must be a positive number (default %v), got %v", stats.DefaultOutlierFactor, *f)
		}
	}
	if c := j.ConfidenceLevel; c != nil && !(*c > 0 && *c < 1) {
		hint := ""
		if *c > 1 && *c < 100 {
			hint = fmt.Sprintf(" (a fraction: %v for %v%%)", *c/100, *c)
		}
		add("confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default %v), got %v%s", stats.DefaultConfidenceLevel, *c, hint)
	}
	if t := j.Tolerance; t != nil && !positive(*t) {
		add("tolerance", "tolerance must be a positive number (default %v), got %v", stats.DefaultTolerance, *t)
	}
	if e := j.EffectSize; e != nil {
		cles := e.Measure == stats.EffectCLES
		for _, th := range []struct {
			name     string
			v        *float64
			critical bool
		}{
			{"allowedIncrease", e.AllowedIncrease, false}, {"allowedDecrease", e.AllowedDecrease, false},
			{"criticalIncrease", e.CriticalIncrease, true}, {"criticalDecrease", e.CriticalDecrease, true},
		} {
			if th.v == nil {
				continue
			}
			field := "effectSize." + th.name
			switch v := *th.v; {
			case th.critical && !j.Critical:
				add(field, "%s applies only to a critical metric (critical: true)", th.name)
			case cles && !(v > 0 && v <= 1):
				add(field, "%s must be a probability above 0 and at most 1 with measure cles (default %v), got %v", th.name, stats.DefaultEffectCLES, v)
			case !cles && !positive(v):
				add(field, "%s must be a positive ratio of the means (1.1 is 10%% higher, 0.9 10%% lower; default %v), got %v", th.name, stats.DefaultEffectMeanRatio, v)
			}
		}
	}
	if j.Alpha != nil {
		add("alpha", "alpha applies only to counts (provider.judge.counts), whose test it bounds; "+
			"the sample judge's is confidenceLevel")
	}
	if j.MustHaveData && j.NaNStrategy == string(stats.NaNReplace) {
		add("mustHaveData", "mustHaveData has no effect with nanStrategy replace, under which a sample without data passes")
	}
	if len(errs) == 0 { // the tags report bad enumerations
		// Everything above covers the judge's own rules; this is the
		// backstop that keeps the two in step.
		if err := j.Config().Validate(); err != nil {
			add("", "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return errs
}

// positiveDuration parses a duration field that must be positive. A field
// left empty is reported by its required tag, not here.
func positiveDuration(add func(field, format string, args ...any), field, s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	name := field[strings.LastIndexByte(field, '.')+1:]
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		add(field, "%s must be a duration such as 30s, 10m or 1h: %v", name, err)
	case d <= 0:
		add(field, "%s must be a positive duration, got %q", name, s)
	default:
		return d, true
	}
	return 0, false
}

func positive(f float64) bool { return f > 0 && !math.IsInf(f, 1) }
