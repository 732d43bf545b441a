package spec

import (
	"reflect"
	"testing"
	"time"
)

func TestMetricDurations(t *testing.T) {
	tests := []struct {
		name, interval, initialDelay  string
		wantInterval, wantDelay       time.Duration
		wantIntervalErr, wantDelayErr string
	}{
		{name: "unset", wantInterval: 0, wantDelay: 0},
		{name: "set", interval: "30s", initialDelay: "1m30s", wantInterval: 30 * time.Second, wantDelay: 90 * time.Second},
		{name: "zero", interval: "0s", initialDelay: "0", wantInterval: 0, wantDelay: 0},
		{name: "invalid", interval: "1d", initialDelay: "30", wantIntervalErr: `invalid interval string: time: unknown unit "d" in duration "1d"`, wantDelayErr: `invalid startDelay string: time: missing unit in duration "30"`},
		{name: "negative", interval: "-1s", initialDelay: "-1s", wantIntervalErr: `invalid interval string: "-1s" is negative`, wantDelayErr: `invalid startDelay string: "-1s" is negative`},
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for _, tt := range tests {
		m := Metric{Interval: tt.interval, InitialDelay: tt.initialDelay}
		d, err := m.IntervalDuration()
		if d != tt.wantInterval || errText(err) != tt.wantIntervalErr {
			t.Errorf("%s: IntervalDuration() = %v, %q; want %v, %q", tt.name, d, errText(err), tt.wantInterval, tt.wantIntervalErr)
		}
		d, err = m.InitialDelayDuration()
		if d != tt.wantDelay || errText(err) != tt.wantDelayErr {
			t.Errorf("%s: InitialDelayDuration() = %v, %q; want %v, %q", tt.name, d, errText(err), tt.wantDelay, tt.wantDelayErr)
		}
	}
}

func TestMetricLimits(t *testing.T) {
	type limits struct{ count, failure, inconclusive, consecutiveError, consecutiveSuccess int32 }
	tests := []struct {
		name   string
		metric Metric
		want   limits
	}{
		{name: "Argo's defaults", metric: Metric{}, want: limits{0, 0, 0, 4, 0}},
		{name: "numbers", metric: Metric{
			Count: intOrStr(10), FailureLimit: intOrStr(-1), InconclusiveLimit: intOrStr(2),
			ConsecutiveErrorLimit: intOrStr(0), ConsecutiveSuccessLimit: intOrStr(3),
		}, want: limits{10, -1, 2, 0, 3}},
		{name: "strings", metric: Metric{
			Count: strOrStr("10"), FailureLimit: strOrStr("-1"), InconclusiveLimit: strOrStr("2"),
			ConsecutiveErrorLimit: strOrStr("7"), ConsecutiveSuccessLimit: strOrStr("3"),
		}, want: limits{10, -1, 2, 7, 3}},
		{name: "strings that are not integers read as 0, as in Argo", metric: Metric{
			Count: strOrStr("x"), ConsecutiveErrorLimit: strOrStr("x"),
		}, want: limits{0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		m := tt.metric
		got := limits{m.CountValue(), m.FailureLimitValue(), m.InconclusiveLimitValue(), m.ConsecutiveErrorLimitValue(), m.ConsecutiveSuccessLimitValue()}
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestDryRunMetrics(t *testing.T) {
	metrics := []Metric{{Name: "error-rate"}, {Name: "latency-p99"}, {Name: "saturation"}}
	tests := []struct {
		name  string
		rules []DryRun
		want  map[string]bool
	}{
		{name: "no rules", want: map[string]bool{}},
		{name: "unanchored", rules: []DryRun{{MetricName: "rate"}}, want: map[string]bool{"error-rate": true}},
		{name: "several rules", rules: []DryRun{{MetricName: "^latency"}, {MetricName: "^sat"}}, want: map[string]bool{"latency-p99": true, "saturation": true}},
		{name: "everything", rules: []DryRun{{MetricName: ".*"}}, want: map[string]bool{"error-rate": true, "latency-p99": true, "saturation": true}},
		{name: "invalid rule matches nothing", rules: []DryRun{{MetricName: "*"}}, want: map[string]bool{}},
	}
	for _, tt := range tests {
		s := &Spec{Metrics: metrics, DryRun: tt.rules}
		if got := s.DryRunMetrics(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRetentionLimits(t *testing.T) {
	metrics := []Metric{{Name: "error-rate"}, {Name: "latency-p99"}, {Name: "saturation"}}
	tests := []struct {
		name  string
		rules []MeasurementRetention
		want  map[string]int
	}{
		{name: "no rules", want: map[string]int{}},
		{name: "one metric", rules: []MeasurementRetention{{MetricName: "latency", Limit: 20}}, want: map[string]int{"latency-p99": 20}},
		{name: "last matching rule wins, as in Argo", rules: []MeasurementRetention{{MetricName: ".*", Limit: 5}, {MetricName: "rate", Limit: 50}},
			want: map[string]int{"error-rate": 50, "latency-p99": 5, "saturation": 5}},
		{name: "limit 0 keeps the default", rules: []MeasurementRetention{{MetricName: ".*", Limit: 5}, {MetricName: "rate", Limit: 0}},
			want: map[string]int{"latency-p99": 5, "saturation": 5}},
	}
	for _, tt := range tests {
		s := &Spec{Metrics: metrics, MeasurementRetention: tt.rules}
		if got := s.RetentionLimits(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
