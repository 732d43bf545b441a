package spec

import (
	"fmt"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// validMetric is a metric that passes every rule.
func validMetric(name string) Metric {
	return Metric{Name: name, Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}
}

func TestValidateMetric(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *Metric)
		want []api.FieldError
	}{
		{name: "valid", edit: func(m *Metric) {}},
		{name: "valid with every field", edit: func(m *Metric) {
			m.Interval, m.InitialDelay = "1m", "30s"
			m.Count, m.FailureLimit, m.InconclusiveLimit = intOrStr(5), intOrStr(2), intOrStr(1)
			m.ConsecutiveErrorLimit, m.ConsecutiveSuccessLimit = intOrStr(0), intOrStr(3)
		}},

		// Argo's rules, Argo's messages.
		{name: "negative consecutiveSuccessLimit", edit: func(m *Metric) { m.ConsecutiveSuccessLimit = intOrStr(-1) }, want: []api.FieldError{
			fe("metrics[0].consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0"),
		}},
		{name: "failureLimit below -1", edit: func(m *Metric) { m.FailureLimit = intOrStr(-2) }, want: []api.FieldError{
			fe("metrics[0].failureLimit", "failureLimit must be >= 0, or -1 to be disabled"),
		}},
		{name: "failureLimit -1 alone", edit: func(m *Metric) { m.FailureLimit = intOrStr(-1) }, want: []api.FieldError{
			fe("metrics[0].failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled"),
		}},
		{name: "failureLimit -1 with consecutiveSuccessLimit 0", edit: func(m *Metric) {
			m.FailureLimit, m.ConsecutiveSuccessLimit = intOrStr(-1), intOrStr(0)
		}, want: []api.FieldError{
			fe("metrics[0].failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled"),
		}},
		{name: "failureLimit -1 with consecutiveSuccessLimit", edit: func(m *Metric) {
			m.FailureLimit, m.ConsecutiveSuccessLimit = intOrStr(-1), intOrStr(2)
		}},
		{name: "negative inconclusiveLimit", edit: func(m *Metric) { m.InconclusiveLimit = intOrStr(-1) }, want: []api.FieldError{
			fe("metrics[0].inconclusiveLimit", "inconclusiveLimit must be >= 0"),
		}},
		{name: "negative consecutiveErrorLimit", edit: func(m *Metric) { m.ConsecutiveErrorLimit = strOrStr("-1") }, want: []api.FieldError{
			fe("metrics[0].consecutiveErrorLimit", "consecutiveErrorLimit must be >= 0"),
		}},
		{name: "count below failureLimit + consecutiveSuccessLimit", edit: func(m *Metric) {
			m.Interval, m.Count, m.FailureLimit, m.ConsecutiveSuccessLimit = "1m", intOrStr(3), intOrStr(2), intOrStr(2)
		}, want: []api.FieldError{
			fe("metrics[0].count", "count (3) must be >= failureLimit + consecutiveSuccessLimit (2 + 2) if both >= 0"),
		}},
		{name: "count equal to failureLimit + consecutiveSuccessLimit", edit: func(m *Metric) {
			m.Interval, m.Count, m.FailureLimit, m.ConsecutiveSuccessLimit = "1m", intOrStr(4), intOrStr(2), intOrStr(2)
		}},
		{name: "count 1 below failureLimit", edit: func(m *Metric) { m.Count, m.FailureLimit = intOrStr(1), intOrStr(3) }, want: []api.FieldError{
			fe("metrics[0].count", "count (1) must be >= failureLimit + consecutiveSuccessLimit (3 + 0) if both >= 0"),
		}},
		{name: "count below consecutiveSuccessLimit with failureLimit disabled", edit: func(m *Metric) {
			m.Interval, m.Count, m.FailureLimit, m.ConsecutiveSuccessLimit = "1m", intOrStr(2), intOrStr(-1), intOrStr(3)
		}, want: []api.FieldError{
			fe("metrics[0].count", "count must be >= consecutiveSuccessLimit"),
		}},
		{name: "count below inconclusiveLimit", edit: func(m *Metric) {
			m.Interval, m.Count, m.InconclusiveLimit = "1m", intOrStr(2), intOrStr(3)
		}, want: []api.FieldError{
			fe("metrics[0].count", "count must be >= inconclusiveLimit"),
		}},
		{name: "count 0 skips the count rules (indefinite)", edit: func(m *Metric) {
			m.Interval, m.Count, m.FailureLimit, m.InconclusiveLimit = "1m", intOrStr(0), intOrStr(5), intOrStr(5)
		}},
		{name: "count above 1 without interval", edit: func(m *Metric) { m.Count = intOrStr(2) }, want: []api.FieldError{
			fe("metrics[0].interval", "interval must be specified when count > 1"),
		}},
		{name: "count 1 without interval", edit: func(m *Metric) { m.Count = intOrStr(1) }},
		{name: "string count above 1 without interval", edit: func(m *Metric) { m.Count = strOrStr("2") }, want: []api.FieldError{
			fe("metrics[0].interval", "interval must be specified when count > 1"),
		}},
		{name: "invalid interval", edit: func(m *Metric) { m.Interval = "1d" }, want: []api.FieldError{
			fe("metrics[0].interval", `invalid interval string: time: unknown unit "d" in duration "1d"`),
		}},
		{name: "invalid initialDelay (Argo calls it startDelay)", edit: func(m *Metric) { m.InitialDelay = "soon" }, want: []api.FieldError{
			fe("metrics[0].initialDelay", `invalid startDelay string: time: invalid duration "soon"`),
		}},
		{name: "missing name", edit: func(m *Metric) { m.Name = "" }, want: []api.FieldError{
			fe("metrics[0].name", "name must be specified"),
		}},
		{name: "no provider", edit: func(m *Metric) { m.Provider = MetricProvider{} }, want: []api.FieldError{
			fe("metrics[0].provider", "no provider specified"),
		}},
		{name: "null provider is no provider", edit: func(m *Metric) { m.Provider = MetricProvider{Web: []byte("null")} }, want: []api.FieldError{
			fe("metrics[0].provider", "no provider specified"),
		}},
		{name: "empty plugin map is no provider (as in Argo)", edit: func(m *Metric) { m.Provider = MetricProvider{Plugin: []byte("{}")} }, want: []api.FieldError{
			fe("metrics[0].provider", "no provider specified"),
		}},
		{name: "multiple providers", edit: func(m *Metric) { m.Provider.Web = []byte(`{"url": "http://x"}`) }, want: []api.FieldError{
			fe("metrics[0].provider", "multiple providers specified"),
		}},
		{name: "two plugins are two providers", edit: func(m *Metric) {
			m.Provider = MetricProvider{Plugin: []byte(`{"a/b": {}, "c/d": {}}`)}
		}, want: []api.FieldError{
			fe("metrics[0].provider", "multiple providers specified"),
		}},

		// canaryd's own rules.
		{name: "count that is not an integer", edit: func(m *Metric) { m.Count = strOrStr("{{args.count}}") }, want: []api.FieldError{
			fe("metrics[0].count", `count must be an integer: "{{args.count}}" is not an integer (Argo Rollouts would silently read it as 0)`),
		}},
		{name: "limits that are not integers", edit: func(m *Metric) {
			m.FailureLimit, m.InconclusiveLimit = strOrStr("one"), strOrStr("1.5")
			m.ConsecutiveErrorLimit, m.ConsecutiveSuccessLimit = strOrStr(""), strOrStr("0x3")
		}, want: []api.FieldError{
			fe("metrics[0].failureLimit", `failureLimit must be an integer: "one" is not an integer (Argo Rollouts would silently read it as 0)`),
			fe("metrics[0].consecutiveSuccessLimit", `consecutiveSuccessLimit must be an integer: "0x3" is not an integer (Argo Rollouts would silently read it as 0)`),
			fe("metrics[0].inconclusiveLimit", `inconclusiveLimit must be an integer: "1.5" is not an integer (Argo Rollouts would silently read it as 0)`),
			fe("metrics[0].consecutiveErrorLimit", `consecutiveErrorLimit must be an integer: "" is not an integer (Argo Rollouts would silently read it as 0)`),
		}},
		{name: "a bad limit does not cascade into the count rules", edit: func(m *Metric) {
			m.Interval, m.Count, m.FailureLimit, m.ConsecutiveSuccessLimit = "1m", intOrStr(2), intOrStr(-5), intOrStr(9)
		}, want: []api.FieldError{
			fe("metrics[0].failureLimit", "failureLimit must be >= 0, or -1 to be disabled"),
		}},
		{name: "negative count", edit: func(m *Metric) { m.Count = intOrStr(-1) }, want: []api.FieldError{
			fe("metrics[0].count", "count must be >= 0 (0 or no count: one measurement without an interval, indefinitely with one)"),
		}},
		{name: "negative interval and initialDelay", edit: func(m *Metric) { m.Interval, m.InitialDelay = "-30s", "-1m" }, want: []api.FieldError{
			fe("metrics[0].interval", `invalid interval string: "-30s" is negative`),
			fe("metrics[0].initialDelay", `invalid startDelay string: "-1m" is negative`),
		}},
		{name: "every problem at once", edit: func(m *Metric) {
			m.Name = ""
			m.Count, m.ConsecutiveSuccessLimit, m.InconclusiveLimit = intOrStr(3), intOrStr(-1), intOrStr(4)
			m.InitialDelay = "x"
			m.Provider.Kayenta = []byte(`{}`)
		}, want: []api.FieldError{
			fe("metrics[0].name", "name must be specified"),
			fe("metrics[0].consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0"),
			fe("metrics[0].count", "count must be >= inconclusiveLimit"),
			fe("metrics[0].interval", "interval must be specified when count > 1"),
			fe("metrics[0].initialDelay", `invalid startDelay string: time: invalid duration "x"`),
			fe("metrics[0].provider", "multiple providers specified"),
		}},
	}
	for _, tt := range tests {
		m := validMetric("m")
		tt.edit(&m)
		s := &Spec{Metrics: []Metric{m}}
		checkErrors(t, tt.name, s.Validate(testScored), tt.want)
	}
}

