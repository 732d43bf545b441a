package judge

import (
	"fmt"
	"math"
	"strings"
)

// The count judge: an anytime-valid sequential test of a canary's rate of
// bad events (errors, slow requests) against a baseline's, read at every
// look. See doc.go's "Counts" for the method and what it assumes.

// Decisions of a count test at a look.
const (
	DecisionContinue     = "continue"
	DecisionFailed       = "Failed"
	DecisionSuccessful   = "Successful"
	DecisionInconclusive = "Inconclusive"
)

// Defaults and bounds of CountConfig.
const (
	DefaultCountAlpha     = 0.05
	DefaultCountTolerance = 1.0
	// MaxCountAlpha is the largest alpha a count test takes: beyond it a
	// "verdict" would be closer to a coin than to evidence.
	MaxCountAlpha = 0.5
)

// countAlternatives are the rate ratios, relative to the tolerance, that
// the mixture e-process bets on: from a 10% to a tenfold rise. A
// regression between two of them is detected at nearly the speed of the
// nearer one; one beyond them at the speed of the largest.
var countAlternatives = [...]float64{1.1, 1.25, 1.5, 2, 3, 5, 10}

// countWeights are the alternatives' weights in the mixture, in proportion
// 1:2:3:5:3:2:1 (they are divided by their sum, 17): most on a doubling,
// the rise a canary analysis exists to catch soonest, less the further a
// ratio lies from it. A mixture pays the logarithm of its weight for the
// alternative nearest the truth, so a doubling costs log(17/5) = 1.22
// rather than log 7 = 1.95 with equal weights (8–20% fewer events to a
// doubling's verdict on the benchmark), a tenfold rise log 17 = 2.83
// rather than 1.95: a few events more where each event says much. Any weights fixed in advance and
// summing to 1 keep the guarantee; docs/judge.md has what these and equal
// weights measure on the benchmark.
var countWeights = [len(countAlternatives)]float64{1, 2, 3, 5, 3, 2, 1}

// countWeightSum is the sum of countWeights, and countLogShares the
// logarithms of each weight's share of it.
var countWeightSum, countLogShares = func() (sum float64, ls [len(countAlternatives)]float64) {
	for _, w := range countWeights {
		sum += w
	}
	for j, w := range countWeights {
		ls[j] = math.Log(w / sum)
	}
	return sum, ls
}()

// The confidence sequence of the rate ratio is the set of ratios r that a
// two-sided test of "the ratio is r" has not rejected at any look. It is
// computed on a grid of ratios 2^(i/csSteps), i in [-csRange, csRange]·csSteps,
// each tested against alternatives csOffsets grid steps away on either side
// (ratios 1.09 to 6.2 times it, and their inverses). Bounds are reported at grid
// points, rounded outwards, so the sequence keeps its coverage.
const (
	csSteps = 8
	csRange = 12
	csGrid  = 2*csRange*csSteps + 1
)

var csOffsets = [...]int{1, 3, 5, 8, 13, csMaxOffset}

const csMaxOffset = 21

// CountConfig configures a count test.
type CountConfig struct {
	// Alpha bounds the probability of a false Failed (and of a false early
	// Successful), at any number of looks: (0, 0.5], default 0.05.
	Alpha float64
	// Tolerance is the rate ratio canary/baseline that is still fine:
	// 1 (the default) fails any rise that the evidence shows, 1.2
	// tolerates a rise of 20%. Must be > 0.
	Tolerance float64
	// Direction is increase (the default): a rising canary rate fails; or
	// decrease: a falling one fails (for good events, such as successful
	// checkouts).
	Direction Direction
	// Dispersion, when not 0, fixes the dispersion φ at that value (at
	// least 1) instead of estimating it from blocks of looks: 1 takes bad
	// events as independent. canaryd's API, `canaryd judge` and
	// provider.judge.counts never set it; the open benchmark does
	// (judgebench -dispersion), to measure what the estimate costs on
	// independent events and what it protects on bursty ones.
	Dispersion float64
	// History, when not empty, is the baseline's cumulative counts at the
	// end of each interval before the analysis started, oldest first,
	// counted from the start of the first (as looks are from the
	// analysis' start). The baseline's bad events over those intervals
	// tell how bursty its errors are: their Pearson statistic and degrees
	// of freedom take the place of the default prior of the dispersion,
	// so a canary whose baseline shows no bursts is judged at nearly
	// φ = 1 from its first look, and one whose baseline is bursty is
	// tempered from the first. A history without bad events, or of fewer
	// than two blocks, tells nothing, and the default prior stays.
	// Ignored when Dispersion is set.
	History []Counts
}

