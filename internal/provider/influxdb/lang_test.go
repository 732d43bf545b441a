package influxdb_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/spec"
)

// resolve substitutes args into an InfluxDB metric's query with the
// languages the provider declares, as internal/compile does, and returns
// the query or the first problem.
func resolve(t *testing.T, query string, args map[string]string) (string, string) {
	t.Helper()
	q, _ := json.Marshal(query)
	doc, errs := spec.Parse([]byte("metrics:\n- name: m\n  provider:\n    influxdb: {query: " + string(q) + "}\nargs: [{name: a}, {name: b}]\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	langs := map[string]spec.Language{}
	for f, l := range (&influxdb.Provider{}).Languages() {
		langs["provider.influxdb."+f] = l
	}
	res, errs := doc.Spec.Resolve(args, spec.ResolveOptions{Conditions: condition.Expr, Languages: langs})
	if len(errs) > 0 {
		return "", errs[0].Field + ": " + errs[0].Message
	}
	var m influxdb.Metric
	if err := json.Unmarshal(res.Spec.Metrics[0].Provider.Influxdb, &m); err != nil {
		t.Fatal(err)
	}
	return m.Query, ""
}

// TestArguments: in a string a value is escaped so that the string holds
// exactly it, and can open no interpolation; in a regular expression it
// must be a plain word; in code one token. Anything else is refused on the
// argument, naming the field.
func TestArguments(t *testing.T) {
	const (
		str    = `from(bucket: "app") |> filter(fn: (r) => r.service == "{{args.a}}")`
		code   = `from(bucket: "app") |> range(start: {{args.a}}) |> filter(fn: (r) => r._value > {{args.b}})`
		regex  = `from(bucket: "app") |> filter(fn: (r) => r.host =~ /^{{args.a}}-[0-9]+$/)`
		interp = `from(bucket: "app") |> filter(fn: (r) => r.id == "x${ {{args.a}} }y")`
		joined = `from(bucket: "app") |> range(start: -{{args.a}}m)`
	)
	for _, tt := range []struct {
		name, query, a, b, want, refused string
	}{
		{"a string", str, "checkout", "", `r.service == "checkout"`, ""},
		{"a quote cannot end the string", str, `x") or true //`, "", `r.service == "x\") or true //"`, ""},
		{"a backslash", str, `a\`, "", `"a\\"`, ""},
		{"an interpolation cannot open", str, "${r._value}", "", `"\x24\x7br._value}"`, ""},
		{"a line break", str, "a\nb", "", `"a\nb"`, ""},
		{"a duration", code, "-5m", "0.99", "range(start: -5m)", ""},
		{"a date", code, "2026-01-02T03:04:05Z", "1", "range(start: 2026-01-02T03:04:05Z)", ""},
		{"code cannot be added", code, "-5m) |> drop(columns: [\"x\"]", "1", "", "provider.influxdb.query"},
		{"a keyword", code, "-5m", "or", "", "provider.influxdb.query"},
		{"a sign in the middle of an expression", `x |> filter(fn: (r) => r._value > 1 + {{args.a}} * 2)`, "-1", "", "", "provider.influxdb.query"},
		{"a regular expression's word", regex, "web-api", "", "/^web-api-[0-9]+$/", ""},
		{"a regular expression cannot widen or end", regex, ".*", "", "", "provider.influxdb.query"},
		{"a regular expression's slash", regex, "a/ or true", "", "", "provider.influxdb.query"},
		{"code in an interpolation", interp, "r.id", "", "", "provider.influxdb.query"},
		{"a name in an interpolation", interp, "v", "", `"x${ v }y"`, ""},
		{"joined to make a duration", joined, "15", "", "range(start: -15m)", ""},
		{"joined to make no token", joined, "1.5", "", "", "provider.influxdb.query"},
		{"in a comment, code's rules", "x // {{args.a}}\n", "a\nb", "", "", "provider.influxdb.query"},
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
		{`"a{{x}}"`, lang.Context{Quote: '"'}},
		{`"a\{{x}}"`, lang.Context{Quote: '"', InEscape: true}},
		{`"\x4{{x}}"`, lang.Context{Quote: '"', InEscape: true}},
		{`"a\\{{x}}"`, lang.Context{Quote: '"'}},
		{`"${ "in" } {{x}}"`, lang.Context{Quote: '"'}},
		{`"${ f(a: {{x}}) }"`, lang.Context{Operand: true}},
		{`r =~ /a{{x}}/`, lang.Context{Quote: '/', Before: ""}},
		{`a / {{x}} / 2`, lang.Context{}},
		{`// "{{x}}`, lang.Context{}},
		{"// \"\n{{x}}", lang.Context{Operand: true}},
	} {
		start := strings.Index(tt.text, "{{x}}")
		ctx := make([]lang.Context, 1)
		influxdb.Flux{}.Lex(tt.text, []lang.Span{{Start: start, End: start + 5}}, ctx)
		if ctx[0] != tt.want {
			t.Errorf("Lex(%q) = %+v, want %+v", tt.text, ctx[0], tt.want)
		}
	}
}