func TestValidateSpec(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []api.FieldError
	}{
		{name: "no metrics", spec: Spec{}, want: []api.FieldError{fe("metrics", "no metrics specified")}},
		{name: "empty metrics", spec: Spec{Metrics: []Metric{}}, want: []api.FieldError{fe("metrics", "no metrics specified")}},
		{name: "duplicate names", spec: Spec{Metrics: []Metric{validMetric("a"), validMetric("b"), validMetric("a"), validMetric("a")}}, want: []api.FieldError{
			fe("metrics[2].name", "duplicate name 'a'"),
			fe("metrics[3].name", "duplicate name 'a'"),
		}},
		{name: "problems in several metrics", spec: Spec{Metrics: []Metric{
			{Name: "a", Count: intOrStr(2), Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}},
			{Name: "b"},
		}}, want: []api.FieldError{
			fe("metrics[0].interval", "interval must be specified when count > 1"),
			fe("metrics[1].provider", "no provider specified"),
		}},
		{name: "argument without a name", spec: Spec{Metrics: []Metric{validMetric("a")}, Args: []Argument{{Value: ptr("x")}}}, want: []api.FieldError{
			fe("args[0].name", "name must be specified"),
		}},

		// dryRun and measurementRetention: unanchored regular expressions.
		{name: "dry-run rules that match", spec: Spec{
			Metrics: []Metric{validMetric("error-rate"), validMetric("latency")},
			DryRun:  []DryRun{{MetricName: "rate"}, {MetricName: "^latency$"}, {MetricName: ".*"}},
		}},
		{name: "dry-run rule that matches nothing", spec: Spec{
			Metrics: []Metric{validMetric("a")},
			DryRun:  []DryRun{{MetricName: "a"}, {MetricName: "^b$"}},
		}, want: []api.FieldError{fe("dryRun[1].metricName", "Rule didn't match any metric name(s)")}},
		{name: "duplicate dry-run rules", spec: Spec{
			Metrics: []Metric{validMetric("a")},
			DryRun:  []DryRun{{MetricName: "a"}, {MetricName: "a"}},
		}, want: []api.FieldError{fe("dryRun[1].metricName", "two Dry-Run metric rules have the same name 'a'")}},
		{name: "bare star in a dry-run rule", spec: Spec{
			Metrics: []Metric{validMetric("a")},
			DryRun:  []DryRun{{MetricName: "*"}},
		}, want: []api.FieldError{fe("dryRun[0].metricName",
			"invalid regular expression: error parsing regexp: missing argument to repetition operator: `*`; "+
				`metric names are matched by unanchored Go regular expressions, so a bare "*" must be written ".*"`)}},
		{name: "invalid dry-run rule", spec: Spec{
			Metrics: []Metric{validMetric("a")},
			DryRun:  []DryRun{{MetricName: "a("}},
		}, want: []api.FieldError{fe("dryRun[0].metricName", "invalid regular expression: error parsing regexp: missing closing ): `a(`")}},
		{name: "dry-run rule without a name", spec: Spec{
			Metrics: []Metric{validMetric("a")},
			DryRun:  []DryRun{{}},
		}, want: []api.FieldError{fe("dryRun[0].metricName", "metricName must be specified")}},
		{name: "retention rules that match", spec: Spec{
			Metrics:              []Metric{validMetric("a")},
			MeasurementRetention: []MeasurementRetention{{MetricName: "a", Limit: 20}, {MetricName: ".", Limit: 0}},
		}},
		{name: "retention rule that matches nothing", spec: Spec{
			Metrics:              []Metric{validMetric("a")},
			MeasurementRetention: []MeasurementRetention{{MetricName: "b", Limit: 5}},
		}, want: []api.FieldError{fe("measurementRetention[0].metricName", "Rule didn't match any metric name(s)")}},
		{name: "duplicate retention rules", spec: Spec{
			Metrics:              []Metric{validMetric("a")},
			MeasurementRetention: []MeasurementRetention{{MetricName: "a", Limit: 5}, {MetricName: "a", Limit: 6}},
		}, want: []api.FieldError{fe("measurementRetention[1].metricName", "two Measurement Retention metric rules have the same name 'a'")}},
		{name: "retention rule with a bare star and a negative limit", spec: Spec{
			Metrics:              []Metric{validMetric("a")},
			MeasurementRetention: []MeasurementRetention{{MetricName: "*", Limit: -1}},
		}, want: []api.FieldError{
			fe("measurementRetention[0].limit", "limit must be >= 0 (0 keeps the default of 10 measurements)"),
			fe("measurementRetention[0].metricName",
				"invalid regular expression: error parsing regexp: missing argument to repetition operator: `*`; "+
					`metric names are matched by unanchored Go regular expressions, so a bare "*" must be written ".*"`),
		}},
	}
	for _, tt := range tests {
		checkErrors(t, tt.name, tt.spec.Validate(testScored), tt.want)
	}
}