// WithDefaults fills the zero fields.
func (c CountConfig) WithDefaults() CountConfig {
	if c.Alpha == 0 {
		c.Alpha = DefaultCountAlpha
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultCountTolerance
	}
	if c.Direction == "" {
		c.Direction = DirectionIncrease
	}
	return c
}

// FieldError is a problem with one field of a count test's input.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate checks a configuration after WithDefaults.
func (c CountConfig) Validate() error {
	switch {
	case !(c.Alpha > 0 && c.Alpha <= MaxCountAlpha):
		return &FieldError{"alpha", fmt.Sprintf("must be in (0, %g], got %g", MaxCountAlpha, c.Alpha)}
	case !(c.Tolerance > 0) || math.IsInf(c.Tolerance, 0):
		return &FieldError{"tolerance", fmt.Sprintf("must be a finite number > 0, got %g", c.Tolerance)}
	case c.Direction != DirectionIncrease && c.Direction != DirectionDecrease:
		return &FieldError{"direction", fmt.Sprintf("must be increase or decrease, got %q", c.Direction)}
	case c.Dispersion != 0 && !(c.Dispersion >= 1 && !math.IsInf(c.Dispersion, 0)):
		return &FieldError{"dispersion", fmt.Sprintf("must be 0 (estimated) or a finite number ≥ 1, got %g", c.Dispersion)}
	}
	var prev Counts
	for i, h := range c.History {
		if err := checkSide(&historyFields, h, prev); err != nil {
			fe := err.(*FieldError)
			fe.Field = fmt.Sprintf("history[%d].%s", i, strings.TrimPrefix(fe.Field, "history."))
			return fe
		}
		prev = h
	}
	return nil
}

// Counts are one side's cumulative counts since the start: Bad events
// among Total events.
type Counts struct {
	Bad   float64 `json:"bad"`
	Total float64 `json:"total"`
}

// CountLook is one look: both sides' cumulative counts.
type CountLook struct {
	Canary   Counts `json:"canary"`
	Baseline Counts `json:"baseline"`
}

// RatioEstimate is the rate ratio canary/baseline: the estimate from all
// counts so far, and the confidence sequence's bounds (0 and +Inf until
// the counts bound it).
type RatioEstimate struct {
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
}

// CountResult is a count test at one look.
type CountResult struct {
	// Look counts the looks from 1.
	Look int
	// EValue is the evidence against "the canary is no worse than
	// Tolerance": Failed when it reaches 1/Alpha.
	EValue float64
	// PValue is the anytime-valid p-value, min(1, 1/max EValue so far).
	PValue float64
	// Ratio is the rate ratio, with its 1−Alpha confidence sequence.
	Ratio RatioEstimate
	// Decision is continue, Failed or Successful (and, at the last look
	// only, Inconclusive).
	Decision string
	// Canary and Baseline are the cumulative counts.
	Canary, Baseline Counts
	// Dispersion is the variance of the canary's share of bad events,
	// relative to independent events, estimated from the looks so far
	// (at least 1); the evidence of each look is tempered by it.
	Dispersion float64
	// Threshold is 1/Alpha.
	Threshold float64
}

