package cloudwatch_test

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/spec"
)

// resolve substitutes args into a CloudWatch metric with the languages the
// provider declares, as internal/compile does.
func resolve(t *testing.T, provider string, args map[string]string) (string, string) {
	t.Helper()
	doc, errs := spec.Parse([]byte("metrics:\n- name: m\n  provider:\n    cloudWatch: " + provider + "\nargs: [{name: a}, {name: b}]\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	langs := map[string]spec.Language{}
	for f, l := range (&cloudwatch.Provider{}).Languages() {
		langs["provider.cloudWatch."+f] = l
	}
	res, errs := doc.Spec.Resolve(args, spec.ResolveOptions{Conditions: condition.Expr, Languages: langs})
	if len(errs) > 0 {
		return "", errs[0].Field + ": " + errs[0].Message
	}
	return string(res.Spec.Metrics[0].Provider.CloudWatch), ""
}

// TestArguments: a value goes into an expression when it stays one number
// or name outside a string, and one word inside a SEARCH's string; anything
// that would add an operand, a search term or end the string is refused,
// on the argument, naming the field. Dimension values are values: any
// text goes there as it is.
func TestArguments(t *testing.T) {
	const (
		expr   = `{metricDataQueries: [{id: e, expression: "errors / requests * {{args.a}}"}, {id: f, expression: "FILL(e, {{args.b}})"}]}`
		search = `{metricDataQueries: [{id: s, expression: "SEARCH('{AWS/ApplicationELB,LoadBalancer} MetricName=\"HTTPCode_Target_5XX_Count\" LoadBalancer=\"{{args.a}}\"', 'Sum', {{args.b}})"}]}`
		dims   = `{metricDataQueries: [{id: m, metricStat: {metric: {namespace: "AWS/ELB", metricName: "{{args.b}}", dimensions: [{name: LoadBalancer, value: "{{args.a}}"}]}, period: 60, stat: Sum}}]}`
	)
	for _, tt := range []struct {
		name, provider, a, b, want, refused string
	}{
		{"numbers and names", expr, "100", "0", `"errors / requests * 100"`, ""},
		{"a query's id", expr, "100", "e", `"FILL(e, e)"`, ""},
		{"an operator adds an operand", expr, "100 + errors", "0", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a function call", expr, "100", "METRICS()", "", "provider.cloudWatch.metricDataQueries[1].expression"},
		{"a negative number", expr, "-1", "0", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"empty", expr, "", "0", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a word in a search's string", search, "app/web/0123456789abcdef", "60", `LoadBalancer=\"app/web/0123456789abcdef\"`, ""},
		{"a quote ends the term", search, `x" OR MetricName="Other`, "60", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a single quote ends the string", search, "x', 'Sum', 60) + SEARCH('y", "60", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a space adds a term", search, "x OR y", "60", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a backslash", search, `x\`, "60", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"the period outside the string", search, "x", "60)", "", "provider.cloudWatch.metricDataQueries[0].expression"},
		{"a dimension value is a value", dims, `app/web/x" OR 'y'`, "5XX Count", `"value":"app/web/x\" OR 'y'"`, ""},
	} {
		got, refused := resolve(t, tt.provider, map[string]string{"a": tt.a, "b": tt.b})
		switch {
		case tt.refused == "" && (refused != "" || !strings.Contains(got, tt.want)):
			t.Errorf("%s: %s %s; want %s", tt.name, got, refused, tt.want)
		case tt.refused != "" && !strings.Contains(refused, tt.refused):
			t.Errorf("%s: %s %q; want refused in %s", tt.name, got, refused, tt.refused)
		}
	}
}

// TestLex: where a tag stands, in a string of either quote or outside.
func TestLex(t *testing.T) {
	m := cloudwatch.MetricMath{}
	for _, tt := range []struct {
		text  string
		quote byte
		esc   bool
	}{
		{"a * {{x}}", 0, false},
		{"SEARCH('{{x}}', 'Sum', 60)", '\'', false},
		{`SEARCH('Name="{{x}}"', 'Sum', 60)`, '\'', false},
		{`"{{x}}"`, '"', false},
		{`'a\{{x}}'`, '\'', true},
		{`'it\'s' + {{x}}`, 0, false},
	} {
		start := strings.Index(tt.text, "{{x}}")
		ctx := make([]lang.Context, 1)
		m.Lex(tt.text, []lang.Span{{Start: start, End: start + 5}}, ctx)
		if ctx[0].Quote != tt.quote || ctx[0].InEscape != tt.esc {
			t.Errorf("Lex(%s) = %+v, want quote %q, in escape %v", tt.text, ctx[0], tt.quote, tt.esc)
		}
	}
	if why := m.Plain("1", lang.Context{Before: "a"}); why != "" {
		t.Errorf("a1 is one name: %s", why)
	}
	if m.Plain("x", lang.Context{Before: "1"}) == "" {
		t.Error("Plain: a joined value must make one token")
	}
}
