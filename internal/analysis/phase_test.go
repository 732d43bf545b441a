package analysis

import (
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

func i32(v int32) *int32 { return &v }

// metric returns a metric with Argo's default limits.
func metric(name string, mutate ...func(*Metric)) Metric {
	m := Metric{Name: name, Count: EffectiveCount(0, 0), ConsecutiveErrorLimit: DefaultConsecutiveErrorLimit, Retention: DefaultMeasurementRetention}
	for _, f := range mutate {
		f(&m)
	}
	return m
}

func indefinite(m *Metric) { m.Interval = time.Minute; m.Count = nil }

func withCount(n int32) func(*Metric) {
	return func(m *Metric) { m.Interval = time.Minute; m.Count = i32(n) }
}

func limits(failure, inconclusive, consecutiveError, consecutiveSuccess int32) func(*Metric) {
	return func(m *Metric) {
		m.FailureLimit = failure
		m.InconclusiveLimit = inconclusive
		m.ConsecutiveErrorLimit = consecutiveError
		m.ConsecutiveSuccessLimit = consecutiveSuccess
	}
}

func result(c api.MetricResult) *api.MetricResult {
	c.Phase = api.PhaseRunning
	c.Measurements = []api.Measurement{{Phase: api.PhaseSuccessful}}
	return &c
}

// TestAssessMetric has a row for every worked case of Argo Rollouts'
// assessMetricStatus (reference §1.6), each assessed with and without
// termination.
func TestAssessMetric(t *testing.T) {
	tests := []struct {
		name           string
		metric         Metric
		result         *api.MetricResult
		want, wantTerm api.Phase
	}{
		{"failureLimit 2 failed 3", metric("m", indefinite, limits(2, 0, 4, 0)),
			result(api.MetricResult{Failed: 3, Count: 3}), api.PhaseFailed, api.PhaseFailed},
		{"failureLimit 3 failed 3", metric("m", indefinite, limits(3, 0, 4, 0)),
			result(api.MetricResult{Failed: 3, Count: 3}), api.PhaseRunning, api.PhaseSuccessful},
		{"inconclusiveLimit 2 inconclusive 3", metric("m", indefinite, limits(0, 2, 4, 0)),
			result(api.MetricResult{Inconclusive: 3, Count: 3}), api.PhaseInconclusive, api.PhaseInconclusive},
		{"inconclusiveLimit 3 inconclusive 3", metric("m", indefinite, limits(0, 3, 4, 0)),
			result(api.MetricResult{Inconclusive: 3, Count: 3}), api.PhaseRunning, api.PhaseSuccessful},
		{"default consecutiveErrorLimit, 5 errors", metric("m", indefinite),
			result(api.MetricResult{Error: 5, ConsecutiveError: 5}), api.PhaseError, api.PhaseError},
		{"default consecutiveErrorLimit, 4 errors", metric("m", indefinite),
			result(api.MetricResult{Error: 4, ConsecutiveError: 4}), api.PhaseRunning, api.PhaseSuccessful},
		{"count 10 all successful", metric("m", withCount(10)),
			result(api.MetricResult{Successful: 10, Count: 10}), api.PhaseSuccessful, api.PhaseSuccessful},
		{"count 10 half inconclusive", metric("m", withCount(10)),
			result(api.MetricResult{Successful: 5, Inconclusive: 5, Count: 10}), api.PhaseInconclusive, api.PhaseInconclusive},
		{"fl -1 csl 3 reached, no count", metric("m", indefinite, limits(-1, 0, 4, 3)),
			result(api.MetricResult{Successful: 3, ConsecutiveSuccess: 3, Count: 3}), api.PhaseSuccessful, api.PhaseSuccessful},
		{"fl -1 csl 5 not reached, no count", metric("m", indefinite, limits(-1, 0, 4, 5)),
			result(api.MetricResult{Successful: 3, ConsecutiveSuccess: 3, Count: 3}), api.PhaseRunning, api.PhaseSuccessful},
		{"fl -1 csl 5 count 7 reached", metric("m", withCount(7), limits(-1, 0, 4, 5)),
			result(api.MetricResult{Successful: 4, Failed: 3, ConsecutiveSuccess: 3, Count: 7}), api.PhaseFailed, api.PhaseFailed},
		{"fl 4 csl 4 count 10 reached, failed 4 cs 3", metric("m", withCount(10), limits(4, 0, 4, 4)),
			result(api.MetricResult{Successful: 6, Failed: 4, ConsecutiveSuccess: 3, Count: 10}), api.PhaseInconclusive, api.PhaseInconclusive},
		{"fl 4 csl 4 count 10 reached, failed 5", metric("m", withCount(10), limits(4, 0, 4, 4)),
			result(api.MetricResult{Successful: 5, Failed: 5, Count: 10}), api.PhaseFailed, api.PhaseFailed},
		{"fl 4 csl 4 count 10 reached, failed 4 cs 4", metric("m", withCount(10), limits(4, 0, 4, 4)),
			result(api.MetricResult{Successful: 6, Failed: 4, ConsecutiveSuccess: 4, Count: 10}), api.PhaseSuccessful, api.PhaseSuccessful},
		{"fl 4 csl 4 count not reached, failed 3 cs 3", metric("m", withCount(10), limits(4, 0, 4, 4)),
			result(api.MetricResult{Successful: 3, Failed: 3, ConsecutiveSuccess: 3, Count: 6}), api.PhaseRunning, api.PhaseSuccessful},
		{"limits tie: error beats inconclusive beats failed", metric("m", indefinite),
			result(api.MetricResult{Failed: 1, Inconclusive: 1, ConsecutiveError: 5}), api.PhaseError, api.PhaseError},
		{"limits tie: inconclusive beats failed", metric("m", indefinite),
			result(api.MetricResult{Failed: 1, Inconclusive: 1}), api.PhaseInconclusive, api.PhaseInconclusive},
		{"no measurements", metric("m", indefinite),
			&api.MetricResult{Phase: api.PhaseRunning}, api.PhasePending, api.PhaseSuccessful},
		{"completed phase is kept", metric("m", indefinite),
			&api.MetricResult{Phase: api.PhaseFailed, Measurements: []api.Measurement{{Phase: api.PhaseSuccessful}}}, api.PhaseFailed, api.PhaseFailed},
	}
	for _, tt := range tests {
		for _, terminating := range []bool{false, true} {
			want := tt.want
			if terminating {
				want = tt.wantTerm
			}
			r := *tt.result
			if got := AssessMetric(&tt.metric, &r, terminating); got != want {
				t.Errorf("%s (terminating=%v): got %s, want %s", tt.name, terminating, got, want)
			}
		}
	}
}

func TestAssessLimitsMessages(t *testing.T) {
	tests := []struct {
		name        string
		metric      Metric
		result      api.MetricResult
		wantPhase   api.Phase
		wantMessage string
	}{
		{"failed", metric("m", limits(1, 0, 4, 0)), api.MetricResult{Failed: 2},
			api.PhaseFailed, "failed (2) > failureLimit (1)"},
		{"failure limit disabled", metric("m", limits(-1, 0, 4, 3)), api.MetricResult{Failed: 20}, "", ""},
		{"inconclusive", metric("m"), api.MetricResult{Inconclusive: 1},
			api.PhaseInconclusive, "inconclusive (1) > inconclusiveLimit (0)"},
		{"errors", metric("m"), api.MetricResult{ConsecutiveError: 5},
			api.PhaseError, "consecutiveErrors (5) > consecutiveErrorLimit (4)"},
		{"at the limit is not over it", metric("m", limits(2, 2, 2, 0)), api.MetricResult{Failed: 2, Inconclusive: 2, ConsecutiveError: 2}, "", ""},
	}
	for _, tt := range tests {
		phase, msg := AssessLimits(&tt.metric, &tt.result)
		if phase != tt.wantPhase || msg != tt.wantMessage {
			t.Errorf("%s: got (%q, %q), want (%q, %q)", tt.name, phase, msg, tt.wantPhase, tt.wantMessage)
		}
	}
}

func done(phase api.Phase, c api.MetricResult) *api.MetricResult {
	c.Phase = phase
	if c.Measurements == nil {
		c.Measurements = []api.Measurement{{Phase: api.PhaseSuccessful}}
	}
	return &c
}

func TestAssessRun(t *testing.T) {
	dry := func(m *Metric) { m.DryRun = true }
	tests := []struct {
		name        string
		metrics     []Metric
		results     []*api.MetricResult
		terminated  bool
		wantPhase   api.Phase
		wantMessage string
		wantRun     api.RunSummary
		wantDry     api.RunSummary
	}{
		{
			name:    "all successful",
			metrics: []Metric{metric("a"), metric("b")},
			results: []*api.MetricResult{done(api.PhaseSuccessful, api.MetricResult{Count: 1, Successful: 1}),
				done(api.PhaseSuccessful, api.MetricResult{Count: 1, Successful: 1})},
			wantPhase: api.PhaseSuccessful,
			wantRun:   api.RunSummary{Count: 2, Successful: 2},
		},
		{
			name:    "one still running",
			metrics: []Metric{metric("a"), metric("b", indefinite)},
			results: []*api.MetricResult{done(api.PhaseSuccessful, api.MetricResult{Count: 1, Successful: 1}),
				result(api.MetricResult{Count: 1, Successful: 1})},
			wantPhase: api.PhaseRunning,
			wantRun:   api.RunSummary{Count: 2, Successful: 1},
		},
		{
			name:      "metric waiting for initialDelay keeps the run running",
			metrics:   []Metric{metric("a"), metric("b")},
			results:   []*api.MetricResult{done(api.PhaseSuccessful, api.MetricResult{Count: 1, Successful: 1}), nil},
			wantPhase: api.PhaseRunning,
			wantRun:   api.RunSummary{Count: 2, Successful: 1},
		},
		{
			name:    "failed with the seed's message",
			metrics: []Metric{metric("non-5xx-rate", withCount(3), limits(1, 0, 4, 0))},
			results: []*api.MetricResult{result(api.MetricResult{Count: 2, Failed: 2,
				Measurements: nil})},
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "non-5xx-rate" assessed Failed due to failed (2) > failureLimit (1)`,
			wantRun:     api.RunSummary{Count: 1, Failed: 1},
		},
		{
			// Argo counts both as Successful in runSummary; canaryd counts
			// each under its own phase (docs/differences.md).
			name:      "consecutiveSuccessLimit not reached within count: Failed counted as Failed",
			metrics:   []Metric{metric("m", withCount(3), limits(-1, 0, 4, 2))},
			results:   []*api.MetricResult{result(api.MetricResult{Successful: 2, Failed: 1, ConsecutiveSuccess: 1, Count: 3})},
			wantPhase: api.PhaseFailed,
			wantRun:   api.RunSummary{Count: 1, Failed: 1},
		},
		{
			name:      "consecutiveSuccessLimit not reached within count: Inconclusive counted as Inconclusive",
			metrics:   []Metric{metric("m", withCount(3), limits(1, 0, 4, 2))},
			results:   []*api.MetricResult{result(api.MetricResult{Successful: 2, Failed: 1, ConsecutiveSuccess: 1, Count: 3})},
			wantPhase: api.PhaseInconclusive,
			wantRun:   api.RunSummary{Count: 1, Inconclusive: 1},
		},
		{
			name:    "failed beats error beats inconclusive",
			metrics: []Metric{metric("i", indefinite), metric("e", indefinite), metric("f", indefinite)},
			results: []*api.MetricResult{
				result(api.MetricResult{Inconclusive: 1, Count: 1}),
				{Phase: api.PhaseRunning, Error: 5, ConsecutiveError: 5, Measurements: []api.Measurement{{Phase: api.PhaseError, Message: "server_error: server error: 503"}}},
				result(api.MetricResult{Failed: 1, Count: 1}),
			},
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "f" assessed Failed due to failed (1) > failureLimit (0)`,
			wantRun:     api.RunSummary{Count: 3, Failed: 1, Error: 1, Inconclusive: 1},
		},
		{
			name:    "error carries the last measurement's message",
			metrics: []Metric{metric("e", indefinite)},
			results: []*api.MetricResult{{Phase: api.PhaseRunning, Error: 5, ConsecutiveError: 5,
				Measurements: []api.Measurement{{Phase: api.PhaseError, Message: "server_error: server error: 503"}}}},
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "e" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: server_error: server error: 503"`,
			wantRun:     api.RunSummary{Count: 1, Error: 1},
		},
		{
			name:    "a failing dry-run metric does not fail the run",
			metrics: []Metric{metric("a"), metric("d", dry)},
			results: []*api.MetricResult{done(api.PhaseSuccessful, api.MetricResult{Count: 1, Successful: 1}),
				result(api.MetricResult{Failed: 1, Count: 1})},
			wantPhase: api.PhaseSuccessful,
			wantRun:   api.RunSummary{Count: 1, Successful: 1},
			wantDry:   api.RunSummary{Count: 1, Failed: 1},
		},
		{
			name:      "only dry-run metrics",
			metrics:   []Metric{metric("d", dry)},
			results:   []*api.MetricResult{result(api.MetricResult{Failed: 1, Count: 1})},
			wantPhase: api.PhaseSuccessful,
			wantDry:   api.RunSummary{Count: 1, Failed: 1},
		},
		{
			name:    "self-termination ends the other metrics successful",
			metrics: []Metric{metric("f", indefinite), metric("g", indefinite)},
			results: []*api.MetricResult{done(api.PhaseFailed, api.MetricResult{Failed: 1, Count: 1}),
				result(api.MetricResult{Successful: 1, Count: 1})},
			wantPhase:   api.PhaseFailed,
			wantMessage: `Metric "f" assessed Failed due to failed (1) > failureLimit (0)`,
			wantRun:     api.RunSummary{Count: 2, Failed: 1, Successful: 1},
		},
		{
			name:        "terminated",
			metrics:     []Metric{metric("a", indefinite)},
			results:     []*api.MetricResult{result(api.MetricResult{Successful: 3, Count: 3})},
			terminated:  true,
			wantPhase:   api.PhaseSuccessful,
			wantMessage: "Run Terminated",
			wantRun:     api.RunSummary{Count: 1, Successful: 1},
		},
		{
			name:        "terminated before any measurement",
			metrics:     []Metric{metric("a", indefinite)},
			results:     []*api.MetricResult{nil},
			terminated:  true,
			wantPhase:   api.PhaseSuccessful,
			wantMessage: "Run Terminated",
			wantRun:     api.RunSummary{Count: 1, Successful: 1},
		},
	}
	for _, tt := range tests {
		for _, r := range tt.results {
			if r != nil && r.Measurements == nil {
				r.Measurements = []api.Measurement{{Phase: api.PhaseFailed, Value: "[0.95]"}}
			}
		}
		got := AssessRun(tt.metrics, tt.results, tt.terminated)
		if got.Phase != tt.wantPhase || got.Message != tt.wantMessage {
			t.Errorf("%s: got (%s, %q), want (%s, %q)", tt.name, got.Phase, got.Message, tt.wantPhase, tt.wantMessage)
		}
		if got.RunSummary != tt.wantRun || got.DryRunSummary != tt.wantDry {
			t.Errorf("%s: summaries got %+v / %+v, want %+v / %+v", tt.name, got.RunSummary, got.DryRunSummary, tt.wantRun, tt.wantDry)
		}
	}
}

func TestMetricMessages(t *testing.T) {
	dry := func(m *Metric) { m.DryRun = true }
	succ := func(m *Metric) { m.SuccessCondition = "result[0] >= 0.99" }
	both := func(m *Metric) { m.SuccessCondition = "result >= 0.9"; m.FailureCondition = "result < 0.5" }
	tests := []struct {
		name   string
		metric Metric
		result *api.MetricResult
		want   string
	}{
		{"failed on the success condition", metric("m", succ),
			&api.MetricResult{Phase: api.PhaseRunning, Failed: 1, Count: 1, Measurements: []api.Measurement{{Phase: api.PhaseFailed, Value: "[0.952]"}}},
			`measured [0.952]: successCondition "result[0] >= 0.99" was false`},
		{"failed on the failure condition", metric("m", both),
			&api.MetricResult{Phase: api.PhaseRunning, Failed: 1, Count: 1, Measurements: []api.Measurement{{Phase: api.PhaseFailed, Value: "0.2"}}},
			`measured 0.2: failureCondition "result < 0.5" was true`},
		{"inconclusive", metric("m", both),
			&api.MetricResult{Phase: api.PhaseRunning, Inconclusive: 1, Count: 1, Measurements: []api.Measurement{{Phase: api.PhaseInconclusive, Value: "NaN"}}},
			`measured NaN: neither successCondition "result >= 0.9" nor failureCondition "result < 0.5" was true`},
		{"error keeps the measurement's message", metric("m", succ),
			&api.MetricResult{Phase: api.PhaseRunning, Error: 5, ConsecutiveError: 5, Measurements: []api.Measurement{{Phase: api.PhaseError, Message: "boom"}}},
			"boom"},
		{"consecutiveSuccessLimit not reached", metric("m", withCount(3), limits(-1, 0, 4, 2)),
			&api.MetricResult{Phase: api.PhaseRunning, Successful: 2, Failed: 1, ConsecutiveSuccess: 1, Count: 3,
				Measurements: []api.Measurement{{Phase: api.PhaseSuccessful}}},
			"consecutiveSuccess (1) did not reach consecutiveSuccessLimit (2) within count (3)"},
		{"dry-run metric", metric("m", dry, succ),
			&api.MetricResult{Phase: api.PhaseRunning, Failed: 1, Count: 1, Measurements: []api.Measurement{{Phase: api.PhaseFailed, Value: "[0.5]"}}},
			"Metric assessed Failed due to failed (1) > failureLimit (0)"},
		{"successful has no message", metric("m", succ),
			&api.MetricResult{Phase: api.PhaseRunning, Successful: 1, Count: 1, Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, Value: "[1]"}}},
			""},
	}
	for _, tt := range tests {
		AssessRun([]Metric{tt.metric}, []*api.MetricResult{tt.result}, false)
		if tt.result.Message != tt.want {
			t.Errorf("%s: message %q, want %q", tt.name, tt.result.Message, tt.want)
		}
	}
}

