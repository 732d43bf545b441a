package compile

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/limits"
)

// TestCompileConditionCost: the conditions the condition package refuses
// for their cost are refused by Compile on their field, with or without a
// service's limits, so that `canaryd validate`, `canaryd run` and the
// service agree.
func TestCompileConditionCost(t *testing.T) {
	metric := func(field, cond string) string {
		return "metrics:\n- name: m\n  " + field + ": " + quoteYAML(cond) + "\n  provider: {prometheus: {query: up}}\n"
	}
	for _, tc := range []struct {
		field, cond, want string
	}{
		{"successCondition", `let r = 1..999999; all(r, {all(r, {# > 0})})`, "the range 1..999999 has 999999 values"},
		{"failureCondition", `replace(replace(replace(replace("aaaa", "a", "aaaa"), "a", "aaaa"), "a", "aaaa"), "a", "aaaa") != ""`, "replace() is not allowed in a condition"},
		{"successCondition", `all(result, {any(result, {# > 1})})`, "any() inside all() goes over the result once for each value all() goes over"},
		{"failureCondition", `let r = 1..999; all(r, {all(r, {# > 0})})`, "this condition may take 6994006 steps whatever the result, more than the 100000 canaryd allows"},
	} {
		doc := mustParse(t, metric(tc.field, tc.cond))
		for _, l := range []limits.Limits{{}, {MaxConditionLength: 4096, MaxConditionNodes: 1000}} {
			_, got := Compile(doc, nil, Builtin((&recordingSources{}).source), WithLimits(l))
			if len(got) != 1 || got[0].Field != "metrics[0]."+tc.field || !strings.HasPrefix(got[0].Message, tc.want) {
				t.Errorf("%s with %+v: %s; want one problem on metrics[0].%s starting %q", tc.cond, l, formatErrors(got), tc.field, tc.want)
			}
		}
	}
	// The conditions of canaryd's own templates and examples pass.
	doc := mustParse(t, metric("successCondition", "len(result) > 0 && !isNaN(result[0]) && result[0] >= 0.99 && all(result, {# <= 1})"))
	if _, got := Compile(doc, nil, Builtin((&recordingSources{}).source)); len(got) > 0 {
		t.Errorf("a usual condition refused: %s", formatErrors(got))
	}
}

// quoteYAML writes s as a YAML single-quoted scalar.
func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
