package graphite

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// window is a query's from and until, read so that the query can be sent
// as of any instant: Graphite reads a relative time ("-5min", "now")
// against its own clock, so canaryd sends each as the Unix time it means
// at the measurement's instant, which lets a backtest measure the past
// with the same template. A time of another form ("yesterday",
// "12:00_20260101") is sent as it is; then the window is not relative to
// the measurement's instant (fixed is set), and a measurement of the past
// is an Error rather than a measurement of the present.
type window struct {
	// from and until are offsets from the instant; until is 0 when the
	// query sets none or "now", from -24h when it sets none (Graphite's
	// defaults).
	from, until time.Duration
	// fixed is set when from or until has a form that is not an offset
	// from now: the query is sent as it is.
	fixed bool
}

// defaultFrom is Graphite's from when the query sets none.
const defaultFrom = -24 * time.Hour

// parseWindow reads the query's from and until; the message says why the
// query is refused ("" when it is not): each of them set more than once.
func parseWindow(v url.Values) (window, string) {
	if len(v["from"]) > 1 || len(v["until"]) > 1 {
		return window{}, "the query sets from or until more than once"
	}
	w := window{from: defaultFrom}
	if s, ok := v["from"]; ok {
		d, ok := offset(s[0])
		w.from, w.fixed = d, !ok
	}
	if s, ok := v["until"]; ok {
		d, ok := offset(s[0])
		w.until, w.fixed = d, w.fixed || !ok
	}
	return w, ""
}

// appendAt appends to the URL b the from and until parameters: the Unix
// times the window means at t.
func (w window) appendAt(b []byte, t time.Time) []byte {
	b = append(b, "&from="...)
	b = strconv.AppendInt(b, t.Add(w.from).Unix(), 10)
	b = append(b, "&until="...)
	return strconv.AppendInt(b, t.Add(w.until).Unix(), 10)
}

// units are Graphite's offset units, by the prefix it matches them on
// (graphite-web's attime.getUnitString): a month is 30 days, a year 365.
var units = []struct {
	prefix string
	d      time.Duration
}{
	{"s", time.Second},
	{"min", time.Minute},
	{"h", time.Hour},
	{"d", 24 * time.Hour},
	{"w", 7 * 24 * time.Hour},
	{"mon", 30 * 24 * time.Hour},
	{"y", 365 * 24 * time.Hour},
}

// offset reads a relative time as Graphite does: "now", or a signed
// number and unit ("-5min", "+1h"), possibly after "now" and repeated
// ("now-1d-2h"). ok is false for any other form.
func offset(s string) (time.Duration, bool) {
	s = strings.ToLower(s)
	s = strings.TrimPrefix(s, "now")
	var total time.Duration
	for s != "" {
		sign := time.Duration(1)
		switch s[0] {
		case '-':
			sign = -1
		case '+':
		default:
			return 0, false
		}
		s = s[1:]
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, false
		}
		n, _ := strconv.Atoi(s[:i])
		s = s[i:]
		j := 0
		for j < len(s) && 'a' <= s[j] && s[j] <= 'z' {
			j++
		}
		unit, rest := s[:j], s[j:]
		d := time.Duration(0)
		for _, u := range units {
			if unit != "" && strings.HasPrefix(unit, u.prefix) {
				d = u.d
				break
			}
		}
		if d == 0 || time.Duration(n) > (1<<60)/d {
			return 0, false
		}
		total += sign * time.Duration(n) * d
		s = rest
	}
	return total, true
}
