package datadog_test

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/spec"
)

// resolve substitutes args into a Datadog metric with the languages the
// provider declares, as internal/compile does.
func resolve(t *testing.T, provider string, args map[string]string) (string, string) {
	t.Helper()
	doc, errs := spec.Parse([]byte("metrics:\n- name: m\n  provider:\n    datadog: " + provider + "\nargs: [{name: a}, {name: b}]\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	langs := map[string]spec.Language{}
	for f, l := range (&datadog.Provider{}).Languages() {
		langs["provider.datadog."+f] = l
	}
	res, errs := doc.Spec.Resolve(args, spec.ResolveOptions{Conditions: condition.Expr, Languages: langs})
	if len(errs) > 0 {
		return "", errs[0].Field + ": " + errs[0].Message
	}
	return string(res.Spec.Metrics[0].Provider.Datadog), ""
}

// TestArguments: a value goes into a query when it stays one tag value or
// name, and into a formula when it is a number or a name; anything that
// would end a tag value, add a filter, widen one or change the query is
// refused, on the argument, naming the field.
func TestArguments(t *testing.T) {
	const (
		query   = `{query: "avg:trace.errors{service:{{args.a}},env:{{args.b}}}.as_count()"}`
		queries = `{apiVersion: v2, queries: {q: "sum:x{service:{{args.a}}}", r: "sum:y{*}"}, formula: "q / r * {{args.b}}"}`
	)
	for _, tt := range []struct {
		name, provider, a, b, want, refused string
	}{
		{"tag values", query, "checkout-api", "prod.eu/1:a", `"avg:trace.errors{service:checkout-api,env:prod.eu/1:a}.as_count()"`, ""},
		{"non-ASCII letters", query, "café", "prod", `café`, ""},
		{"a comma adds a filter", query, "checkout,env:dev", "prod", "", "provider.datadog.query"},
		{"a brace ends the filter", query, "x} by {host", "prod", "", "provider.datadog.query"},
		{"a wildcard widens it", query, "*", "prod", "", "provider.datadog.query"},
		{"a negation", query, "!checkout", "prod", "", "provider.datadog.query"},
		{"a space", query, "a b", "prod", "", "provider.datadog.query"},
		{"empty", query, "", "prod", "", "provider.datadog.query"},
		{"queries and formula", queries, "cart", "100", `"q / r * 100"`, ""},
		{"a query of queries", queries, "cart) + sum:z{*", "100", "", "provider.datadog.queries.q"},
		{"a formula operator", queries, "cart", "100 + a", "", "provider.datadog.formula"},
		{"a formula function", queries, "cart", "abs(q)", "", "provider.datadog.formula"},
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

// TestPlain holds the languages' plain words.
func TestPlain(t *testing.T) {
	q, f := datadog.Query{}, datadog.Formula{}
	for _, v := range []string{"web-1", "a:b", "eu/west", "v1.2", "ümlaut"} {
		if why := q.Plain(v, lang.Context{}); why != "" {
			t.Errorf("Query.Plain(%q) = %q", v, why)
		}
	}
	for _, v := range []string{"", "a,b", "a}", "{a", "a(b", "a b", `a"`, "a'", "*", "!a", "a|b", "a\nb"} {
		if q.Plain(v, lang.Context{}) == "" {
			t.Errorf("Query.Plain(%q) accepted", v)
		}
	}
	for _, v := range []string{"100", "0.5", "1e3", "a", "query_1"} {
		if why := f.Plain(v, lang.Context{}); why != "" {
			t.Errorf("Formula.Plain(%q) = %q", v, why)
		}
	}
	for _, v := range []string{"", "-1", "a+b", "a b", "(a)", "1)"} {
		if f.Plain(v, lang.Context{}) == "" {
			t.Errorf("Formula.Plain(%q) accepted", v)
		}
	}
	if f.Plain("1", lang.Context{Before: "a"}) != "" || f.Plain("x", lang.Context{Before: "1"}) == "" {
		t.Error("Formula.Plain: a joined value must make one token")
	}
	if _, refused := q.EscapedLength("x", '"'); refused == "" {
		t.Error("Query has no string literal to escape into")
	}
}
