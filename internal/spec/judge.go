package spec

import (
	"maps"
	"time"

	"github.com/canaryd/canaryd/internal/judge"
)

// JudgeMetric is canaryd's judge provider (`provider.judge`): each
// measurement range-queries a canary query and a baseline query over the
// same window and compares the two samples as Kayenta's NetflixACAJudge
// does (see internal/judge). The result the conditions see is an object
// with the classification (Pass, High, Low, Nodata, NodataFailMetric) and
// the numbers behind it.
//
// It is an extension: a bare spec or a canaryd template (apiVersion
// canaryd.io/v1alpha1) may use it, an argoproj.io/v1alpha1 document may
// not, since Argo Rollouts could not run the metric.
//
// The connection fields (address, authentication, timeout, insecure,
// headers) are the Prometheus provider's, with its allow-lists; both
// queries go through it.
type JudgeMetric struct {
	Address        string         `json:"address,omitempty"`
	Authentication Authentication `json:"authentication,omitempty"`
	// Timeout is in seconds, per query; nil means 30.
	Timeout  *int64   `json:"timeout,omitempty"`
	Insecure bool     `json:"insecure,omitempty"`
	Headers  []Header `json:"headers,omitempty"`

	// Canary is the PromQL query of the canary's metric.
	Canary string `json:"canary,omitempty" validate:"required"`
	// Baseline is the PromQL query of the baseline's metric, queried over
	// the same window. Exactly one of Baseline and Control is set.
	Baseline string `json:"baseline,omitempty"`
	// Control compares the canary query with itself Control.Offset
	// earlier, instead of with a baseline query (Kayenta's
	// controlOffsetInMinutes).
	Control *JudgeControl `json:"control,omitempty"`
	// Lookback is the window of each measurement, ending at the
	// measurement's instant; Step is the resolution of the range queries.
	// Both are Go durations ("30m", "1m").
	Lookback string `json:"lookback,omitempty" validate:"required"`
	Step     string `json:"step,omitempty" validate:"required"`

	// Direction is increase, decrease or either (the default): which
	// change fails.
	Direction string `json:"direction,omitempty" validate:"omitempty,oneof=increase decrease either"`
	// NaNStrategy is remove (the default) or replace (NaN counts as 0).
	NaNStrategy string `json:"nanStrategy,omitempty" validate:"omitempty,oneof=remove replace"`
	// RemoveOutliers drops each sample's outliers by Kayenta's IQR rule,
	// with OutlierFactor (default 3) as the IQR multiplier.
	RemoveOutliers bool     `json:"removeOutliers,omitempty"`
	OutlierFactor  *float64 `json:"outlierFactor,omitempty"`
	// ConfidenceLevel is that of the interval of the shift (default
	// 0.98); Tolerance the band ±Tolerance·|estimate| that interval must
	// clear (default 0.25).
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

// JudgeControl takes the baseline from the canary query itself, Offset
// earlier.
type JudgeControl struct {
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

// Scoring scores an analysis as Kayenta scores a canary run: each group
// scores 100 × the share of its metrics that passed, the groups are
// weighted into a score from 0 to 100, and the score is Pass at or above
// Pass, Marginal at or above Marginal, Fail below. It is an extension for
// bare specs and canaryd templates.
type Scoring struct {
	// Groups weighs groups, in percent; groups without a weight share what
	// is left of 100 equally.
	Groups map[string]float64 `json:"groups,omitempty"`
	// Pass and Marginal are the thresholds; nil means 95 and 75.
	Pass     *float64 `json:"pass,omitempty"`
	Marginal *float64 `json:"marginal,omitempty"`
}

// Judge defaults of canaryd's own.
const (
	// DefaultJudgeSuccessCondition and DefaultJudgeFailureCondition are a
	// judge metric's conditions when it sets neither: Pass is Successful;
	// High, Low and NodataFailMetric are Failed; Nodata is Inconclusive.
	DefaultJudgeSuccessCondition = `result.classification == 'Pass'`
	DefaultJudgeFailureCondition = `result.classification in ['High', 'Low', 'NodataFailMetric']`
)

// ScoringGroup is the metric's group in a score: its judge group, or
// judge.DefaultGroup.
func (m *Metric) ScoringGroup() string {
	if j := m.Provider.Judge; j != nil && j.Group != "" {
		return j.Group
	}
	return judge.DefaultGroup
}

// Config is the judge configuration of a validated judge metric.
func (j *JudgeMetric) Config() judge.Config {
	cfg := judge.Config{
		Direction:       judge.Direction(j.Direction),
		NaNStrategy:     judge.NaNStrategy(j.NaNStrategy),
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
func (j *JudgeMetric) Window() (lookback, step, offset time.Duration) {
	lookback, _ = time.ParseDuration(j.Lookback)
	step, _ = time.ParseDuration(j.Step)
	if j.Control != nil {
		offset, _ = time.ParseDuration(j.Control.Offset)
	}
	return lookback, step, offset
}

// Config is the scoring configuration of validated scoring.
func (s *Scoring) Config() judge.ScoreConfig {
	cfg := judge.ScoreConfig{
		GroupWeights: make(map[string]float64, len(s.Groups)),
		Pass:         judge.DefaultPassThreshold,
		Marginal:     judge.DefaultMarginalThreshold,
	}
	for g, w := range s.Groups {
		cfg.GroupWeights[g] = w
	}
	if s.Pass != nil {
		cfg.Pass = *s.Pass
	}
	if s.Marginal != nil {
		cfg.Marginal = *s.Marginal
	}
	return cfg
}

// clone copies s; arguments are not substituted into scoring, which holds
// numbers and group names only.
func (s *Scoring) clone() *Scoring {
	if s == nil {
		return nil
	}
	c := *s
	c.Groups = maps.Clone(s.Groups)
	return &c
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
