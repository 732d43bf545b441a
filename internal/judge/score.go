package judge

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The verdicts of Score.Verdict (Kayenta's ThresholdScoreClassifier).
const (
	VerdictPass     = "Pass"
	VerdictMarginal = "Marginal"
	VerdictFail     = "Fail"
)

// Defaults of ScoreConfig. Kayenta requires the thresholds in every request
// and has no defaults of its own; these are the values of its documented
// sample configurations (json-formats.md, sample-config.json) and of
// Spinnaker's canary stage.
const (
	DefaultPassThreshold     = 95.0
	DefaultMarginalThreshold = 75.0
	// DefaultGroup is the group of a metric whose Group is "".
	DefaultGroup = "default"
	// nodataShare is Kayenta's NODATA_THRESHOLD: when at least this share
	// of the scored metrics is Nodata, the score is 0.
	nodataShare = 0.5
)

// MetricOutcome is what scoring needs of one metric's Result.
type MetricOutcome struct {
	// Name names the metric in the score's reason.
	Name string
	// Group is the metric's group; "" means DefaultGroup.
	Group          string
	Classification Classification
	// Critical is Result.Critical: this metric fails the whole canary. (It
	// is not Config.Critical: a critical metric's High below its critical
	// effect size counts like any other High.)
	Critical bool
	// Muted metrics are reported but not scored (Kayenta's muted).
	Muted bool
}

// ScoreConfig weighs groups and sets the verdict's thresholds.
type ScoreConfig struct {
	// GroupWeights are the groups' weights, in percent. Groups without a
	// weight share what is left of 100 equally. A weighted group with no
	// metrics still takes its share, as in Kayenta, so weights should name
	// only groups that exist.
	GroupWeights map[string]float64
	// Pass and Marginal are the thresholds of the verdict: at least Pass is
	// Pass, at least Marginal is Marginal, below is Fail. When both are 0
	// they are DefaultPassThreshold and DefaultMarginalThreshold.
	Pass, Marginal float64
}

// Score is the verdict on a whole canary run.
type Score struct {
	// Score is from 0 to 100, rounded half up to two decimals.
	Score float64
	// Verdict is VerdictPass, VerdictMarginal or VerdictFail.
	Verdict string
	// Groups holds each group's score: 100 × passed / (passed + High + Low
	// + NodataFailMetric). A group whose metrics are all Nodata or Error
	// scores 100, as it counts in the total.
	Groups map[string]float64
	// Reason explains the score in a sentence.
	Reason string
}

// WithDefaults returns c with the default thresholds if both are 0.
func (c ScoreConfig) WithDefaults() ScoreConfig {
	if c.Pass == 0 && c.Marginal == 0 {
		c.Pass, c.Marginal = DefaultPassThreshold, DefaultMarginalThreshold
	}
	return c
}

// Validate reports every problem of c, or nil: weights must be positive and
// sum to at most 100, thresholds must lie in [0, 100] with Marginal <= Pass.
func (c ScoreConfig) Validate() error {
	var errs []error
	var sum float64
	for _, g := range slices.Sorted(maps.Keys(c.GroupWeights)) {
		w := c.GroupWeights[g]
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("group %q: weight %v: want a positive number", g, w))
			continue
		}
		sum += w
	}
	if sum > 100 {
		errs = append(errs, fmt.Errorf("group weights sum to %v: want at most 100", sum))
	}
	c = c.WithDefaults()
	for _, t := range []struct {
		name string
		v    float64
	}{{"pass", c.Pass}, {"marginal", c.Marginal}} {
		if !(t.v >= 0 && t.v <= 100) {
			errs = append(errs, fmt.Errorf("%s threshold %v: want a number from 0 to 100", t.name, t.v))
		}
	}
	if c.Marginal > c.Pass {
		errs = append(errs, fmt.Errorf("marginal threshold %v is above the pass threshold %v", c.Marginal, c.Pass))
	}
	return errors.Join(errs...)
}

