package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	stats "github.com/canaryd/canaryd/internal/judge"
)

// countVerdictOf is what a counts measurement makes of the count test's
// result: the classification scoring reads (as a sample judge's), the
// reason, and whether it is critical.
type countVerdictOf struct {
	classification string
	reason         string
	critical       bool
	last           bool
}

// noEvents reports whether a side has served no event: no series, or no
// traffic yet. The test then has nothing to compare.
func noEvents(r stats.CountResult) bool { return r.Canary.Total == 0 || r.Baseline.Total == 0 }

// countVerdict classifies a count test's result: Failed is High (Low
// for direction decrease); continue and Successful are Pass; a side
// without events is Nodata, and so is the last look's Inconclusive, which
// is no verdict (as a plain metric's Inconclusive is Nodata to scoring).
// A critical metric's High, Low and Nodata are critical, as Kayenta's.
//
// observed is the test's decision at its last look, before the last look's
// rule: Successful there is an early Successful.
func countVerdict(r stats.CountResult, observed string, cfg stats.CountConfig, last, critical bool, step time.Duration) countVerdictOf {
	v := countVerdictOf{classification: string(stats.Pass), last: last}
	e, th := formatSig(r.EValue), formatSig(r.Threshold)
	lastLook := ""
	if last {
		lastLook = "the last "
	}
	switch {
	case r.Decision == stats.DecisionFailed:
		v.classification = string(stats.High)
		word := "above"
		if cfg.Direction == stats.DirectionDecrease {
			v.classification, word = string(stats.Low), "below"
		}
		v.reason = fmt.Sprintf("the canary's rate of bad events is %s %s: the e-value reached %s ≥ 1/alpha = %s (by %slook %d)",
			word, timesBaseline(cfg.Tolerance), e, th, lastLook, r.Look)
	case r.Look == 0:
		v.classification = string(stats.Nodata)
		v.reason = fmt.Sprintf("no look yet: the first is %s after the analysis' start", step)
		if last {
			v.reason += "; nothing was counted by the last measurement (give the metric an interval, or an initialDelay)"
		}
	case noEvents(r):
		v.classification = string(stats.Nodata)
		side := "the canary has"
		switch {
		case r.Canary.Total == 0 && r.Baseline.Total == 0:
			side = "neither side has"
		case r.Canary.Total > 0:
			side = "the baseline has"
		}
		v.reason = fmt.Sprintf("%s served no event by %slook %d (no series, or no traffic yet): nothing to compare", side, lastLook, r.Look)
	case r.Decision == stats.DecisionInconclusive:
		v.classification = string(stats.Nodata)
		v.reason = fmt.Sprintf("the last look (%d) ended the test undecided, its e-value %s ≥ √(1/alpha) = %s: the canary looks worse, but not surely so",
			r.Look, e, formatSig(math.Sqrt(r.Threshold)))
	case r.Decision == stats.DecisionSuccessful && observed != stats.DecisionSuccessful:
		v.reason = fmt.Sprintf("the last look (%d) ended the test undecided, its e-value %s under √(1/alpha) = %s: no evidence that the canary is worse",
			r.Look, e, formatSig(math.Sqrt(r.Threshold)))
	case r.Decision == stats.DecisionSuccessful:
		v.reason = fmt.Sprintf("the canary's rate of bad events is shown to be within %s (by look %d)", timesBaseline(cfg.Tolerance), r.Look)
	default:
		v.reason = fmt.Sprintf("no decision yet at look %d: the e-value %s is under 1/alpha = %s", r.Look, e, th)
	}
	v.critical = critical && v.classification != string(stats.Pass)
	return v
}

// countValue is a counts measurement's result, what the conditions see:
// the count test's numbers at the last look (see doc.go), with nil for a
// number that is not finite (a ratio's upper bound before the counts bound
// it).
func countValue(r stats.CountResult, cfg stats.CountConfig, v countVerdictOf) map[string]any {
	counts := func(c stats.Counts) map[string]any {
		return map[string]any{"bad": number(c.Bad), "total": number(c.Total)}
	}
	return map[string]any{
		"decision":       r.Decision,
		"classification": v.classification,
		"reason":         v.reason,
		"critical":       v.critical,
		"look":           r.Look,
		"last":           v.last,
		"eValue":         number(r.EValue),
		"pValue":         number(r.PValue),
		"threshold":      number(r.Threshold),
		"dispersion":     number(r.Dispersion),
		"ratio": map[string]any{
			"estimate": number(r.Ratio.Estimate), "lower": number(r.Ratio.Lower), "upper": number(r.Ratio.Upper),
		},
		"canary":    counts(r.Canary),
		"baseline":  counts(r.Baseline),
		"alpha":     cfg.Alpha,
		"tolerance": cfg.Tolerance,
		"direction": string(cfg.Direction),
	}
}

// countDisplay is a counts measurement in one sentence: the decision and
// its look, each side's counts, the rate ratio with its confidence
// sequence, and the e-value against its threshold:
//
//	Failed at look 7: canary 14 bad of 1,020, baseline 31 of 9,870; rate ratio 4.4 [1.9, 10]; e-value 41 ≥ 20
func countDisplay(r stats.CountResult, v countVerdictOf) string {
	var b strings.Builder
	decision := r.Decision
	if v.classification == string(stats.Nodata) && r.Decision != stats.DecisionInconclusive {
		decision += " (no data)"
	}
	fmt.Fprintf(&b, "%s at look %d", decision, r.Look)
	if v.last {
		b.WriteString(" (the last)")
	}
	fmt.Fprintf(&b, ": canary %s bad of %s, baseline %s of %s", formatCount(r.Canary.Bad), formatCount(r.Canary.Total),
		formatCount(r.Baseline.Bad), formatCount(r.Baseline.Total))
	if r.Look == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "; rate ratio %s [%s, %s]", formatSig(r.Ratio.Estimate), formatSig(r.Ratio.Lower), formatSig(r.Ratio.Upper))
	cmp := "<"
	if r.EValue >= r.Threshold {
		cmp = "≥"
	}
	fmt.Fprintf(&b, "; e-value %s %s %s", formatSig(r.EValue), cmp, formatSig(r.Threshold))
	return b.String()
}

// formatSig writes f with at most 3 significant digits ("4.4", "10.2",
// "1.3e+04"); ∞ and n/a for what is not a number.
func formatSig(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "∞"
	case math.IsInf(f, -1):
		return "-∞"
	case math.IsNaN(f):
		return "n/a"
	case math.Abs(f) >= 1000 && math.Abs(f) < 1e6:
		return formatCount(math.Round(f))
	}
	return strconv.FormatFloat(f, 'g', 3, 64)
}

// formatCount writes a count with thousands separators (1,020); one that
// is not a whole number (a counter of seconds, a rate's extrapolation)
// with 6 significant digits.
func formatCount(f float64) string {
	if f != math.Trunc(f) || math.Abs(f) >= 1e15 || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	s := strconv.FormatFloat(math.Abs(f), 'f', 0, 64)
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// timesBaseline names the rate a tolerance allows: "the baseline's", or
// "1.2 times the baseline's".
func timesBaseline(tolerance float64) string {
	if tolerance == 1 {
		return "the baseline's"
	}
	return formatSig(tolerance) + " times the baseline's"
}
