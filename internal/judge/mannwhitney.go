package judge

import (
	"errors"
	"math"
	"sort"
)

// rootTolerance and rootMaxIter are wilcox.test's tol.root and uniroot's
// maxiter: the interval bounds and the estimate are found to within 1e-4, as
// in R (and in Kayenta's BrentSolver).
const (
	rootTolerance = 1e-4
	rootMaxIter   = 1000
)

// Errors of MannWhitney. When MannWhitney returns ErrTied, ErrNoRoot or
// ErrNonFinite it still fills in W and PValue, which do not need the
// interval.
var (
	// ErrNoData means that x or y has no observations once NaNs are dropped.
	ErrNoData = errors.New("not enough observations: each sample needs at least one non-NaN value")
	// ErrConfLevel means that the confidence level is not strictly between 0
	// and 1.
	ErrConfLevel = errors.New("confidence level must be a number strictly between 0 and 1")
	// ErrTied is R's "cannot compute confidence interval when all
	// observations are tied": at some location shift every observation of
	// both samples is equal, which happens when each sample is constant.
	// The rank statistic has no variance there, so the interval cannot be
	// found by inverting it.
	ErrTied = errors.New("cannot compute confidence interval when all observations are tied")
	// ErrNoRoot is R's "f() values at end points not of opposite sign":
	// W(min(x) − max(y)) and W(max(x) − min(y)) have the same sign, which
	// by construction they cannot, unless rounding in x − d breaks a tie at
	// the extremes of almost entirely tied samples.
	// ErrNonFinite means that a sample holds ±Inf, or that the range of
	// location shifts overflows: the interval is undefined (R fails with
	// "invalid 'xmax' value").
	ErrNoRoot    = errors.New("cannot compute the estimate: the rank statistic does not change sign over the range of location shifts")
	ErrNonFinite = errors.New("cannot compute confidence interval: infinite values or an infinite range of location shifts")
)

// MWResult is the outcome of a two-sided Mann-Whitney U test of x against y,
// with the Hodges-Lehmann estimate of the location shift x − y and its
// confidence interval. The fields are those of R's htest object.
type MWResult struct {
	// W is the Wilcoxon rank-sum statistic of x: the sum of x's ranks in
	// the pooled sample minus nx(nx+1)/2, which equals the Mann-Whitney U
	// of x (R's statistic W).
	W float64
	// PValue is the two-sided p-value of the normal approximation with
	// tie and continuity corrections. It is NaN when every observation is
	// tied, as in R.
	PValue float64
	// Estimate is the Hodges-Lehmann estimate of the shift x − y as R
	// computes it when exact = FALSE: the zero of the standardized rank
	// statistic (not the median of the pairwise differences, though it is
	// close to it), found to within 1e-4.
	Estimate float64
	// Lower and Upper bound the confidence interval for the shift x − y,
	// by inverting the normal approximation (Bauer 1972). Like R, they are
	// clamped to [min(x) − max(y), max(x) − min(y)].
	Lower, Upper float64
}

// MannWhitney performs the two-sample, two-sided Mann-Whitney U test
// (Wilcoxon rank-sum test) of x against y, with a confidence interval at
// confLevel for the location shift x − y, computing what R computes with
//
//	wilcox.test(x, y, conf.int = TRUE, conf.level = confLevel,
//	            exact = FALSE, correct = TRUE)
//
// That is: the normal approximation with tie and continuity corrections,
// and the Hodges-Lehmann estimate and the confidence interval as the zeros,
// found by Brent's method to within 1e-4, of the standardized statistic as a
// function of the shift. Results agree with R 4.2 to 1e-6 (see the golden
// test in testdata/judge).
//
// NaNs are dropped from both samples first, as R does. The error is
// ErrNoData if either sample is then empty, ErrConfLevel if confLevel is not
// in (0, 1), ErrTied if each sample is constant (R fails there too),
// ErrNonFinite for ±Inf values and ErrNoRoot where R's uniroot would fail.
// With the last three, W and PValue are still set and Estimate, Lower and
// Upper are NaN.
func MannWhitney(x, y []float64, confLevel float64) (MWResult, error) {
	nan := math.NaN()
	res := MWResult{W: nan, PValue: nan, Estimate: nan, Lower: nan, Upper: nan}
	if !(confLevel > 0 && confLevel < 1) {
		return res, ErrConfLevel
	}
	w := newWilcoxon(dropNaN(x), dropNaN(y))
	if len(w.x) == 0 || len(w.y) == 0 {
		return res, ErrNoData
	}

	// The test: ranks of x and y pooled, W from x's rank sum.
	rankSum, ties := w.ranks(0)
	res.W = rankSum - w.nx*(w.nx+1)/2
	z := res.W - w.nx*w.ny/2
	z = (z - sign(z)*0.5) / w.sigma(ties)
	// 2·min(P(Z < z), P(Z > z)), from the smaller tail so that small
	// p-values keep their precision; NaN when all observations tie (z = 0/0).
	res.PValue = 2 * pnormUpper(math.Abs(z))

	// The interval: the shifts d where the standardized statistic of x − d
	// against y crosses the normal quantiles.
	muMin := w.x[0] - w.y[len(w.y)-1]
	muMax := w.x[len(w.x)-1] - w.y[0]
	if !isFinite(muMin) || !isFinite(muMax) {
		// ±Inf in a sample, or a difference that overflows (NaN when both
		// samples reach the same infinity).
		return res, ErrNonFinite
	}
	wMin, wMax := w.standardized(muMin), w.standardized(muMax)
	if math.IsNaN(wMin) || math.IsNaN(wMax) || !(muMin < muMax) {
		return res, ErrTied
	}
	alpha := 1 - confLevel
	root := func(zq float64) float64 {
		fLower := wMin - zq
		if fLower <= 0 {
			return muMin
		}
		fUpper := wMax - zq
		if fUpper >= 0 {
			return muMax
		}
		return zeroin(func(d float64) float64 { return w.standardized(d) - zq },
			muMin, muMax, fLower, fUpper, rootTolerance, rootMaxIter)
	}
	lower := root(qnorm(alpha/2, false))
	upper := root(qnorm(alpha/2, true))
	// Each end is found to within rootTolerance. Where the statistic jumps
	// across both quantiles at one shift (heavily tied samples), both ends
	// are that shift and may come out in either order; R leaves them so,
	// canaryd orders them.
	if lower > upper {
		lower, upper = upper, lower
	}
	// The estimate is the zero of the statistic without the continuity
	// correction: wilcox.test sets correct <- FALSE before finding it.
	// (Kayenta keeps the correction here, which moves its estimate by less
	// than the root-finding tolerance in most samples; R is the reference.)
	plain := w.standardizedUncorrected
	pMin, pMax := plain(muMin), plain(muMax)
	if sign(pMin)*sign(pMax) > 0 {
		return res, ErrNoRoot
	}
	res.Estimate = zeroin(plain, muMin, muMax, pMin, pMax, rootTolerance, rootMaxIter)
	res.Lower, res.Upper = lower, upper
	return res, nil
}

