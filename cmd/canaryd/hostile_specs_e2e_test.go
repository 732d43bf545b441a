package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The documents and conditions the hostile-input suite sends.

// metricJSON is one Prometheus metric of a bare JSON spec.
type metricJSON struct {
	Name             string         `json:"name"`
	Interval         string         `json:"interval,omitempty"`
	Count            any            `json:"count,omitempty"`
	SuccessCondition string         `json:"successCondition,omitempty"`
	FailureCondition string         `json:"failureCondition,omitempty"`
	Provider         map[string]any `json:"provider"`
}

// promMetric is a metric querying query (at address, when not "").
func promMetric(name, query, address string) metricJSON {
	p := map[string]any{"query": query}
	if address != "" {
		p["address"] = address
	}
	return metricJSON{Name: name, Provider: map[string]any{"prometheus": p}}
}

// specJSON is a bare spec of metrics, with args when given, as JSON.
func specJSON(metrics []metricJSON, args ...map[string]string) []byte {
	doc := map[string]any{"metrics": metrics}
	if len(args) > 0 {
		doc["args"] = args
	}
	data, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return data
}

// conditionSpec is one metric measuring vector(1) (result [1]) judged by
// the success condition, or by the failure condition when failure is set.
func conditionSpec(condition string, failure bool) []byte {
	m := promMetric("m", "vector(1)", "")
	if failure {
		m.FailureCondition = condition
	} else {
		m.SuccessCondition = condition
	}
	return specJSON([]metricJSON{m})
}

// letChain builds `let x0 = seed; let x1 = step(x0); …; final(xN)`: n
// steps, each applied to the previous binding.
func letChain(seed string, n int, step func(prev string) string, final func(last string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "let x0 = %s; ", seed)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "let x%d = %s; ", i, step(fmt.Sprintf("x%d", i-1)))
	}
	b.WriteString(final(fmt.Sprintf("x%d", n)))
	return b.String()
}

// nested wraps inner in wrap n times.
func nested(inner string, n int, wrap func(string) string) string {
	for range n {
		inner = wrap(inner)
	}
	return inner
}

// stringLit is a string literal of n copies of c.
func stringLit(c string, n int) string { return `"` + strings.Repeat(c, n) + `"` }

type conditionAttack struct {
	name      string
	condition string
}

// stringBuiltinAttacks are conditions that would allocate far beyond any
// bound through each string builtin of expr, and through string
// concatenation: each doubles (or more) a string at every step of a let
// chain or a nesting, so that a condition of under 4 KiB asks for
// gigabytes. Every one must be refused before it runs.
func stringBuiltinAttacks() []conditionAttack {
	s := stringLit("a", 64)
	// doubling applies f to the concatenation of the previous binding with
	// itself 25 times: 64 B × 2²⁵ = 2 GiB.
	doubling := func(f func(string) string, final func(string) string) string {
		return letChain(s, 25, func(p string) string { return f(p + " + " + p) }, final)
	}
	id := func(x string) string { return x }
	length := func(x string) string { return "len(" + x + ") > 0" }
	sixteen := stringLit("a", 16)
	thousand := stringLit("a", 1000)
	return []conditionAttack{
		// The four nested replace() of the report, and four more: 16⁹ bytes.
		{"replace", length(nested(sixteen, 8, func(in string) string { return "replace(" + in + `, "a", ` + sixteen + ")" }))},
		{"repeat", length(nested(stringLit("a", 8), 3, func(in string) string { return "repeat(" + in + ", 100000)" }))},
		// join(split(s, ""), s) is len(s)² bytes.
		{"split and join", "let s = " + thousand + "; " + length("join(split(join(split(s, \"\"), s), \"\"), s)")},
		{"splitAfter and join", "let s = " + thousand + "; " + length("join(splitAfter(join(splitAfter(s, \"a\"), s), \"a\"), s)")},
		{"concatenation", doubling(id, length)},
		{"upper", doubling(func(x string) string { return "upper(" + x + ")" }, length)},
		{"lower", doubling(func(x string) string { return "lower(" + x + ")" }, length)},
		{"trim", doubling(func(x string) string { return "trim(" + x + ")" }, length)},
		{"trimPrefix", doubling(func(x string) string { return "trimPrefix(" + x + `, "z")` }, length)},
		{"trimSuffix", doubling(func(x string) string { return "trimSuffix(" + x + `, "z")` }, length)},
		{"string", doubling(func(x string) string { return "string(" + x + ")" }, length)},
		{"toJSON", doubling(func(x string) string { return "toJSON(" + x + ")" }, length)},
		{"fromJSON", doubling(func(x string) string { return "fromJSON(toJSON(" + x + "))" }, length)},
		{"indexOf", doubling(id, func(x string) string { return "indexOf(" + x + `, "b") < 0` })},
		{"lastIndexOf", doubling(id, func(x string) string { return "lastIndexOf(" + x + `, "b") < 0` })},
		{"hasPrefix", doubling(id, func(x string) string { return "hasPrefix(" + x + `, "b")` })},
		{"hasSuffix", doubling(id, func(x string) string { return "hasSuffix(" + x + `, "b")` })},
		{"contains", doubling(id, func(x string) string { return x + ` contains "b"` })},
		{"matches", doubling(id, func(x string) string { return x + ` matches "b+$"` })},
	}
}

