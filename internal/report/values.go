package report

import (
	"fmt"
	"math"
	"strconv"
)

// displayValue is a measurement's value as a person reads it: a number to
// three significant digits ("0.950", not "[0.95]"), a vector of one series
// as its one value, a vector of several as its first value with the count
// and range of the series. Digits are added where three would put the
// value on the other side of a threshold (0.98951 is "0.9895" beside
// 0.99, never "0.990"). A value that is not a number is shown as it is.
func displayValue(s string, thresholds ...float64) string {
	v := parseValue(s)
	switch {
	case s == "":
		return "-"
	case !v.numbered:
		return s
	case !v.ok && v.shape.vector && v.shape.n == 0:
		return "no data (empty)"
	case !v.ok:
		return "NaN"
	case v.shape.vector && v.shape.n > 1:
		return fmt.Sprintf("%s (%d series, %s to %s)", fmtNum(v.y, thresholds...), v.shape.n,
			fmtNum(v.lo, thresholds...), fmtNum(v.hi, thresholds...))
	}
	return fmtNum(v.y, thresholds...)
}

// fmtNum is a value to three significant digits, or more where fewer would
// move it onto or across one of near.
func fmtNum(f float64, near ...float64) string {
	if f == 0 {
		return "0"
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	a := math.Abs(f)
	for digits := 3; digits <= 17; digits++ {
		var s string
		if a >= 1e6 || a < 1e-4 {
			s = strconv.FormatFloat(f, 'g', digits, 64)
		} else {
			s = strconv.FormatFloat(f, 'f', max(0, digits-1-int(math.Floor(math.Log10(a)))), 64)
		}
		r, err := strconv.ParseFloat(s, 64)
		if err != nil {
			break
		}
		same := true
		for _, t := range near {
			if (r == t) != (f == t) || (r < t) != (f < t) {
				same = false
			}
		}
		if same {
			return s
		}
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
