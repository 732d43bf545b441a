package judge

import "math"

// zeroin finds a zero of f in [a, b] by Brent's method (Brent 1973,
// "Algorithms for Minimization without Derivatives", ch. 4), given
// fa = f(a) and fb = f(b) of opposite signs (or one of them zero), to within
// tol. It takes the same steps as R's uniroot (its C routine R_zeroin2), the
// root finder of wilcox.test: each step interpolates (secant or inverse
// quadratic) when that promises progress, bisects otherwise, and never steps
// less than the tolerance. Taking R's steps matters more than usual here,
// because wilcox.test's function is a step function: the root found is the
// last iterate, anywhere within tol of the jump, and only the same iterates
// give the same answer.
//
// It gives up after maxIter+1 iterations and returns the last iterate, as R
// does (with a warning there).
func zeroin(f func(float64) float64, a, b, fa, fb, tol float64, maxIter int) float64 {
	const eps = 2.220446049250313e-16 // DBL_EPSILON

	// b is the best estimate so far, a the previous one, and c the point
	// that brackets the root with b.
	c, fc := a, fa
	if fa == 0 {
		return a
	}
	if fb == 0 {
		return b
	}
	for range maxIter + 1 {
		prevStep := b - a
		if math.Abs(fc) < math.Abs(fb) {
			a, b, c = b, c, b
			fa, fb, fc = fb, fc, fb
		}
		tolAct := float64(2*eps*math.Abs(b)) + tol/2
		newStep := (c - b) / 2
		if math.Abs(newStep) <= tolAct || fb == 0 {
			return b
		}
		if math.Abs(prevStep) >= tolAct && math.Abs(fa) > math.Abs(fb) {
			// Interpolation may be tried: the step is p/q, the division
			// delayed to the end to avoid overflow.
			var p, q float64
			cb := c - b
			if a == c {
				t1 := fb / fa // secant
				p = cb * t1
				q = 1 - t1
			} else {
				q0, t1, t2 := fa/fc, fb/fc, fb/fa // inverse quadratic
				p = t2 * (float64(cb*q0*(q0-t1)) - float64((b-a)*(t1-1)))
				q = (q0 - 1) * (t1 - 1) * (t2 - 1)
			}
			if p > 0 {
				q = -q
			} else {
				p = -p
			}
			// Accept the interpolation if it lands well inside [b, c] and
			// is smaller than half the step before last.
			if p < float64(0.75*cb*q)-math.Abs(tolAct*q)/2 && p < math.Abs(prevStep*q/2) {
				newStep = p / q
			}
		}
		if math.Abs(newStep) < tolAct {
			if newStep > 0 {
				newStep = tolAct
			} else {
				newStep = -tolAct
			}
		}
		a, fa = b, fb
		b += newStep
		fb = f(b)
		if (fb > 0 && fc > 0) || (fb < 0 && fc < 0) {
			c, fc = a, fa
		}
	}
	return b
}
