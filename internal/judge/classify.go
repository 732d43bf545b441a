package judge

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Direction says which change of a metric fails the canary (Kayenta's
// direction).
type Direction string

// The directions. The zero value means DirectionEither, Kayenta's default.
const (
	// DirectionIncrease fails only a canary significantly higher than the
	// baseline: latency, errors, memory.
	DirectionIncrease Direction = "increase"
	// DirectionDecrease fails only a canary significantly lower than the
	// baseline: throughput, successes.
	DirectionDecrease Direction = "decrease"
	// DirectionEither fails a significant change either way.
	DirectionEither Direction = "either"
)

// NaNStrategy says what becomes of NaN points, which Prometheus range
// queries return where a series had no value (Kayenta's nanStrategy).
type NaNStrategy string

// The NaN strategies. The zero value means NaNRemove, Kayenta's default.
const (
	// NaNRemove drops NaN points: for metrics that should always have data.
	NaNRemove NaNStrategy = "remove"
	// NaNReplace turns NaN points into 0: for counts, where no data means
	// that nothing happened. A sample that is still empty passes.
	NaNReplace NaNStrategy = "replace"
)

// The effect-size measures of Config.EffectSizeMeasure.
const (
	// EffectMeanRatio is the canary mean over the baseline mean: 1.1 is
	// 10% higher. It is Kayenta's default.
	EffectMeanRatio = "meanRatio"
	// EffectCLES is the common-language effect size, the probability that
	// a canary point exceeds a baseline point (ties count half): 0.5 is no
	// difference.
	EffectCLES = "cles"
)

// Defaults of Config, each Kayenta's (NetflixACAJudge.classifyMetric and
// the MannWhitneyClassifier it builds).
const (
	DefaultConfidenceLevel = 0.98
	DefaultTolerance       = 0.25
	DefaultOutlierFactor   = 3.0
	// DefaultEffectMeanRatio is the default of the four effect-size
	// thresholds for EffectMeanRatio: any significant change fails.
	DefaultEffectMeanRatio = 1.0
	// DefaultEffectCLES is their default for EffectCLES.
	DefaultEffectCLES = 0.5
	// SmallSample is the number of points under which a sample draws a
	// warning: Kayenta warns under 50 and recommends at least 50 points
	// per metric.
	SmallSample = 50
)

// Config is how one metric is judged: Kayenta's per-metric
// analysisConfigurations.canary, plus the test parameters Kayenta fixes.
// The zero value of each field means its default, so Config{} judges as
// Kayenta does by default.
type Config struct {
	// Direction is which change fails; "" means DirectionEither.
	Direction Direction
	// NaNStrategy is what becomes of NaN points; "" means NaNRemove.
	NaNStrategy NaNStrategy
	// RemoveOutliers removes, from each sample separately, points outside
	// [min(P1, Q1 − k·IQR), max(P99, Q3 + k·IQR)] with k = OutlierFactor
	// (Kayenta's outliers.strategy: remove). Off by default.
	RemoveOutliers bool
	// OutlierFactor is k; 0 means DefaultOutlierFactor (3).
	OutlierFactor float64
	// ConfidenceLevel is that of the interval for the shift, in (0, 1);
	// 0 means DefaultConfidenceLevel (0.98).
	ConfidenceLevel float64
	// Tolerance sets the band ±Tolerance·|estimate| that the whole
	// interval must clear for a shift to count (see Classify); 0 means
	// DefaultTolerance (0.25).
	Tolerance float64
	// EffectSizeMeasure is EffectMeanRatio or EffectCLES; "" means
	// EffectMeanRatio.
	EffectSizeMeasure string
	// AllowedIncrease is the effect size a significant increase must reach
	// to fail (High): 1.1 with meanRatio means 10% higher. AllowedDecrease
	// is the effect size a significant decrease must be at or below to fail
	// (Low): 0.9 means 10% lower. 0 means DefaultEffectMeanRatio (1) or,
	// for cles, DefaultEffectCLES (0.5).
	AllowedIncrease, AllowedDecrease float64
	// CriticalIncrease and CriticalDecrease are the effect sizes at which
	// a High or Low of a Critical metric is critical, failing the whole
	// canary; the defaults are those of AllowedIncrease and AllowedDecrease.
	CriticalIncrease, CriticalDecrease float64
	// Critical marks a metric whose failure (High or Low beyond the
	// critical effect size, Nodata, or Error) fails the whole canary.
	Critical bool
	// MustHaveData makes a sample with no data NodataFailMetric, which
	// counts as a failure in its group, unless the metric is Critical, when
	// it is a critical Nodata (Kayenta's mustHaveData).
	MustHaveData bool
}

// WithDefaults returns c with each zero field set to its default: the
// configuration Classify judges with.
func (c Config) WithDefaults() Config {
	if c.Direction == "" {
		c.Direction = DirectionEither
	}
	if c.NaNStrategy == "" {
		c.NaNStrategy = NaNRemove
	}
	if c.OutlierFactor == 0 {
		c.OutlierFactor = DefaultOutlierFactor
	}
	if c.ConfidenceLevel == 0 {
		c.ConfidenceLevel = DefaultConfidenceLevel
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.EffectSizeMeasure == "" {
		c.EffectSizeMeasure = EffectMeanRatio
	}
	effect := DefaultEffectMeanRatio
	if c.EffectSizeMeasure == EffectCLES {
		effect = DefaultEffectCLES
	}
	for _, f := range []*float64{&c.AllowedIncrease, &c.AllowedDecrease, &c.CriticalIncrease, &c.CriticalDecrease} {
		if *f == 0 {
			*f = effect
		}
	}
	return c
}

// Validate reports every field of c that Classify cannot judge with, or nil.
// Zero fields are valid: they mean defaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch c.Direction {
	case "", DirectionIncrease, DirectionDecrease, DirectionEither:
	default:
		bad("direction %q: want %q, %q or %q", c.Direction, DirectionIncrease, DirectionDecrease, DirectionEither)
	}
	switch c.NaNStrategy {
	case "", NaNRemove, NaNReplace:
	default:
		bad("nanStrategy %q: want %q or %q", c.NaNStrategy, NaNRemove, NaNReplace)
	}
	if !(c.OutlierFactor >= 0) || math.IsInf(c.OutlierFactor, 0) {
		bad("outlierFactor %v: want a positive number", c.OutlierFactor)
	}
	if c.ConfidenceLevel != 0 && !(c.ConfidenceLevel > 0 && c.ConfidenceLevel < 1) {
		bad("confidenceLevel %v: want a number strictly between 0 and 1", c.ConfidenceLevel)
	}
	if !(c.Tolerance >= 0) || math.IsInf(c.Tolerance, 0) {
		bad("tolerance %v: want a positive number", c.Tolerance)
	}
	maxEffect := math.Inf(1)
	switch c.EffectSizeMeasure {
	case "", EffectMeanRatio:
	case EffectCLES:
		maxEffect = 1
	default:
		bad("effectSize measure %q: want %q or %q", c.EffectSizeMeasure, EffectMeanRatio, EffectCLES)
	}
	for _, e := range []struct {
		name string
		v    float64
	}{
		{"allowedIncrease", c.AllowedIncrease}, {"allowedDecrease", c.AllowedDecrease},
		{"criticalIncrease", c.CriticalIncrease}, {"criticalDecrease", c.CriticalDecrease},
	} {
		if !(e.v >= 0 && e.v <= maxEffect) || math.IsInf(e.v, 0) {
			if maxEffect == 1 {
				bad("%s %v: a cles threshold is a probability, between 0 and 1", e.name, e.v)
			} else {
				bad("%s %v: want a positive ratio", e.name, e.v)
			}
		}
	}
	return errors.Join(errs...)
}

