package instant

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrEmpty is Parse's error for an empty value: the caller decides whether
// the instant is required.
var ErrEmpty = errors.New("required (RFC 3339 like 2026-11-21T09:00:00Z, Unix seconds, or a duration before now like -24h)")

// Parse reads s as an instant: RFC 3339 ("2026-11-21T09:00:00Z"), Unix
// seconds ("1763715600", fractions allowed), or a Go duration relative to
// now ("-24h", "-90m"; a positive one is in the future). Surrounding white
// space is ignored. Its errors say what was wanted, quoting s, and are fit
// to show to whoever typed it.
func Parse(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, ErrEmpty
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, ok := unixDecimal(s); ok {
		return t, nil
	}
	// A number without a unit is seconds; "1h" is not a number, and the
	// check on letters keeps "1e3h" and friends out of this branch.
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "hms") {
		// Beyond ±2^63 ns (the years 1678 to 2262) a time.Time made from
		// nanoseconds wraps; such a value is a mistake, not a date.
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
			return time.Time{}, fmt.Errorf("%q is out of range: Unix seconds must fall between the years 1678 and 2262", s)
		}
		return time.Unix(0, int64(secs*float64(time.Second))), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2026-11-21T09:00:00Z), Unix seconds, or a duration relative to now (-24h)", s)
}

// unixDecimal reads Unix seconds written as digits with an optional
// fraction exactly, to the nanosecond, which a float64 cannot hold for
// today's dates.
func unixDecimal(s string) (time.Time, bool) {
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && (frac == "" || len(frac) > 9) {
		return time.Time{}, false
	}
	digits := strings.TrimPrefix(strings.TrimPrefix(whole, "-"), "+")
	if digits == "" || strings.Trim(digits, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || sec > math.MaxInt64/int64(time.Second) || sec < math.MinInt64/int64(time.Second)+1 {
		return time.Time{}, false
	}
	var nsec int64
	if frac != "" {
		nsec, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	if strings.HasPrefix(whole, "-") {
		nsec = -nsec
	}
	return time.Unix(sec, nsec), true
}