// iterationAttacks are conditions whose work is far beyond any bound: each
// way expr can nest iteration (the predicate builtins in each other,
// ranges bound by let, ranges whose bound the result decides, iteration
// over the result inside iteration over it) and single ranges too long to
// walk. Every one must be refused before it runs.
func iterationAttacks() []conditionAttack {
	return []conditionAttack{
		// The report's: about 10¹² steps.
		{"all in all over a let-bound range", "let r = 1..999999; all(r, {all(r, {# > 0})})"},
		{"any in any", "any(1..999999, {any(1..999999, {# < 0})})"},
		{"none in one", "one(1..999999, {none(1..999999, {# == 0})})"},
		{"filter in count", "count(1..999999, {len(filter(1..999999, {# > 0})) > 0}) > 0"},
		{"map in map", "len(map(1..999999, {map(1..999999, {#})})) > 0"},
		{"count in filter", "len(filter(1..999999, {count(1..999999, {# > 0}) > 0})) > 0"},
		{"sum of ranges in map", "sum(map(1..999999, {sum(1..999999)})) > 0"},
		{"reduce over a range in reduce", "reduce(1..999999, {#acc + reduce(1..999999, {#acc + #}, 0)}, 0) > 0"},
		{"three levels of small ranges", "all(1..1000, {all(1..1000, {all(1..1000, {all(1..1000, {# > 0})})})})"},
		{"a let-bound range in a predicate", "all(1..999999, {let r = 1..999999; any(r, {# < 0}) || true})"},
		{"find in findIndex", "findIndex(1..999999, {find(1..999999, {# < 0}) != nil}) < 0"},
		{"a long single range", "all(1..2000000000, {# > 0})"},
		{"a long range, sorted", "len(sort(1..200000000)) > 0"},
		{"a long range, grouped", "len(groupBy(1..200000000, {# % 7})) > 0"},
		{"a long range, uniq", "len(uniq(1..200000000)) > 0"},
		{"a long range, concatenated", "len(concat(1..200000000, 1..200000000)) > 0"},
		{"a long range, flattened", "len(flatten(map(1..100000, {1..100000}))) > 0"},
		{"a long range, piped", "1..999999 | map(# * 2) | filter(# > 0) | all(1..999999 | any(# < 0) || true)"},
		{"a range bounded by the result", "let r = 0..asInt(result[0] * 1e12); all(r, {# >= 0})"},
		{"the result inside the result", "all(result, {all(result, {all(result, {# > 0})})})"},
		{"the result inside a range", "all(1..999999, {any(result, {# < 0}) || true})"},
		// A red team's: 95 entries built for each value, about 90 MB.
		// A space keeps "{ {" from reading as an argument's "{{".
		{"a map literal built for each value", "none(result, { " + mapLiteral(95) + ".k0 < 0})"},
	}
}