// Classification is the verdict on one metric, in Kayenta's words.
type Classification string

// The classifications.
const (
	// Pass: no significant change in a direction that fails, or one too
	// small to matter.
	Pass Classification = "Pass"
	// High: the canary is significantly and materially higher.
	High Classification = "High"
	// Low: the canary is significantly and materially lower.
	Low Classification = "Low"
	// Nodata: a sample has no points left after NaN handling. It does not
	// count in its group's score; it is critical for a Critical metric.
	Nodata Classification = "Nodata"
	// NodataFailMetric: no data for a metric that MustHaveData: it counts
	// as a failure in its group's score.
	NodataFailMetric Classification = "NodataFailMetric"
	// Error: the metric could not be judged (an invalid Config, or ±Inf in
	// the data). It does not count in its group's score; it is critical for
	// a Critical metric.
	Error Classification = "Error"
)

// Result is the judgement of one metric, with the numbers behind it.
// Float fields are NaN where they could not be computed (no data, or an
// Error), so a caller that serializes them must map NaN first.
type Result struct {
	Classification Classification
	// Reason says, in a sentence, why: which rule decided, with its numbers.
	Reason string
	// PValue is the two-sided p-value of the Mann-Whitney U test (normal
	// approximation, tie and continuity corrections, as R's wilcox.test
	// with exact = FALSE). It is NaN only when a sample has no data or the
	// Config is invalid.
	PValue float64
	// Estimate is the Hodges-Lehmann estimate of the shift canary −
	// baseline, and ConfidenceInterval its interval at the confidence level.
	Estimate           float64
	ConfidenceInterval [2]float64
	// EffectSize is the configured effect size: the mean ratio canary /
	// baseline (NaN if either mean is 0, which skips the effect-size checks)
	// or the CLES.
	EffectSize float64
	// MeanRatio is the mean ratio whatever the measure, for reports
	// (Kayenta's resultMetadata.ratio).
	MeanRatio float64
	// Critical is set when this result fails the whole canary: a Critical
	// metric that is High or Low at or beyond the critical effect size, or
	// Nodata, or Error. It is what ScoreRun wants as MetricOutcome.Critical.
	Critical bool
	// Canary and Baseline describe the samples that were compared.
	Canary, Baseline SampleStats
	// Warnings are about the data, whatever the classification: samples
	// under SmallSample points.
	Warnings []string
}