// Every fixture, resolved with the values it lacks, validates clean.
func TestValidateFixtures(t *testing.T) {
	overrides := map[string]map[string]string{
		"success-rate-args.yaml":         {"namespace": "echo"},
		"cluster-analysis-template.yaml": {"service-name": "web"},
		"bare-spec.yaml":                 {"pod": "web"},
	}
	for _, file := range []string{"success-rate.yaml", "success-rate.json", "success-rate-args.yaml", "analysisrun.yaml", "cluster-analysis-template.yaml", "bare-spec.yaml"} {
		doc := mustParse(t, string(fixture(t, file)))
		resolved, errs := resolveArgs(&doc.Spec, overrides[file])
		if len(errs) > 0 {
			t.Errorf("%s: Resolve:\n%s", file, formatErrors(errs))
			continue
		}
		checkErrors(t, file, resolved.Validate(testScored), nil)
	}
}

func TestValidateNoData(t *testing.T) {
	tests := []struct {
		value string
		want  []api.FieldError
	}{
		{"", nil},
		{"Inconclusive", nil},
		{"Failed", nil},
		{"Error", nil},
		{"Successful", []api.FieldError{{Field: "metrics[0].noData", Message: `noData must be one of Inconclusive, Failed, Error, got "Successful"`}}},
		{"failed", []api.FieldError{{Field: "metrics[0].noData", Message: `noData must be one of Inconclusive, Failed, Error, got "failed"`}}},
	}
	for _, tt := range tests {
		s := &Spec{Metrics: []Metric{{Name: "m", NoData: tt.value, Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}}}
		got := s.Validate(testScored)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("noData %q: got %v, want %v", tt.value, got, tt.want)
		}
	}
}
