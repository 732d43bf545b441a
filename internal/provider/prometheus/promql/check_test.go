package promql

import (
	"strconv"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/lang"
)

// TestParse: a query is parsed by Prometheus' parser; a placeholder
// (an argument whose value is not known) stands for a name or a number,
// and the query is refused only when it parses with neither in any place,
// at its position in the query as written.
func TestParse(t *testing.T) {
	p := func(name string) string { return lang.Placeholder(name) }
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
		got := parse(tt.query)
		if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: parse(%q) = %q, want %q…", tt.name, tt.query, got, tt.want)
		}
	}
}

// FuzzParse: any query, with placeholders or not, is parsed without
// a panic, and deeply nested ones within the bound on a query's length in
// little time.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"up", "sum(rate(x[5m])", `x{a="` + lang.Placeholder("a") + `"}[` + lang.Placeholder("w") + `]`,
		strings.Repeat("(", 8000) + "1" + strings.Repeat(")", 8000), strings.Repeat("sum(", 4000), lang.Placeholder("") + " " + lang.Placeholder("x")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		_ = parse(query)
	})
}

// TestCheck: a query that does not parse is a parse problem of PromQL
// (lang.IsParseProblem); an empty one is the provider's to report.
func TestCheck(t *testing.T) {
	if Problem != lang.ParseProblem(Language{}.Noun(), Language{}.Name()) {
		t.Errorf("Problem = %q", Problem)
	}
	if got := (Language{}).Check("sum(x"); !strings.HasPrefix(got, Problem+": ") || !lang.IsParseProblem(got) {
		t.Errorf("Check = %q", got)
	}
	if got := (Language{}).Check("  "); got != "" {
		t.Errorf("Check(blank) = %q", got)
	}
}