// Classify judges a canary sample against a baseline sample as Kayenta's
// NetflixACAJudge-v1.0 judges one metric. Step by step (see the package
// documentation for sources and deviations):
//
//  1. NaN points are removed, or replaced by 0 (NaNStrategy), and outliers
//     removed if asked, each sample separately.
//  2. If a sample is then empty: Pass with NaNReplace; otherwise
//     NodataFailMetric if MustHaveData and not Critical; otherwise Nodata.
//  3. If the samples are identical, or all their points are one value:
//     Pass.
//  4. The Mann-Whitney U test with the Hodges-Lehmann estimate of the shift
//     canary − baseline and its interval at ConfidenceLevel. If each sample
//     is constant the interval is the difference of the two values.
//  5. High if the direction fails increases, the whole interval lies above
//     +Tolerance·|estimate|, and the effect size is at least
//     AllowedIncrease (or is NaN). Low, mirrored, if the interval lies
//     below −Tolerance·|estimate| and the effect size is at most
//     AllowedDecrease. Pass otherwise.
//  6. A Critical metric's High (Low) is critical if the effect size is at
//     least CriticalIncrease (at most CriticalDecrease) or NaN; its Nodata
//     and Error always are.
//
// Classify never panics and never modifies its arguments. An invalid Config
// gives Error, with Validate's message as the reason.
func Classify(canary, baseline []float64, cfg Config) Result {
	nan := math.NaN()
	res := Result{PValue: nan, Estimate: nan, ConfidenceInterval: [2]float64{nan, nan}, EffectSize: nan, MeanRatio: nan}
	if err := cfg.Validate(); err != nil {
		res.Classification = Error
		res.Reason = "invalid judge configuration: " + strings.ReplaceAll(err.Error(), "\n", "; ")
		res.Critical = cfg.Critical
		return res
	}
	cfg = cfg.WithDefaults()
	c, cs := prepare(canary, cfg)
	b, bs := prepare(baseline, cfg)
	res.Canary, res.Baseline = cs, bs
	res.Warnings = sampleWarnings(cs, bs)

	if len(c) == 0 || len(b) == 0 {
		return noData(res, cfg)
	}

	res.MeanRatio = meanRatio(cs.Mean, bs.Mean)
	res.EffectSize = res.MeanRatio
	if cfg.EffectSizeMeasure == EffectCLES {
		res.EffectSize = cles(c, b)
	}

	cConst, bConst := c[0] == c[len(c)-1], b[0] == b[len(b)-1]
	mw, err := MannWhitney(c, b, cfg.ConfidenceLevel)
	res.PValue = mw.PValue
	switch {
	case equal(c, b) || (cConst && bConst && c[0] == b[0]):
		// Kayenta passes these without a test. The numbers are R's where R
		// can compute them; where every point is one value they are those
		// of no shift at all.
		res.Classification = Pass
		if err != nil {
			res.PValue, res.Estimate, res.ConfidenceInterval = 1, 0, [2]float64{0, 0}
		} else {
			res.Estimate, res.ConfidenceInterval = mw.Estimate, [2]float64{mw.Lower, mw.Upper}
		}
		if equal(c, b) {
			res.Reason = "the canary and baseline samples are identical"
		} else {
			res.Reason = fmt.Sprintf("every point of both samples is %s", num(c[0]))
		}
		return res
	case cConst && bConst:
		// Both samples constant, at different values: every observation
		// ties at the shift between them, and the rank test cannot give an
		// interval (R fails; Kayenta adds noise of relative size 1e-5 to
		// break the ties, at random). The interval that noise gives shrinks
		// to the difference of the two values as the noise vanishes; that
		// limit is used here, without the randomness.
		d := c[0] - b[0]
		if math.IsInf(d, 0) {
			return errorResult(res, cfg, ErrNonFinite)
		}
		res.Estimate, res.ConfidenceInterval = d, [2]float64{d, d}
	case err != nil:
		return errorResult(res, cfg, err)
	default:
		res.Estimate, res.ConfidenceInterval = mw.Estimate, [2]float64{mw.Lower, mw.Upper}
	}

	compare(&res, cfg)
	escalate(&res, cfg)
	return res
}

