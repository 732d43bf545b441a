package judge

import "math"

// The standard normal distribution, as far as the Mann-Whitney test needs it.
//
// qnorm follows R's qnorm (Wichura's algorithm AS 241, PPND16) branch for
// branch, so that the quantile that the confidence interval inverts is the
// very double R uses: the Brent search that finds the interval is sensitive to
// the last bit of its target only when it lands on a jump of the rank
// statistic, but that is exactly where a stray bit would move a bound by up to
// the search tolerance. pnorm needs no such care: the p-value is a closed
// form, and Go's Erfc is accurate to an ulp or two.

// Coefficients of AS 241 (Wichura 1988, Applied Statistics 37(3), 477-484),
// highest degree first, as horner takes them.
var (
	// |q| <= 0.425: numerator and denominator in r = 0.180625 - q².
	as241A = []float64{2509.0809287301226727, 33430.575583588128105, 67265.770927008700853,
		45921.953931549871457, 13731.693765509461125, 1971.5909503065514427,
		133.14166789178437745, 3.387132872796366608}
	as241B = []float64{5226.495278852854561, 28729.085735721942674, 39307.89580009271061,
		21213.794301586595867, 5394.1960214247511077, 687.1870074920579083,
		42.313330701600911252, 1}
	// Tails with r = sqrt(-log(min(p, 1-p))) <= 5, in r - 1.6.
	as241C = []float64{7.7454501427834140764e-4, .0227238449892691845833, .24178072517745061177,
		1.27045825245236838258, 3.64784832476320460504, 5.7694972214606914055,
		4.6303378461565452959, 1.42343711074968357734}
	as241D = []float64{1.05075007164441684324e-9, 5.475938084995344946e-4, .0151986665636164571966,
		.14810397642748007459, .68976733498510000455, 1.6763848301838038494,
		2.05319162663775882187, 1}
	// Far tails, r > 5, in r - 5.
	as241E = []float64{2.01033439929228813265e-7, 2.71155556874348757815e-5, .0012426609473880784386,
		.026532189526576123093, .29656057182850489123, 1.7848265399172913358,
		5.4637849111641143699, 6.6579046435011037772}
	as241F = []float64{2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5,
		7.868691311456132591e-4, .0148753612908506148525, .13692988092273580531,
		.59983220655588793769, 1}
)

// horner evaluates the polynomial with coefficients c (highest degree first)
// at r. The explicit float64 conversion stops the compiler from fusing the
// multiply and the add (the Go spec allows it on some architectures), so the
// result is the same double on every platform and the same as R's.
func horner(c []float64, r float64) float64 {
	v := c[0]
	for _, k := range c[1:] {
		v = float64(v*r) + k
	}
	return v
}

// qnorm returns the standard normal quantile of probability p, of the lower
// tail if lower is true and of the upper tail otherwise, as R's
// qnorm(p, lower.tail = lower) computes it.
func qnorm(p float64, lower bool) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		if lower {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case p == 1:
		if lower {
			return math.Inf(1)
		}
		return math.Inf(-1)
	}
	pLower := p // the lower-tail probability, R's p_
	if !lower {
		pLower = 0.5 - p + 0.5
	}
	q := pLower - 0.5
	if math.Abs(q) <= 0.425 {
		r := 0.180625 - q*q
		return q * horner(as241A, r) / horner(as241B, r)
	}
	// r is the smaller tail probability, taken from p itself where p is that
	// tail, so that no precision is lost to 1 - p.
	var r float64
	if q > 0 {
		if lower {
			r = 0.5 - p + 0.5
		} else {
			r = p
		}
	} else {
		r = pLower
	}
	r = math.Sqrt(-math.Log(r))
	var val float64
	if r <= 5 {
		r -= 1.6
		val = horner(as241C, r) / horner(as241D, r)
	} else {
		r -= 5
		val = horner(as241E, r) / horner(as241F, r)
	}
	if q < 0 {
		val = -val
	}
	return val
}

// pnormUpper returns P(Z > z) for a standard normal Z.
func pnormUpper(z float64) float64 {
	return 0.5 * math.Erfc(z/math.Sqrt2)
}
