package spec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
)

// maxPoints is the most points per series a Prometheus range query may
// return (Prometheus refuses more: "exceeded maximum resolution of 11,000
// points per timeseries").
const maxPoints = 11000

// Validate checks a judge metric's configuration, whose path is path
// ("provider.judge"), as the judge's provider does (Spec.Validate leaves
// it to the provider, so that each problem is reported once), with the shape rules of its tags
// (canary, lookback, step and control.offset must be given; direction,
// nanStrategy and effectSize.measure must be among their values):
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
//   - critical and group only when the spec declares scoring, without
//     which they would change nothing (validateJudgeScoring, called by
//     Validate, which sees the spec);
//   - the timeout is not negative.
//
// Zero values cannot be given for the numbers, since the judge reads 0 as
// "the default": each must be positive.
func (j *JudgeMetric) Validate(path string) []api.FieldError {
	// The struct rules (required fields, enumerations) first.
	errs := shapeErrors(path, j)
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: strings.TrimSuffix(joinPath(path, field), "."), Message: fmt.Sprintf(format, args...)})
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
			add("outlierFactor", "outlierFactor must be a positive number (default %v), got %v", judge.DefaultOutlierFactor, *f)
		}
	}
	if c := j.ConfidenceLevel; c != nil && !(*c > 0 && *c < 1) {
		hint := ""
		if *c > 1 && *c < 100 {
			hint = fmt.Sprintf(" (a fraction: %v for %v%%)", *c/100, *c)
		}
		add("confidenceLevel", "confidenceLevel must be strictly between 0 and 1 (default %v), got %v%s", judge.DefaultConfidenceLevel, *c, hint)
	}
	if t := j.Tolerance; t != nil && !positive(*t) {
		add("tolerance", "tolerance must be a positive number (default %v), got %v", judge.DefaultTolerance, *t)
	}
	if e := j.EffectSize; e != nil {
		cles := e.Measure == judge.EffectCLES
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
				add(field, "%s must be a probability above 0 and at most 1 with measure cles (default %v), got %v", th.name, judge.DefaultEffectCLES, v)
			case !cles && !positive(v):
				add(field, "%s must be a positive ratio of the means (1.1 is 10%% higher, 0.9 10%% lower; default %v), got %v", th.name, judge.DefaultEffectMeanRatio, v)
			}
		}
	}
	if j.MustHaveData && j.NaNStrategy == string(judge.NaNReplace) {
		add("mustHaveData", "mustHaveData has no effect with nanStrategy replace, under which a sample without data passes")
	}
	enumerations := slices.Contains([]string{"", "increase", "decrease", "either"}, j.Direction) &&
		slices.Contains([]string{"", "remove", "replace"}, j.NaNStrategy) &&
		(j.EffectSize == nil || slices.Contains([]string{"", "meanRatio", "cles"}, j.EffectSize.Measure))
	if len(errs) == 0 && enumerations { // the tags report bad enumerations
		// Everything above covers the judge's own rules; this is the
		// backstop that keeps the two in step.
		if err := j.Config().Validate(); err != nil {
			add("", "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return errs
}

// validateJudgeScoring checks the judge's fields that need the spec's
// scoring: critical and group change nothing without it.
func validateJudgeScoring(path string, j *JudgeMetric, scored bool) []api.FieldError {
	var errs []api.FieldError
	if j.Critical && !scored {
		errs = append(errs, api.FieldError{Field: path + ".critical", Message: "critical applies only when the spec declares scoring (without it, any failing metric fails the analysis already): declare scoring, or remove critical"})
	}
	if j.Group != "" && !scored {
		errs = append(errs, api.FieldError{Field: path + ".group", Message: "group applies only when the spec declares scoring: declare scoring, or remove group"})
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

// validateScoring checks the spec's scoring:
//
//   - pass is above 0 and at most 100, marginal from 0 to 100 and not above
//     pass (the defaults, 95 and 75, count when a threshold is not given);
//   - there is a metric to score (one that is not dry-run);
//   - each weight is positive, and names a group that has a scored metric
//     (a judge metric's provider.judge.group, or "default" for the others):
//     a weighted group without metrics would keep its share of the score
//     from ever being earned;
//   - the weights sum to at most 100; to exactly 100 when every group has
//     one (otherwise no score could reach 100), and to less when a group
//     has none (otherwise that group would count for nothing).
func (s *Spec) validateScoring() []api.FieldError {
	sc := s.Scoring
	if sc == nil {
		return nil
	}
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: strings.TrimSuffix(joinPath("scoring", field), "."), Message: fmt.Sprintf(format, args...)})
	}

	pass, passOK := judge.DefaultPassThreshold, true
	if sc.Pass != nil {
		if pass = *sc.Pass; !(pass > 0 && pass <= 100) {
			add("pass", "pass must be above 0 and at most 100, got %v", pass)
			passOK = false
		}
	}
	marginal, marginalOK := judge.DefaultMarginalThreshold, true
	if sc.Marginal != nil {
		if marginal = *sc.Marginal; !(marginal >= 0 && marginal <= 100) {
			add("marginal", "marginal must be from 0 to 100, got %v", marginal)
			marginalOK = false
		}
	}
	if passOK && marginalOK && marginal > pass {
		if sc.Marginal == nil {
			add("marginal", "the default marginal threshold %v is above pass (%v): give a marginal threshold at or below it", marginal, pass)
		} else {
			add("marginal", "marginal (%v) must not be above pass (%v)", marginal, pass)
		}
	}

	dryRun := s.DryRunMetrics()
	scored, dryOnly := map[string]bool{}, map[string]bool{}
	for i := range s.Metrics {
		m := &s.Metrics[i]
		if dryRun[m.Name] {
			dryOnly[m.ScoringGroup()] = true
		} else {
			scored[m.ScoringGroup()] = true
		}
	}
	if len(scored) == 0 && len(s.Metrics) > 0 {
		add("", "every metric is dry-run: there is nothing to score")
	}

	var sum float64
	weightsOK := true
	names := make([]string, 0, len(sc.Groups))
	for g := range sc.Groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		w := sc.Groups[g]
		field := "groups." + g
		switch {
		case strings.TrimSpace(g) == "":
			add("groups", "a group name must not be empty")
		case !positive(w):
			add(field, "the weight of group %q must be a positive number (a percentage), got %v", g, w)
		case !scored[g] && dryOnly[g]:
			add(field, "only dry-run metrics are in group %q, and dry-run metrics are not scored", g)
		case !scored[g]:
			add(field, "no metric is in group %q (a judge metric names its group with provider.judge.group; the others are in group %q)", g, judge.DefaultGroup)
		default:
			sum += w
			continue
		}
		weightsOK = false
	}
	if weightsOK && len(sc.Groups) > 0 {
		var unweighted []string
		for g := range scored {
			if _, ok := sc.Groups[g]; !ok {
				unweighted = append(unweighted, fmt.Sprintf("%q", g))
			}
		}
		sort.Strings(unweighted)
		const eps = 1e-9
		switch {
		case sum > 100+eps:
			add("groups", "the weights sum to %v, more than 100", sum)
		case len(unweighted) == 0 && sum < 100-eps:
			add("groups", "the weights sum to %v and every group has one, so no score could reach 100: make them sum to 100, or leave a group without a weight to share the rest", sum)
		case len(unweighted) > 0 && sum >= 100-eps:
			which := "group " + unweighted[0] + ", which has no weight: give it one"
			if len(unweighted) > 1 {
				which = "groups " + strings.Join(unweighted, ", ") + ", which have no weight: give them one"
			}
			add("groups", "the weights sum to 100, which leaves nothing for %s, or make the weights sum to less than 100", which)
		}
	}
	return errs
}