// ScoreRun scores a canary run from its metrics' outcomes as Kayenta's
// WeightedSumScorer and ThresholdScoreClassifier do:
//
//   - muted metrics are left out;
//   - if any metric is Critical and not Pass, the score is 0;
//   - else if at least half of the metrics are Nodata, the score is 0;
//   - else each group scores 100 × Pass / (Pass + High + Low +
//     NodataFailMetric), 100 if it has none of those, and the score is
//     the sum of the group scores weighted by GroupWeights, in percent;
//   - the verdict is Pass at or above cfg.Pass, Marginal at or above
//     cfg.Marginal, Fail below.
//
// An invalid cfg gives a score of 0 and Fail, with Validate's message as the
// reason; so does a run with no metrics to score.
func ScoreRun(outcomes []MetricOutcome, cfg ScoreConfig) Score {
	s := Score{Groups: map[string]float64{}}
	if err := cfg.Validate(); err != nil {
		s.Verdict = VerdictFail
		s.Reason = "invalid scoring configuration: " + strings.ReplaceAll(err.Error(), "\n", "; ")
		return s
	}
	cfg = cfg.WithDefaults()

	scored, names := groupScores(outcomes, s.Groups)
	nodata := 0
	for _, o := range scored {
		if o.Classification == Nodata {
			nodata++
		}
	}
	critical := -1
	for i, o := range scored {
		if o.Critical && o.Classification != Pass {
			critical = i
			break
		}
	}
	switch {
	case len(scored) == 0:
		s.Reason = "no metrics to score"
	case critical >= 0:
		o := scored[critical]
		s.Reason = fmt.Sprintf("canary failed: critical metric %q is %s", o.Name, o.Classification)
	case float64(nodata) >= nodataShare*float64(len(scored)):
		s.Reason = fmt.Sprintf("canary failed: %d of %d metrics (%.0f%% or more) returned no data", nodata, len(scored), 100*nodataShare)
	default:
		s.Score = weightedScore(s.Groups, names, cfg.GroupWeights)
	}

	switch {
	case s.Score >= cfg.Pass:
		s.Verdict = VerdictPass
	case s.Score >= cfg.Marginal:
		s.Verdict = VerdictMarginal
	default:
		s.Verdict = VerdictFail
	}
	if s.Reason == "" {
		s.Reason = fmt.Sprintf("score %s: %s", strconv.FormatFloat(s.Score, 'f', -1, 64), thresholdText(s.Verdict, cfg))
	}
	return s
}

// groupScores fills groups with each group's score, the share of its
// counted metrics that passed (100 for a group with none counted), and
// returns the outcomes that are not muted and the groups' names, sorted: a
// fixed order of summation, for a reproducible score.
func groupScores(outcomes []MetricOutcome, groups map[string]float64) (scored []MetricOutcome, names []string) {
	type tally struct{ pass, counted int }
	tallies := map[string]*tally{}
	for _, o := range outcomes {
		if o.Muted {
			continue
		}
		scored = append(scored, o)
		g := o.Group
		if g == "" {
			g = DefaultGroup
		}
		t := tallies[g]
		if t == nil {
			t = &tally{}
			tallies[g] = t
		}
		switch o.Classification {
		case Pass:
			t.pass++
			t.counted++
		case High, Low, NodataFailMetric:
			t.counted++
		}
	}
	names = make([]string, 0, len(tallies))
	for g, t := range tallies {
		names = append(names, g)
		groups[g] = 100
		if t.counted > 0 {
			groups[g] = 100 * float64(t.pass) / float64(t.counted)
		}
	}
	sort.Strings(names)
	return scored, names
}

// weightedScore is the groups' scores weighted: a group named in weights
// takes its weight (a percentage), the others share what is left equally.
func weightedScore(groups map[string]float64, names []string, weights map[string]float64) float64 {
	var explicit float64
	for _, w := range weights {
		explicit += w
	}
	unweighted := 0
	for _, g := range names {
		if _, ok := weights[g]; !ok {
			unweighted++
		}
	}
	share := 0.0
	if unweighted > 0 {
		share = (100 - explicit) / float64(unweighted)
	}
	var sum float64
	for _, g := range names {
		w, ok := weights[g]
		if !ok {
			w = share
		}
		sum += groups[g] * (w / 100)
	}
	return roundHalfUp2(sum)
}

func thresholdText(verdict string, cfg ScoreConfig) string {
	p, m := strconv.FormatFloat(cfg.Pass, 'f', -1, 64), strconv.FormatFloat(cfg.Marginal, 'f', -1, 64)
	switch verdict {
	case VerdictPass:
		return "at or above the pass threshold " + p
	case VerdictMarginal:
		return "below the pass threshold " + p + ", at or above the marginal threshold " + m
	}
	return "below the marginal threshold " + m
}

// roundHalfUp2 rounds x to two decimals, halves away from zero, on its
// shortest decimal representation, as Commons Math's Precision.round(x, 2)
// does (math.Round(x*100)/100 would round 1.005 down, because 1.005*100 is
// 100.49999…).
func roundHalfUp2(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1e15 {
		return x
	}
	s := strconv.FormatFloat(math.Abs(x), 'f', -1, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= 2 {
		return x
	}
	cents, err := strconv.ParseUint(intPart+frac[:2], 10, 64)
	if err != nil {
		return x
	}
	if frac[2] >= '5' {
		cents++
	}
	return math.Copysign(float64(cents)/100, x)
}