// CountTest is a sequential count test. The zero value is not usable:
// make one with NewCountTest. It is not safe for concurrent use.
type CountTest struct {
	cfg       CountConfig
	threshold float64
	sign      float64 // +1: increase fails; −1: decrease fails

	look       int
	prev       CountLook
	cum        CountLook
	maxE       float64
	decided    string
	last       CountResult
	haveResult bool

	// Log-likelihood ratios, summed over looks, of each alternative of the
	// failure test (fail) and of the success test (pass) against their
	// nulls at the tolerance.
	fail, pass [len(countAlternatives)]float64
	// logAlt are the logs of the alternatives' ratios relative to the
	// tolerance, signed by direction; up and down the ratios themselves
	// and their inverses.
	logAlt, up, down [len(countAlternatives)]float64
	// csRatios are the ratios of the confidence sequence's extended grid.
	csRatios [csGrid + 2*csMaxOffset]float64

	// cs holds, for each ratio of the confidence sequence's grid, the sum
	// over looks of n_k·log(1 + r·o_k) (n_k the look's bad events, o_k the
	// canary:baseline exposure odds); canaryBad the sum of the canary's bad
	// events over the looks that had any.
	cs           [csGrid + 2*csMaxOffset]float64
	csCanaryBad  float64
	lower, upper int // grid indices still inside the sequence, inclusive

	// The terms of a look that depend on its odds alone, kept for the
	// odds termsOdds (haveTerms once set): log(1 + r·o) of the grid's
	// window and the alternatives' log(1 + τ·g·o) − log(1 + τ·o). A feed
	// whose shares repeat (fixed totals, a simulation) adds them again
	// without a logarithm; the sums are the same to the bit. The window
	// only narrows, so terms kept for the same odds stay valid for it.
	termsOdds            float64
	haveTerms            bool
	csTerms              [csGrid + 2*csMaxOffset]float64
	failTerms, passTerms [len(countAlternatives)]float64

	disp dispersion
}

// NewCountTest makes a test with cfg after WithDefaults, or returns the
// first invalid field.
func NewCountTest(cfg CountConfig) (*CountTest, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &CountTest{cfg: cfg, threshold: 1 / cfg.Alpha, sign: 1, maxE: 1, lower: 0, upper: csGrid - 1}
	if cfg.Direction == DirectionDecrease {
		t.sign = -1
	}
	t.disp.fixed = cfg.Dispersion
	t.disp.prior(cfg.History)
	for j, g := range countAlternatives {
		t.logAlt[j] = t.sign * math.Log(g)
		t.up[j] = math.Exp(t.logAlt[j])
		t.down[j] = 1 / t.up[j]
	}
	for i := range t.csRatios {
		t.csRatios[i] = csRatio(i - csMaxOffset)
	}
	return t, nil
}

// checkSide checks one side's cumulative counts against the previous look.
// sideFields are the names of a side's fields in problems.
type sideFields struct{ bad, total string }

var (
	canaryFields   = sideFields{"canary.bad", "canary.total"}
	baselineFields = sideFields{"baseline.bad", "baseline.total"}
	// historyFields name an interval of CountConfig.History; its index is
	// put in only when it has a problem.
	historyFields = sideFields{"history.bad", "history.total"}
)

func checkSide(f *sideFields, c, prev Counts) error {
	if err := checkCount(f.bad, c.Bad, prev.Bad); err != nil {
		return err
	}
	if err := checkCount(f.total, c.Total, prev.Total); err != nil {
		return err
	}
	if c.Bad > c.Total {
		return &FieldError{f.bad, fmt.Sprintf("more bad events (%g) than total events (%g)", c.Bad, c.Total)}
	}
	return nil
}

func checkCount(field string, v, prev float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return &FieldError{field, fmt.Sprintf("must be a finite number, got %g", v)}
	case v < 0:
		return &FieldError{field, fmt.Sprintf("must not be negative, got %g", v)}
	case v < prev:
		return &FieldError{field, fmt.Sprintf("counts are cumulative and must not decrease: %g after %g", v, prev)}
	}
	return nil
}

// Observe takes the next look's cumulative counts and returns the test at
// that look. Counts that are not finite, negative, decreasing, or with more
// bad than total events are refused with a *FieldError and leave the test
// as it was. After a decision, further looks keep updating the evidence
// and the counts; the decision stays.
func (t *CountTest) Observe(l CountLook) (CountResult, error) {
	if err := checkSide(&canaryFields, l.Canary, t.prev.Canary); err != nil {
		return CountResult{}, err
	}
	if err := checkSide(&baselineFields, l.Baseline, t.prev.Baseline); err != nil {
		return CountResult{}, err
	}
	ec, eb := l.Canary.Bad-t.prev.Canary.Bad, l.Baseline.Bad-t.prev.Baseline.Bad
	nc, nb := l.Canary.Total-t.prev.Canary.Total, l.Baseline.Total-t.prev.Baseline.Total
	t.prev, t.cum = l, l
	t.look++
	t.disp.add(ec, eb, nc, nb)
	if ec+eb > 0 {
		t.update(ec, eb, nc, nb)
	}
	return t.result(), nil
}

