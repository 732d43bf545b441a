package spec

import (
	"fmt"
	"regexp"
	"time"
)

// IntervalDuration returns the metric's interval: the gap between the end of
// one measurement and the start of the next. It is zero when no interval is
// given. The error carries Argo's message.
func (m *Metric) IntervalDuration() (time.Duration, error) {
	d, err := parseDuration(m.Interval)
	if err != nil {
		return 0, fmt.Errorf("invalid interval string: %w", err)
	}
	return d, nil
}

// InitialDelayDuration returns how long the metric waits, from the start of
// the analysis, before its first measurement; zero when no delay is given.
// The error carries Argo's message, which calls the field startDelay.
func (m *Metric) InitialDelayDuration() (time.Duration, error) {
	d, err := parseDuration(m.InitialDelay)
	if err != nil {
		return 0, fmt.Errorf("invalid startDelay string: %w", err)
	}
	return d, nil
}

// parseDuration reads an Argo DurationString ("30s", "5m", "1h"; "" is
// zero). canaryd refuses negative durations, which Argo accepts and
// measures back to back with.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// CountValue returns the metric's count, 0 when unset. Argo's effective
// count follows from it and the interval: 0 means one measurement without an
// interval and an indefinite metric with one. Call it on a validated spec;
// otherwise a count that is not an integer reads as 0, as in Argo.
func (m *Metric) CountValue() int32 { return limit(m.Count, 0) }

// FailureLimitValue returns failureLimit, Argo's default 0 when unset; -1
// means disabled. Call it on a validated spec.
func (m *Metric) FailureLimitValue() int32 { return limit(m.FailureLimit, 0) }

// InconclusiveLimitValue returns inconclusiveLimit, Argo's default 0 when
// unset. Call it on a validated spec.
func (m *Metric) InconclusiveLimitValue() int32 { return limit(m.InconclusiveLimit, 0) }

// ConsecutiveErrorLimitValue returns consecutiveErrorLimit, Argo's default 4
// when unset. Call it on a validated spec.
func (m *Metric) ConsecutiveErrorLimitValue() int32 {
	return limit(m.ConsecutiveErrorLimit, defaultConsecutiveErrorLimit)
}

// defaultConsecutiveErrorLimit is Argo Rollouts' DefaultConsecutiveErrorLimit,
// what a metric that sets none has (the engine is handed it in the plan).
const defaultConsecutiveErrorLimit = 4

// ConsecutiveSuccessLimitValue returns consecutiveSuccessLimit, Argo's
// default 0 (disabled) when unset. Call it on a validated spec.
func (m *Metric) ConsecutiveSuccessLimitValue() int32 { return limit(m.ConsecutiveSuccessLimit, 0) }

func limit(v *IntOrString, def int32) int32 {
	if v == nil {
		return def
	}
	n, err := v.Int32()
	if err != nil {
		return 0 // Argo's reading; Validate reports it
	}
	return n
}

// DryRunMetrics returns the names of the metrics that a dryRun rule matches
// (unanchored regular expressions, as in Argo). Call it on a validated spec;
// otherwise a rule that is not a regular expression matches nothing.
func (s *Spec) DryRunMetrics() map[string]bool {
	out := make(map[string]bool)
	for _, rule := range s.DryRun {
		re, err := regexp.Compile(rule.MetricName)
		if err != nil {
			continue
		}
		for i := range s.Metrics {
			if re.MatchString(s.Metrics[i].Name) {
				out[s.Metrics[i].Name] = true
			}
		}
	}
	return out
}

// RetentionLimits returns, for each metric whose measurement history a
// measurementRetention rule sets, how many measurements to keep (the
// newest). A metric absent from the map keeps the default, 10. As in Argo,
// the last rule that matches a metric decides, and a limit of 0 means the
// default. Call it on a validated spec.
func (s *Spec) RetentionLimits() map[string]int {
	type rule struct {
		re    *regexp.Regexp
		limit int32
	}
	var rules []rule
	for _, r := range s.MeasurementRetention {
		if re, err := regexp.Compile(r.MetricName); err == nil {
			rules = append(rules, rule{re, r.Limit})
		}
	}
	out := make(map[string]int)
	for i := range s.Metrics {
		name := s.Metrics[i].Name
		n := int32(0)
		for _, r := range rules {
			if r.re.MatchString(name) {
				n = r.limit
			}
		}
		if n > 0 {
			out[name] = int(n)
		}
	}
	return out
}