// mapLiteral is a map literal of n entries, {k0: #, k1: #, …}.
func mapLiteral(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf("k%d: #", i)
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// predicateBuiltins are expr's built-ins that go over a collection, each
// with how its call becomes a bool.
var predicateBuiltins = []struct {
	name string
	call func(collection, predicate string) string
}{
	{"all", func(c, p string) string { return "all(" + c + ", {" + p + "})" }},
	{"any", func(c, p string) string { return "any(" + c + ", {" + p + "})" }},
	{"none", func(c, p string) string { return "none(" + c + ", {" + p + "})" }},
	{"one", func(c, p string) string { return "one(" + c + ", {" + p + "})" }},
	{"filter", func(c, p string) string { return "len(filter(" + c + ", {" + p + "})) > 0" }},
	{"map", func(c, p string) string { return "len(map(" + c + ", {" + p + "})) > 0" }},
	{"count", func(c, p string) string { return "count(" + c + ", {" + p + "}) > 0" }},
	{"sum", func(c, p string) string { return "sum(" + c + ", {(" + p + ") ? 1 : 0}) > 0" }},
	{"find", func(c, p string) string { return "find(" + c + ", {" + p + "}) != nil" }},
	{"findIndex", func(c, p string) string { return "findIndex(" + c + ", {" + p + "}) >= 0" }},
	{"findLast", func(c, p string) string { return "findLast(" + c + ", {" + p + "}) != nil" }},
	{"findLastIndex", func(c, p string) string { return "findLastIndex(" + c + ", {" + p + "}) >= 0" }},
}

// nestedResultAttacks nests each predicate built-in in each other over the
// result, the collection whose size the caller's query decides: on a
// result of --max-result-values values, a hundred million steps or more.
// The cost bound must refuse every one, however the result is named.
func nestedResultAttacks() []conditionAttack {
	var out []conditionAttack
	for _, outer := range predicateBuiltins {
		for _, inner := range predicateBuiltins {
			out = append(out, conditionAttack{outer.name + " over the result in " + inner.name + " over it",
				inner.call("result", outer.call("result", "# > 0"))})
		}
	}
	return append(out,
		conditionAttack{"the result let-bound", "let r = result; all(r, {any(r, {# < 0})})"},
		conditionAttack{"the result piped", "result | all(any(result, {# > 0}))"},
		conditionAttack{"the result in a range of 1000", "all(1..1000, {any(result, {# < 0})})"},
		conditionAttack{"the result through a literal list, in the result", "all(result, {any([result], {any(#, {# < 0})})})"},
		conditionAttack{"the result through a literal list, mapped", "all(result, {len(map([result], {filter(#, {# > 0})})) > 0})"},
	)
}

// costliestAccepted are conditions near the cost bound that it accepts:
// on a result of --max-result-values values each is answered at once.
func costliestAccepted() []string {
	return []string{
		"all(1..100, {any(result, {# < 0})}) || true",
		"all(result, {# >= 0}) && any(result, {# > 0}) && count(result, {# > 1}) >= 0 && sum(result) >= 0",
		"len(filter(result, {# > 0})) >= 0 && mean(result) >= 0 && median(result) >= 0 && max(result) >= min(result)",
	}
}

// argoExampleConditions are conditions as Argo Rollouts' documentation and
// canaryd's shipped templates write them: the bounds must leave them
// accepted, and on vector(1) each is Successful.
func argoExampleConditions() []string {
	return []string{
		"result[0] >= 0.95",
		"len(result) > 0 && !isNaN(result[0]) && result[0] < 500",
		"len(result) == 0 || result[0] >= 0.99",
		"all(result, {# >= 0.95})",
		"any(result, {# > 0})",
		"!isNil(result) && result[0] >= 0.95",
		"asFloat(result[0]) >= 0.95",
	}
}

// aliasBody is an Argo AnalysisTemplate whose YAML aliases would expand
// to about 600 MB from a body of about 0.6 MB: an anchored 4 KiB string
// (or metric) and ~150,000 aliases to it, placed by place.
func aliasBody(place string) []byte {
	const aliases = 150_000
	big := strings.Repeat("a", 4096)
	var b strings.Builder
	b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata:\n  name: aliases\n")
	switch place {
	case "sequence":
		// A sequence of aliases to a string, as an argument's list.
		b.WriteString("  annotations:\n    big: &a " + big + "\nspec:\n  args:\n    - name: a\n      value: x\n  metrics:\n    - name: m\n      provider: {prometheus: {query: vector(1)}}\n      successCondition: result[0] > 0\nnothing: [")
		for i := range aliases {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("*a")
		}
		b.WriteString("]\n")
	case "map":
		// A mapping whose every value is an alias.
		b.WriteString("  annotations:\n    big: &a " + big + "\n")
		for i := range aliases / 3 {
			fmt.Fprintf(&b, "    k%d: *a\n", i)
		}
		b.WriteString("spec:\n  metrics:\n    - name: m\n      provider: {prometheus: {query: vector(1)}}\n")
	case "metrics":
		// The metrics list as aliases of one anchored metric.
		b.WriteString("spec:\n  metrics:\n    - &m {name: m, successCondition: \"result[0] > 0\", provider: {prometheus: {query: \"" + big + "\"}}}\n")
		for range aliases / 5 {
			b.WriteString("    - *m\n")
		}
	case "merge keys":
		// Each metric merges the anchored one (<<: *m), renamed.
		b.WriteString("spec:\n  metrics:\n    - &m {name: m0, successCondition: \"result[0] > 0\", provider: {prometheus: {query: \"" + big + "\"}}}\n")
		for i := 1; i < aliases/12; i++ {
			fmt.Fprintf(&b, "    - {<<: *m, name: m%d}\n", i)
		}
	case "nested":
		// The billion laughs: ten aliases to the level below, nine levels.
		b.WriteString("  annotations: {}\nlol0: &l0 [" + strings.Repeat("lol,", 9) + "lol]\n")
		for i := 1; i <= 9; i++ {
			refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ",")
			fmt.Fprintf(&b, "lol%d: &l%d [%s]\n", i, i, refs)
		}
		b.WriteString("spec:\n  metrics:\n    - name: m\n      provider: {prometheus: {query: vector(1)}}\n")
	default:
		panic(place)
	}
	return []byte(b.String())
}

// mediumResultQuery returns about 4,700 samples (every series, one a
// second for a minute): a measurement of some 40 KB, for streams.
const mediumResultQuery = `{__name__=~".+"}[1m:1s]`