// exposureOdds is the canary:baseline odds of exposure for a look's bad
// events: from the look's totals, or, when a side with bad events served
// no events in the look (its totals ran behind), from all totals so far.
// ok is false when the odds are 0 or infinite even then: the look tells
// nothing about the ratio.
func (t *CountTest) exposureOdds(ec, eb, nc, nb float64) (o float64, ok bool) {
	if (nc > 0 || ec == 0) && (nb > 0 || eb == 0) && nc > 0 && nb > 0 {
		return nc / nb, true
	}
	c, b := t.cum.Canary.Total, t.cum.Baseline.Total
	if c > 0 && b > 0 {
		return c / b, true
	}
	return 0, false
}

func (t *CountTest) update(ec, eb, nc, nb float64) {
	o, ok := t.exposureOdds(ec, eb, nc, nb)
	if !ok {
		return
	}
	if !t.haveTerms || o != t.termsOdds {
		t.oddsTerms(o)
	}
	n := ec + eb
	// Failure test: null ratio = tolerance, alternatives tolerance·g^sign.
	// The log-likelihood ratio of ratio r1 against r0 for a look with
	// canary odds o: ec·log(r1/r0) − n·(log(1+r1·o) − log(1+r0·o)).
	for j, ls := range t.logAlt {
		t.fail[j] += ec*ls - n*t.failTerms[j]
		t.pass[j] += -ec*ls - n*t.passTerms[j]
	}
	// Confidence sequence: n·log(1 + r·o) on the grid.
	t.csCanaryBad += ec
	// Ratios that left the sequence are never tested again, nor are the
	// alternatives of ratios that left it, so only the sums of the
	// remaining window are kept up to date.
	hi := t.upper + 2*csMaxOffset
	cs, terms := t.cs[t.lower:hi+1], t.csTerms[t.lower:hi+1]
	for i := range cs {
		cs[i] += n * terms[i]
	}
}

// oddsTerms computes the terms of a look with odds o (see termsOdds).
func (t *CountTest) oddsTerms(o float64) {
	to := t.cfg.Tolerance * o
	base := math.Log1p(to)
	for j := range t.logAlt {
		t.failTerms[j] = math.Log1p(to*t.up[j]) - base
		t.passTerms[j] = math.Log1p(to*t.down[j]) - base
	}
	// log(1+x) rather than log1p(x), by gridLogs rather than math.Log:
	// they are faster, and the term's absolute error (what the sums'
	// differences see) stays within a few 1e-16 of the term's size, where
	// x is so small that 1+x rounds too.
	hi := t.upper + 2*csMaxOffset
	gridLogs(t.csTerms[t.lower:hi+1], t.csRatios[t.lower:hi+1], o)
	t.termsOdds, t.haveTerms = o, true
}

// csRatio is the ratio at grid index i (0 is the smallest of the
// sequence's own grid; the cs array extends csMaxOffset steps to either side).
func csRatio(i int) float64 {
	return math.Exp2(float64(i-csRange*csSteps) / csSteps)
}

func (t *CountTest) result() CountResult {
	tempo := 1 / t.disp.factor()
	e := weighted(&t.fail, tempo)
	if e > t.maxE {
		t.maxE = e
	}
	r := CountResult{
		Look:       t.look,
		EValue:     e,
		PValue:     math.Min(1, 1/t.maxE),
		Canary:     t.cum.Canary,
		Baseline:   t.cum.Baseline,
		Dispersion: 1 / tempo,
		Threshold:  t.threshold,
		Decision:   DecisionContinue,
	}
	r.Ratio = t.ratio(tempo)
	switch {
	case t.decided != "":
		r.Decision = t.decided
	case e >= t.threshold:
		t.decided = DecisionFailed
	case weightedReaches(&t.pass, tempo, math.Log(t.threshold)):
		t.decided = DecisionSuccessful
	}
	if t.decided != "" {
		r.Decision = t.decided
	}
	t.last, t.haveResult = r, true
	return r
}