// wilcoxon holds two samples, sorted, for evaluating the rank statistic of
// x − d against y at many shifts d.
type wilcoxon struct {
	x, y   []float64
	nx, ny float64
}

func newWilcoxon(x, y []float64) *wilcoxon {
	sort.Float64s(x)
	sort.Float64s(y)
	return &wilcoxon{x: x, y: y, nx: float64(len(x)), ny: float64(len(y))}
}

// ranks ranks the pooled sample {x_i − d} ∪ {y_j}, ties getting their average
// rank, and returns the sum of the ranks of the x's and Σ(t³ − t) over the
// groups of t tied values. Both samples are sorted and x_i − d is monotone in
// x_i, so one merge does it. x_i − d is computed exactly as R computes
// c(x - d, y), so ties are the same ties.
func (w *wilcoxon) ranks(d float64) (rankSum, ties float64) {
	i, j, pos := 0, 0, 0
	for i < len(w.x) || j < len(w.y) {
		var v float64
		switch {
		case j == len(w.y):
			v = w.x[i] - d
		case i == len(w.x):
			v = w.y[j]
		default:
			v = math.Min(w.x[i]-d, w.y[j])
		}
		cx, cy := 0, 0
		for i < len(w.x) && w.x[i]-d == v {
			i++
			cx++
		}
		for j < len(w.y) && w.y[j] == v {
			j++
			cy++
		}
		t := cx + cy
		if t == 0 {
			// Only a NaN shift gets here (x_i − d == v fails for NaN);
			// MannWhitney never asks for one, but a loop must not hang.
			return math.NaN(), math.NaN()
		}
		// The ranks pos+1 … pos+t average to pos + (t+1)/2.
		rankSum += float64(cx) * (float64(pos) + float64(t+1)/2)
		tt := float64(t)
		ties += tt*tt*tt - tt
		pos += t
	}
	return rankSum, ties
}

// sigma is the standard deviation of W under the null hypothesis, corrected
// for ties, in R's order of operations.
func (w *wilcoxon) sigma(ties float64) float64 {
	n := w.nx + w.ny
	return math.Sqrt((w.nx * w.ny / 12) * ((n + 1) - ties/(n*(n-1))))
}

// standardized is wilcox.test's W(d): the continuity-corrected, standardized
// rank statistic of x − d against y. It decreases (in steps) as d grows; it is
// NaN where every observation is tied.
func (w *wilcoxon) standardized(d float64) float64 {
	rankSum, ties := w.ranks(d)
	dz := rankSum - w.nx*(w.nx+1)/2 - w.nx*w.ny/2
	s := w.sigma(ties)
	if s == 0 {
		return math.NaN()
	}
	return (dz - sign(dz)*0.5) / s
}

// standardizedUncorrected is standardized without the continuity
// correction, the function whose zero is the Hodges-Lehmann estimate.
func (w *wilcoxon) standardizedUncorrected(d float64) float64 {
	rankSum, ties := w.ranks(d)
	dz := rankSum - w.nx*(w.nx+1)/2 - w.nx*w.ny/2
	return dz / w.sigma(ties)
}

// sign is R's sign: −1, 0 or 1 (and NaN for NaN).
func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v // 0 or NaN
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// dropNaN returns a copy of v without its NaNs.
func dropNaN(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, f := range v {
		if !math.IsNaN(f) {
			out = append(out, f)
		}
	}
	return out
}
