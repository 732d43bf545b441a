package compile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/limits"
)

// TestCompileLimits checks the bounds a service passes to Compile: each
// refusal is on its field, and no limit refuses what is within it.
func TestCompileLimits(t *testing.T) {
	metrics := func(n int) string {
		var b strings.Builder
		b.WriteString("metrics:\n")
		for i := range n {
			fmt.Fprintf(&b, "- {name: m%d, successCondition: 'result > 0', provider: {prometheus: {query: up}}}\n", i)
		}
		return b.String()
	}
	metric := func(fields string) string {
		return "metrics:\n- {name: m, " + fields + ", provider: {prometheus: {query: up}}}\n"
	}
	longCondition := strings.Repeat("result > 1 || ", 40) + "true"
	tests := []struct {
		name   string
		input  string
		limits limits.Limits
		want   []api.FieldError
	}{
		{name: "no limits", input: metrics(60) + "", limits: limits.Limits{}},
		{name: "metrics at the limit", input: metrics(3), limits: limits.Limits{MaxMetrics: 3}},
		{name: "metrics over the limit", input: metrics(4), limits: limits.Limits{MaxMetrics: 3},
			want: []api.FieldError{fe("metrics", "the spec has 4 metrics, more than the 3 this canaryd runs in one analysis (--max-metrics)")}},
		{name: "over the limit is all that is said, even of a broken spec", input: metrics(3) + "- {name: m0, successCondition: 'result >'}\n",
			limits: limits.Limits{MaxMetrics: 3},
			want:   []api.FieldError{fe("metrics", "the spec has 4 metrics, more than the 3 this canaryd runs in one analysis (--max-metrics)")}},
		{name: "a condition too long", input: metric("failureCondition: '" + longCondition + "'"), limits: limits.Limits{MaxConditionLength: 100},
			want: []api.FieldError{fe("metrics[0].failureCondition", fmt.Sprintf("the condition is %d bytes long, longer than the 100 this canaryd accepts (--max-condition-length)", len(longCondition)))}},
		{name: "a condition too complex", input: metric("successCondition: '" + longCondition + "'"), limits: limits.Limits{MaxConditionNodes: 20},
			want: []api.FieldError{fe("metrics[0].successCondition", "the condition is too complex: it has more than 20 syntax nodes, the most this canaryd accepts")}},
		{name: "a schedule within the duration", input: metric("count: 60, interval: 1m"), limits: limits.Limits{MaxAnalysisDuration: time.Hour}},
		{name: "a schedule exactly the duration", input: metric("count: 61, interval: 1m"), limits: limits.Limits{MaxAnalysisDuration: time.Hour}},
		{name: "a schedule longer than the duration", input: metric("count: 62, interval: 1m"), limits: limits.Limits{MaxAnalysisDuration: time.Hour},
			want: []api.FieldError{fe("metrics[0].count", "62 measurements 1m0s apart (after an initialDelay of 0s) take at least 1h1m0s, longer than an analysis may run here (--max-analysis-duration 1h0m0s); it could only end with phase Error")}},
		{name: "the initial delay counts", input: metric("count: 60, interval: 1m, initialDelay: 5m"), limits: limits.Limits{MaxAnalysisDuration: time.Hour},
			want: []api.FieldError{fe("metrics[0].count", "60 measurements 1m0s apart (after an initialDelay of 5m0s) take at least 1h4m0s, longer than an analysis may run here (--max-analysis-duration 1h0m0s); it could only end with phase Error")}},
		{name: "an initial delay alone too long", input: metric("initialDelay: 2h"), limits: limits.Limits{MaxAnalysisDuration: time.Hour},
			want: []api.FieldError{fe("metrics[0].initialDelay", "an initialDelay of 2h0m0s is longer than an analysis may run here (--max-analysis-duration 1h0m0s); it could only end with phase Error")}},
		{name: "a count from an argument", input: "args: [{name: num, value: '1000'}]\n" + metric("count: '{{args.num}}', interval: 10s"), limits: limits.Limits{MaxAnalysisDuration: time.Hour},
			want: []api.FieldError{fe("metrics[0].count", "1000 measurements 10s apart (after an initialDelay of 0s) take at least 2h46m30s, longer than an analysis may run here (--max-analysis-duration 1h0m0s); it could only end with phase Error")}},
		{name: "an enormous count does not overflow", input: metric("count: 2147483647, interval: 2000000h"), limits: limits.Limits{MaxAnalysisDuration: time.Hour},
			want: []api.FieldError{fe("metrics[0].count", "2147483647 measurements 2000000h0m0s apart (after an initialDelay of 0s) take at least 2562047h47m16.854775807s, longer than an analysis may run here (--max-analysis-duration 1h0m0s); it could only end with phase Error")}},
		{name: "an indefinite metric is left to the run's bound", input: metric("interval: 1m"), limits: limits.Limits{MaxAnalysisDuration: time.Hour}},
	}
	for _, tt := range tests {
		sources := &recordingSources{}
		doc := mustParse(t, tt.input)
		_, got := Compile(doc, nil, Builtin(sources.source), WithLimits(tt.limits))
		checkErrors(t, tt.name, got, tt.want)
	}
}