// mixture is the e-value of a uniform mixture of alternatives whose
// log-likelihood ratios are ll, each tempered by tempo (1 for independent
// events).
func mixture(ll []float64, tempo float64) float64 {
	m := math.Inf(-1)
	for _, v := range ll {
		if w := v * tempo; w > m {
			m = w
		}
	}
	var s float64
	for _, v := range ll {
		// A term math.Exp would round to 0 adds nothing: skipping it is
		// exact, and spares the exponentials of a long test whose
		// alternatives' evidence lies far apart.
		if d := v*tempo - m; d >= expUnderflow {
			s += math.Exp(d)
		}
	}
	return math.Exp(m) * s / float64(len(ll))
}

// expUnderflow is the argument below which math.Exp returns 0.
const expUnderflow = -7.45133219101941108420e+02

// reaches tells whether the mixture of ll, tempered by tempo, reaches
// exp(logThreshold), computing the mixture only when its largest term
// leaves it in doubt: the mixture lies between that term divided by the
// number of terms and the term itself.
func reaches(ll []float64, tempo, logThreshold float64) bool {
	m := math.Inf(-1)
	for _, v := range ll {
		if w := v * tempo; w > m {
			m = w
		}
	}
	switch {
	case m < logThreshold:
		return false
	case m-math.Log(float64(len(ll))) >= logThreshold:
		return true
	}
	return math.Log(mixture(ll, tempo)) >= logThreshold
}

// weighted is the judge's e-value: the mixture of its alternatives'
// log-likelihood ratios ll, each tempered by tempo, with countWeights.
// Without evidence (every ll 0) it is exactly 1. It and weightedReaches
// are mixture and reaches with weights, kept apart from them: the
// confidence sequence calls reaches several times a look, and a weighted
// form shared by both cost a look about a quarter more
// (BenchmarkJudgeLooks/observe, 275 against 350 ns).
func weighted(ll *[len(countAlternatives)]float64, tempo float64) float64 {
	m := math.Inf(-1)
	for _, v := range ll {
		if w := v * tempo; w > m {
			m = w
		}
	}
	var s float64
	for j, v := range ll {
		if d := v*tempo - m; d >= expUnderflow {
			s += countWeights[j] * math.Exp(d)
		}
	}
	return math.Exp(m) * s / countWeightSum
}

// weightedReaches tells whether weighted(ll, tempo) reaches
// exp(logThreshold), computing it only when its largest term leaves it in
// doubt: the mixture lies between that term, its weight included, and the
// term times the number of terms.
func weightedReaches(ll *[len(countAlternatives)]float64, tempo, logThreshold float64) bool {
	m := math.Inf(-1)
	for j, v := range ll {
		if w := v*tempo + countLogShares[j]; w > m {
			m = w
		}
	}
	switch {
	case m >= logThreshold:
		return true
	case m+math.Log(float64(len(ll))) < logThreshold:
		return false
	}
	return math.Log(weighted(ll, tempo)) >= logThreshold
}

// ratio estimates the rate ratio and narrows the confidence sequence.
func (t *CountTest) ratio(tempo float64) RatioEstimate {
	c, b := t.cum.Canary, t.cum.Baseline
	est := math.NaN()
	if c.Total > 0 && b.Total > 0 && b.Bad > 0 {
		est = (c.Bad / c.Total) / (b.Bad / b.Total)
	} else if c.Total > 0 && b.Total > 0 && c.Bad > 0 {
		est = math.Inf(1)
	}
	// A grid ratio leaves the sequence when its two-sided mixture reaches
	// 1/alpha; the sequence only narrows (a running intersection).
	logThreshold := math.Log(t.threshold)
	for t.lower <= t.upper && t.csRejected(t.lower, tempo, logThreshold) {
		t.lower++
	}
	for t.upper >= t.lower && t.csRejected(t.upper, tempo, logThreshold) {
		t.upper--
	}
	r := RatioEstimate{Estimate: est, Lower: 0, Upper: math.Inf(1)}
	if t.lower > t.upper {
		// Every grid ratio is rejected: the data contradict the model (an
		// extreme ratio beyond the grid, or overdispersion unaccounted
		// for). Report the estimate alone.
		r.Lower, r.Upper = est, est
		return r
	}
	if t.lower > 0 {
		r.Lower = t.csRatios[t.lower-1+csMaxOffset]
	}
	if t.upper < csGrid-1 {
		r.Upper = t.csRatios[t.upper+1+csMaxOffset]
	}
	return r
}