// compare classifies by the interval, the tolerance band and the effect
// size (Kayenta's MannWhitneyClassifier.compare), and says why.
func compare(res *Result, cfg Config) {
	lo, hi := res.ConfidenceInterval[0], res.ConfidenceInterval[1]
	band := cfg.Tolerance * math.Abs(res.Estimate)
	es := res.EffectSize
	above, below := lo > band, hi < -band
	failsUp := cfg.Direction == DirectionIncrease || cfg.Direction == DirectionEither
	failsDown := cfg.Direction == DirectionDecrease || cfg.Direction == DirectionEither
	bigUp := math.IsNaN(es) || es >= cfg.AllowedIncrease
	bigDown := math.IsNaN(es) || es <= cfg.AllowedDecrease

	shift := fmt.Sprintf("the %s%% interval [%s, %s] of the shift canary − baseline (estimate %s)",
		num(100*cfg.ConfidenceLevel), num(lo), num(hi), num(res.Estimate))
	effect := fmt.Sprintf("%s %s", cfg.EffectSizeMeasure, num(es))
	if math.IsNaN(es) {
		effect = cfg.EffectSizeMeasure + " undefined (a mean is 0), so not checked"
	}
	res.Classification = Pass
	switch {
	case above && failsUp && bigUp:
		res.Classification = High
		res.Reason = fmt.Sprintf("canary is higher: %s lies above +%s×|estimate| = %s, and %s", shift, num(cfg.Tolerance), num(band), effectVs(effect, es, ">=", cfg.AllowedIncrease, "allowedIncrease"))
	case below && failsDown && bigDown:
		res.Classification = Low
		res.Reason = fmt.Sprintf("canary is lower: %s lies below −%s×|estimate| = −%s, and %s", shift, num(cfg.Tolerance), num(band), effectVs(effect, es, "<=", cfg.AllowedDecrease, "allowedDecrease"))
	case above && !failsUp:
		res.Reason = fmt.Sprintf("canary is higher, but direction %q fails only a decrease: %s", cfg.Direction, shift)
	case above:
		res.Reason = fmt.Sprintf("canary is higher, but by too little: %s < allowedIncrease %s; %s", effect, num(cfg.AllowedIncrease), shift)
	case below && !failsDown:
		res.Reason = fmt.Sprintf("canary is lower, but direction %q fails only an increase: %s", cfg.Direction, shift)
	case below:
		res.Reason = fmt.Sprintf("canary is lower, but by too little: %s > allowedDecrease %s; %s", effect, num(cfg.AllowedDecrease), shift)
	case lo > 0 || hi < 0:
		res.Reason = fmt.Sprintf("shift significant (p = %s) but not clear of the tolerance band ±%s×|estimate| = ±%s: %s", num(res.PValue), num(cfg.Tolerance), num(band), shift)
	default:
		res.Reason = fmt.Sprintf("no shift: %s includes 0 (p = %s)", shift, num(res.PValue))
	}
}

