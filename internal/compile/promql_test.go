package compile

import (
	"strconv"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestParsePromQL: a query is parsed by Prometheus' parser; a placeholder
// (an argument whose value is not known) stands for a name or a number,
// and the query is refused only when it parses with neither in any place,
// at its position in the query as written.
func TestParsePromQL(t *testing.T) {
	p := func(name string) string { return spec.Placeholder(name) }
	tests := []struct {
		name, query, want string // want: the message's start, "" parses
	}{
		{"a query", `sum(rate(http_requests_total{code=~"5.."}[5m])) / sum(rate(http_requests_total[5m]))`, ""},
		{"an unbalanced parenthesis", `sum(rate(x[5m])`, "1:16: parse error: unclosed left parenthesis"},
		{"a bad regular expression", `x{a=~"("}`, "1:3: parse error: error parsing regexp"},
		{"on its line", "sum(x)\n/ sum(y", "2:8: parse error: unclosed left parenthesis"},
		{"an experimental function", `limitk(2, x)`, ""},
		{"a placeholder in a string", `x{service="` + p("service") + `"}`, ""},
		{"a placeholder as a duration", `rate(x[` + p("window") + `])`, ""},
		{"a placeholder as an offset", `x offset ` + p("ago"), ""},
		{"a placeholder as a metric name", p("metric") + `{job="a"}`, ""},
		{"a placeholder joined to a name", `x_` + p("suffix") + `_total`, ""},
		{"a placeholder as a label", `sum by (` + p("label") + `) (x)`, ""},
		{"a placeholder as a scalar", `topk(` + p("k") + `, x)`, ""},
		{"placeholders of each kind", `topk(` + p("k") + `, rate(` + p("m") + `[` + p("w") + `])) > ` + p("t"), ""},
		{"placeholders and an unbalanced parenthesis", `sum(rate(x{a="` + p("a") + `"}[` + p("w") + `])`, "1:" + strconv.Itoa(len(`sum(rate(x{a="`+p("a")+`"}[`+p("w")+`])`)+1) + ": parse error: unclosed left parenthesis"},
		{"a placeholder that no value fixes", `rate(x[5m]) ` + p("w"), "1:13: parse error: unexpected identifier"},
	}
	for _, tt := range tests {
		got := parsePromQL(tt.query)
		if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: parsePromQL(%q) = %q, want %q…", tt.name, tt.query, got, tt.want)
		}
	}
}

// TestCompilePromQLFields: every PromQL field a provider declares
// (provider.Languages) is parsed, the judge's counts too, each refused on
// its path with the parser's position; conditions are compiled and the
// other fields checked all the same.
func TestCompilePromQLFields(t *testing.T) {
	const input = `metrics:
- name: errors
  successCondition: reslt[0] < 1
  provider:
    prometheus:
      query: sum(rate(x[5m])
- name: judged
  provider:
    judge:
      canary: rate(x[5m]
      baseline: rate(x[5m])
      lookback: 30m
      step: 15s
- name: counted
  provider:
    judge:
      counts:
        canary: {bad: 'x{a="1"', total: requests}
        baseline: {bad: x, total: requests)}
`
	_, _, errs := ParseAndCompile([]byte(input), nil, Builtin(noSources))
	want := map[string]string{
		"metrics[0].provider.prometheus.query":            "1:16: parse error: unclosed left parenthesis",
		"metrics[0].successCondition":                     "unknown name reslt",
		"metrics[1].provider.judge.canary":                "1:11: parse error: unclosed left parenthesis",
		"metrics[2].provider.judge.counts.canary.bad":     "1:8: parse error: unexpected end of input inside braces",
		"metrics[2].provider.judge.counts.baseline.total": "1:10: parse error: unexpected right parenthesis ')'",
	}
	got := map[string]api.FieldError{}
	for _, e := range errs {
		if _, dup := got[e.Field]; !dup {
			got[e.Field] = e
		}
	}
	for field, msg := range want {
		e, ok := got[field]
		if !ok || !strings.Contains(e.Message, msg) {
			t.Errorf("%s: %q, want %q (all: %v)", field, e.Message, msg, errs)
		}
	}
	for _, e := range errs {
		if strings.HasPrefix(e.Message, PromQLProblem) && want[e.Field] == "" {
			t.Errorf("%s: refused: %s", e.Field, e.Message)
		}
	}
}

// FuzzParsePromQL: any query, with placeholders or not, is parsed without
// a panic, and deeply nested ones within the bound on a query's length in
// little time.
func FuzzParsePromQL(f *testing.F) {
	for _, s := range []string{"up", "sum(rate(x[5m])", `x{a="` + spec.Placeholder("a") + `"}[` + spec.Placeholder("w") + `]`,
		strings.Repeat("(", 8000) + "1" + strings.Repeat(")", 8000), strings.Repeat("sum(", 4000), spec.Placeholder("") + " " + spec.Placeholder("x")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		_ = parsePromQL(query)
	})
}