// csRejected tells whether the grid ratio i is rejected: whether its
// two-sided mixture, against the ratios csOffsets steps away, tempered by
// tempo, reaches exp(logThreshold).
func (t *CountTest) csRejected(i int, tempo, logThreshold float64) bool {
	var ll [2 * len(csOffsets)]float64
	e := i + csMaxOffset // i's index in cs
	base, lr := t.cs[e], csLogRatios[e]
	for k, d := range csOffsets {
		up, down := e+d, e-d
		ll[2*k] = t.csCanaryBad*(csLogRatios[up]-lr) - (t.cs[up] - base)
		ll[2*k+1] = t.csCanaryBad*(csLogRatios[down]-lr) - (t.cs[down] - base)
	}
	return reaches(ll[:], tempo, logThreshold)
}

// csLogRatios are the logarithms of the ratios of the confidence
// sequence's extended grid (csRatios), by index in cs.
var csLogRatios = func() (l [csGrid + 2*csMaxOffset]float64) {
	for i := range l {
		l[i] = float64(i-csMaxOffset-csRange*csSteps) / csSteps * math.Ln2
	}
	return l
}()

// Conclude applies the rule of the last look to the latest result: a test
// that has not decided ends Successful, unless its evidence against "no
// worse than tolerance" has reached the square root of 1/alpha (an e-value
// of about 4.5 at alpha 0.05), when it ends Inconclusive: the canary looks
// worse, but not surely so.
func (t *CountTest) Conclude() CountResult {
	r := t.last
	if !t.haveResult {
		r = t.result()
	}
	if r.Decision == DecisionContinue {
		if r.EValue >= math.Sqrt(t.threshold) {
			r.Decision = DecisionInconclusive
		} else {
			r.Decision = DecisionSuccessful
		}
	}
	return r
}

// dispersion estimates how much more bad events vary than independent
// events would make them vary, from each side's Pearson statistic over
// blocks of looks: a side's bad events in each block against its rate over
// all blocks times the block's total. Bursts of errors (retries, one client
// failing repeatedly) make it exceed 1; the evidence is then tempered by
// it, so that a burst counts as less than independent events.
//
// A block gathers looks until it holds at least dispersionBlock bad events
// of both sides, and the block still open counts with the closed ones. So
// the statistic sees a burst while it is happening, whether the test is
// read once an interval or after every event: a look of one event alone
// could not tell a burst from chance.
type dispersion struct {
	// fixed, when not 0, is the factor, not estimated
	// (CountConfig.Dispersion).
	fixed float64
	// priorX2 and priorDF are the prior's Pearson statistic and degrees
	// of freedom: the baseline's history's (CountConfig.History), or
	// dispersionWeight blocks at dispersionPrior.
	priorX2, priorDF float64
	c, b             side
	// openC and openB are each side's counts in the block still gathering
	// looks.
	openC, openB blockSide
}

// blockSide is one side's bad and total events in the open block.
type blockSide struct{ bad, total float64 }

// side holds one side's sums for Pearson's statistic over closed blocks:
// blocks with events, bad events, total events, and Σ bad²/total.
type side struct {
	looks          int
	bad, total, sq float64
}

func (s *side) add(bad, total float64) {
	if total <= 0 {
		return
	}
	s.looks++
	s.bad += bad
	s.total += total
	s.sq += bad * bad / total
}

// pearson is Σ (bad_k − p·total_k)² / (p·total_k) with p = bad/total over
// the closed blocks and the open one, and its degrees of freedom.
func (s side) pearson(open blockSide) (x2, df float64) {
	s.add(open.bad, open.total)
	if s.looks < 2 || s.bad <= 0 {
		return 0, 0
	}
	return s.total/s.bad*s.sq - s.bad, float64(s.looks - 1)
}