func effectVs(effect string, es float64, op string, threshold float64, name string) string {
	if math.IsNaN(es) {
		return effect
	}
	return fmt.Sprintf("%s %s %s %s", effect, op, name, num(threshold))
}

// escalate marks a Critical metric's failure as critical (Kayenta's
// MannWhitneyClassifier.classify, after the comparison).
func escalate(res *Result, cfg Config) {
	if !cfg.Critical {
		return
	}
	es := res.EffectSize
	switch res.Classification {
	case High:
		res.Critical = math.IsNaN(es) || es >= cfg.CriticalIncrease
	case Low:
		res.Critical = math.IsNaN(es) || es <= cfg.CriticalDecrease
	case Nodata, Error:
		res.Critical = true
	}
	if res.Critical {
		res.Reason += " (critical)"
	}
}

// noData classifies a metric with an empty sample (Kayenta's no-data rules).
func noData(res Result, cfg Config) Result {
	var which []string
	for _, s := range []struct {
		name string
		st   SampleStats
	}{{"canary", res.Canary}, {"baseline", res.Baseline}} {
		if s.st.N > 0 {
			continue
		}
		w := "no data for the " + s.name
		switch {
		case s.st.Outliers > 0:
			w += fmt.Sprintf(" (all %d points were outliers)", s.st.Outliers)
		case s.st.NaN > 0:
			w += fmt.Sprintf(" (all %d points were NaN)", s.st.NaN)
		}
		which = append(which, w)
	}
	missing := strings.Join(which, " and ")
	switch {
	case cfg.NaNStrategy == NaNReplace:
		res.Classification = Pass
		res.Reason = missing + "; with nanStrategy replace, missing data passes"
	case cfg.MustHaveData && !cfg.Critical:
		res.Classification = NodataFailMetric
		res.Reason = missing + ", and the metric must have data"
	default:
		res.Classification = Nodata
		res.Reason = missing
		escalate(&res, cfg)
	}
	return res
}

// errorResult is an Error for err, critical for a Critical metric.
func errorResult(res Result, cfg Config, err error) Result {
	res.Classification = Error
	res.Reason = "cannot judge: " + err.Error()
	if errors.Is(err, ErrNonFinite) {
		res.Reason = "cannot judge: a sample holds ±Inf, or values so far apart that their difference overflows, so the interval of the shift is undefined"
	}
	escalate(&res, cfg)
	return res
}

// sampleWarnings warns of samples with fewer than SmallSample points.
func sampleWarnings(canary, baseline SampleStats) []string {
	var w []string
	for _, s := range []struct {
		name string
		n    int
	}{{"canary", canary.N}, {"baseline", baseline.N}} {
		if s.n > 0 && s.n < SmallSample {
			w = append(w, fmt.Sprintf("the %s has %d points, fewer than %d, which reduces confidence in the result", s.name, s.n, SmallSample))
		}
	}
	return w
}

// equal reports whether two sorted samples are the same points.
func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// num formats a number for a reason: four significant digits.
func num(f float64) string {
	return fmt.Sprintf("%.4g", f)
}