// TestTerminatedMessageOnlyWhenCutShort checks the message of a metric that
// is Successful when another metric ends the run: "Metric Terminated after N
// of M measurements" only where the count was not reached and the metric had
// not completed on its own (its consecutiveSuccessLimit reached in the same
// round).
func TestTerminatedMessageOnlyWhenCutShort(t *testing.T) {
	failed := func() *api.MetricResult {
		return &api.MetricResult{Name: "fast", Phase: api.PhaseFailed, Count: 1, Failed: 1,
			Measurements: []api.Measurement{{Phase: api.PhaseFailed}}}
	}
	oneSuccess := func() *api.MetricResult {
		return &api.MetricResult{Name: "slow", Phase: api.PhaseRunning, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
			Measurements: []api.Measurement{{Phase: api.PhaseSuccessful}}}
	}
	tests := []struct {
		name string
		slow Metric
		want string
	}{
		{"cut short", metric("slow", withCount(3)), "Metric Terminated after 1 of 3 measurements"},
		{"consecutiveSuccessLimit reached", metric("slow", withCount(3), limits(0, 0, 4, 1)), ""},
	}
	for _, tt := range tests {
		results := []*api.MetricResult{failed(), oneSuccess()}
		a := AssessRun([]Metric{metric("fast", withCount(3)), tt.slow}, results, false)
		if a.Phase != api.PhaseFailed || results[1].Phase != api.PhaseSuccessful {
			t.Fatalf("%s: run %s, slow %s; want Failed and Successful", tt.name, a.Phase, results[1].Phase)
		}
		if got := results[1].Message; got != tt.want {
			t.Errorf("%s: message %q, want %q", tt.name, got, tt.want)
		}
	}
}