// Without a history of the baseline (CountConfig.History), the prior of
// the dispersion is a factor of 2, worth one block of
// dispersionBlock bad events. The factor is the Pearson statistic plus the
// prior, over the 20% quantile of chi-square with the degrees of freedom
// of both (dispersionZ is that quantile's normal score), not over the
// degrees of freedom themselves: an estimate from a few blocks is as
// likely to fall short of the dispersion as to exceed it, and the test
// must not decide on a burst it has underestimated. So the first blocks
// are tempered strongly (a factor of about 36 with one block, 4 with two
// of Poisson events), and the factor nears the estimate as blocks
// accumulate (within 15% of it by 50 blocks). On the benchmark's bursty A/A canaries (bad events of up to
// four times the Poisson variance) this keeps false alarms under alpha
// whether the test is read at every interval or after every event, and it
// costs Poisson canaries events to a verdict (docs/judge.md).
const (
	dispersionPrior  = 2.0
	dispersionWeight = 1.0
	dispersionBlock  = 10.0
	dispersionZ      = -0.8416212335729143
)

// chi2Lower is the quantile of chi-square with df degrees of freedom at
// the normal score dispersionZ, by Wilson and Hilferty's cube-root
// approximation (never below df·0.05³, where the approximation fails).
func chi2Lower(df float64) float64 {
	a := 2 / (9 * df)
	v := math.Max(1-a+dispersionZ*math.Sqrt(a), 0.05)
	return df * v * v * v
}

func (d *dispersion) add(ec, eb, nc, nb float64) {
	d.openC.bad += ec
	d.openC.total += nc
	d.openB.bad += eb
	d.openB.total += nb
	if d.openC.bad+d.openB.bad >= dispersionBlock {
		d.c.add(d.openC.bad, d.openC.total)
		d.b.add(d.openB.bad, d.openB.total)
		d.openC, d.openB = blockSide{}, blockSide{}
	}
}

func (d *dispersion) factor() float64 {
	if d.fixed != 0 {
		return d.fixed
	}
	xc, dc := d.c.pearson(d.openC)
	xb, db := d.b.pearson(d.openB)
	df := dc + db + d.priorDF
	phi := (xc + xb + d.priorX2) / chi2Lower(df)
	return math.Max(1, phi)
}

// historyBlock is the fewest bad events of a block of the baseline's
// history: the usual rule for Pearson's statistic, five expected in each
// cell. The history is long (a day of one-minute intervals is 1,440), so
// its blocks can be smaller than the looks' (dispersionBlock), which must
// say something from the first minutes.
const historyBlock = 5.0

// prior sets the prior from the baseline's history: its intervals'
// bad and total events, in blocks of at least historyBlock bad events
// (the last, open block counted), and Pearson's statistic over them; or the
// default prior when the history has no bad events or fewer than two
// blocks.
func (d *dispersion) prior(history []Counts) {
	d.priorX2, d.priorDF = dispersionWeight*dispersionPrior, dispersionWeight
	var s side
	var open, prev Counts
	for _, h := range history {
		open.Bad += h.Bad - prev.Bad
		open.Total += h.Total - prev.Total
		prev = h
		if open.Bad >= historyBlock {
			s.add(open.Bad, open.Total)
			open = Counts{}
		}
	}
	if x2, df := s.pearson(blockSide{open.Bad, open.Total}); df >= 1 {
		d.priorX2, d.priorDF = x2, df
	}
}

// DirichletMultinomialLogBF is the log of Lindon & Malek's Bayes factor for
// counts of events among arms with null shares theta0 (summing to 1), under
// a Dirichlet(k·theta0) prior on the shares:
//
//	log B(k·theta0 + counts) − log B(k·theta0) − Σ counts_i·log theta0_i
//
// with B the multivariate Beta function. It is an e-value for "the shares
// are theta0" when the shares are fixed in advance (savvi's Multinomial and
// InhomogeneousPoissonProcess, seqabpy's sequential_p_value). The count
// judge does not use it, since its shares change with the traffic; the
// benchmark runs it as a reference method.
func DirichletMultinomialLogBF(counts, theta0 []float64, k float64) float64 {
	var a, an, sum, sumN float64
	for i, c := range counts {
		a0 := k * theta0[i]
		la, _ := math.Lgamma(a0)
		ln, _ := math.Lgamma(a0 + c)
		a += la
		an += ln
		sum += a0
		sumN += a0 + c
		if c > 0 {
			an -= c * math.Log(theta0[i])
		}
	}
	ls, _ := math.Lgamma(sum)
	lsn, _ := math.Lgamma(sumN)
	return (an - lsn) - (a - ls)
}
