package newrelic_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
	"github.com/canaryd/canaryd/internal/spec"
)

// resolve substitutes args into a New Relic metric's query with the
// languages the provider declares, as internal/compile does, and returns
// the query or the first problem.
func resolve(t *testing.T, query string, args map[string]string) (string, string) {
	t.Helper()
	q, _ := json.Marshal(query)
	doc, errs := spec.Parse([]byte("metrics:\n- name: m\n  provider:\n    newRelic: {query: " + string(q) + "}\nargs: [{name: a}, {name: b}]\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	langs := map[string]spec.Language{}
	for f, l := range (&newrelic.Provider{}).Languages() {
		langs["provider.newRelic."+f] = l
	}
	res, errs := doc.Spec.Resolve(args, spec.ResolveOptions{Conditions: condition.Expr, Languages: langs})
	if len(errs) > 0 {
		return "", errs[0].Field + ": " + errs[0].Message
	}
	var m newrelic.Metric
	if err := json.Unmarshal(res.Spec.Metrics[0].Provider.NewRelic, &m); err != nil {
		t.Fatal(err)
	}
	return m.Query, ""
}

// TestArguments: in a string a value is escaped so that the string holds
// exactly it; outside one it must be one number or name; a value that
// would end the string or add a clause is refused on the argument, naming
// the field.
func TestArguments(t *testing.T) {
	const (
		str  = `FROM Transaction SELECT percentage(count(*), WHERE error IS false) WHERE appName = '{{args.a}}' SINCE {{args.b}} minutes ago`
		name = "FROM Transaction SELECT average(`{{args.a}}`) SINCE 5 minutes ago"
	)
	for _, tt := range []struct {
		name, query, a, b, want, refused string
	}{
		{"a string", str, "checkout", "5", `appName = 'checkout' SINCE 5 minutes`, ""},
		{"a quote cannot end the string", str, "x' OR appName LIKE '%", "5", `appName = 'x\' OR appName LIKE \'%'`, ""},
		{"a backslash", str, `a\`, "5", `appName = 'a\\'`, ""},
		{"a line break", str, "a\nb", "5", "", "provider.newRelic.query"},
		{"a number", str, "checkout", "30", "SINCE 30 minutes", ""},
		{"a clause", str, "checkout", "5 minutes ago FACET host LIMIT", "", "provider.newRelic.query"},
		{"a keyword", str, "checkout", "UNTIL", "", "provider.newRelic.query"},
		{"a name in backticks", name, "duration.p99", "", "average(`duration.p99`)", ""},
		{"a backtick", name, "a`) FROM Secret SELECT (`b", "", "", "provider.newRelic.query"},
		{"in a comment, code's rules", "FROM T SELECT count(*) -- {{args.a}}", "a b", "", "", "provider.newRelic.query"},
	} {
		got, refused := resolve(t, tt.query, map[string]string{"a": tt.a, "b": tt.b})
		switch {
		case tt.refused == "" && (refused != "" || !strings.Contains(got, tt.want)):
			t.Errorf("%s: %s %s; want %s", tt.name, got, refused, tt.want)
		case tt.refused != "" && !strings.Contains(refused, tt.refused):
			t.Errorf("%s: %s %q; want refused in %s", tt.name, got, refused, tt.refused)
		}
	}
}

// TestLex holds where the lexer puts tags.
func TestLex(t *testing.T) {
	for _, tt := range []struct {
		text string
		want lang.Context
	}{
		{`x = '{{x}}'`, lang.Context{Quote: '\''}},
		{`x = 'a\{{x}}'`, lang.Context{Quote: '\'', InEscape: true}},
		{`x = "{{x}}"`, lang.Context{Quote: '"'}},
		{"average(`{{x}}`)", lang.Context{Quote: '`'}},
		{`x = 'it\'s' AND y = {{x}}`, lang.Context{Operand: true}},
		{"/* '{{x}}", lang.Context{}},
		{"/* ' */ {{x}}", lang.Context{Operand: true}},
		{"SINCE {{x}} minutes ago", lang.Context{}},
	} {
		start := strings.Index(tt.text, "{{x}}")
		ctx := make([]lang.Context, 1)
		newrelic.NRQL{}.Lex(tt.text, []lang.Span{{Start: start, End: start + 5}}, ctx)
		if ctx[0] != tt.want {
			t.Errorf("Lex(%q) = %+v, want %+v", tt.text, ctx[0], tt.want)
		}
	}
}
