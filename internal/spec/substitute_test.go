package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/canaryd/canaryd/api"
)

// exploit closes the label matcher of a query like
// sum(rate(x{namespace="{{args.namespace}}"}[1m])) and turns any result
// into 1: a Failed canary would pass.
const exploit = `failing"}[1m])) * 0 + 1 or vector(1) #`

// oneArg is a spec of one metric whose field (set by set) is text, with
// one argument v.
func oneArg(set func(m *Metric, text string), text string, freeText bool) *Spec {
	m := Metric{Name: "m", Provider: MetricProvider{Prometheus: raw(&PrometheusMetric{Query: "up"})}}
	set(&m, text)
	return &Spec{Args: []Argument{{Name: "v", FreeText: freeText}}, Metrics: []Metric{m}}
}

// editProm changes a metric's Prometheus configuration.
func editProm(m *Metric, edit func(p *PrometheusMetric)) {
	p := prom(m.Provider)
	edit(p)
	m.Provider.Prometheus = raw(p)
}

func setQuery(m *Metric, text string)     { editProm(m, func(p *PrometheusMetric) { p.Query = text }) }
func setCondition(m *Metric, text string) { m.SuccessCondition = text }
func setStart(m *Metric, text string) {
	editProm(m, func(p *PrometheusMetric) {
		p.RangeQuery = &PrometheusRangeQueryArgs{Start: text, End: "now()", Step: "1m"}
	})
}
func setAddress(m *Metric, text string) { editProm(m, func(p *PrometheusMetric) { p.Address = text }) }
func setHeader(m *Metric, text string) {
	editProm(m, func(p *PrometheusMetric) { p.Headers = []Header{{Key: "Authorization", Value: text}} })
}
func setCanary(m *Metric, text string) {
	m.Provider = MetricProvider{Judge: raw(&JudgeMetric{Canary: text, Baseline: "b", Lookback: "1h", Step: "1m"})}
}

func resolvedText(m *Metric) string {
	switch {
	case m.Provider.Judge != nil:
		var j JudgeMetric
		_ = json.Unmarshal(m.Provider.Judge, &j)
		return j.Canary
	case m.SuccessCondition != "":
		return m.SuccessCondition
	case prom(m.Provider).RangeQuery != nil:
		return prom(m.Provider).RangeQuery.Start
	case len(prom(m.Provider).Headers) > 0:
		return prom(m.Provider).Headers[0].Value
	case prom(m.Provider).Address != "":
		return prom(m.Provider).Address
	}
	return prom(m.Provider).Query
}

// TestResolveKeepsTheStructure tries to escape every position a value can
// be substituted into.
func TestResolveKeepsTheStructure(t *testing.T) {
	const query = "metrics[0].provider.prometheus.query"
	tests := []struct {
		name     string
		set      func(*Metric, string)
		text     string
		value    string
		freeText bool
		want     string
		// wantErr is a part of the message of the one error, on args.v
		// unless wantField says otherwise.
		wantErr, wantField string
	}{
		// A query, inside each kind of string.
		{name: "the exploit, inside double quotes", set: setQuery, text: `sum(rate(x{namespace="{{args.v}}"}[1m]))`, value: exploit,
			want: `sum(rate(x{namespace="failing\"}[1m])) * 0 + 1 or vector(1) #"}[1m]))`},
		{name: "the exploit, inside single quotes", set: setQuery, text: `sum(rate(x{namespace='{{args.v}}'}[1m]))`, value: `failing'}[1m])) or vector(1) #`,
			want: `sum(rate(x{namespace='failing\'}[1m])) or vector(1) #'}[1m]))`},
		{name: "the other quote is left alone", set: setQuery, text: `x{a='{{args.v}}', b="{{args.v}}"}`, value: `'"`,
			want: `x{a='\'"', b="'\""}`},
		{name: "a backslash that would escape the closing quote", set: setQuery, text: `x{a="{{args.v}}"}`, value: `\`, want: `x{a="\\"}`},
		{name: "a line break, which would end the string", set: setQuery, text: `x{a="{{args.v}}"} # n`, value: "a\nor vector(1)",
			want: `x{a="a\nor vector(1)"} # n`},
		{name: "control characters", set: setQuery, text: `x{a="{{args.v}}"}`, value: "\x00\x1b\r\t\x7f", want: `x{a="\x00\x1b\r\t\x7f"}`},
		{name: "text beyond ASCII as it is", set: setQuery, text: `x{a="{{args.v}}"}`, value: "é ✓ \u2028", want: "x{a=\"é ✓ \u2028\"}"},
		{name: "a raw string holds anything but a backtick", set: setQuery, text: "x{a=`{{args.v}}`}", value: `"\'`, want: "x{a=`\"\\'`}"},
		{name: "a backtick in a raw string", set: setQuery, text: "x{a=`{{args.v}}`}", value: "a`} or vector(1) #",
			wantErr: "a PromQL raw string cannot hold a backtick"},
		{name: "a tag right after a backslash", set: setQuery, text: `x{a="\{{args.v}}"}`, value: `"`,
			wantErr: "stands within an escape sequence", wantField: query},
		{name: "a tag among an escape's digits", set: setQuery, text: `x{a="\x4{{args.v}}"}`, value: `1`,
			wantErr: "stands within an escape sequence", wantField: query},
		{name: "a quote in a comment does not open a string", set: setQuery, text: "x # it's\n+ y{a=\"{{args.v}}\"}", value: `"`, want: "x # it's\n+ y{a=\"\\\"\"}"},
		{name: "a judge's query", set: setCanary, text: `x{a="{{args.v}}"}`, value: exploit, want: `x{a="failing\"}[1m])) * 0 + 1 or vector(1) #"}`},

		// A query, outside strings.
		{name: "a duration", set: setQuery, text: `rate(x[{{args.v}}])`, value: "1h30m", want: `rate(x[1h30m])`},
		{name: "a number", set: setQuery, text: `histogram_quantile({{args.v}}, x)`, value: "0.99", want: `histogram_quantile(0.99, x)`},
		{name: "a name", set: setQuery, text: `sum by ({{args.v}}) ({{args.v}}_total)`, value: "job:http_requests", want: `sum by (job:http_requests) (job:http_requests_total)`},
		{name: "a negative number where an operand starts", set: setQuery, text: `x > {{args.v}}`, value: "-1e-3", want: `x > -1e-3`},
		{name: "the exploit outside quotes", set: setQuery, text: `sum(rate(x{namespace="a"}[{{args.v}}]))`, value: `1m])) * 0 + 1 or vector(1) #`,
			wantErr: "outside a string literal: there a value must be a number (0.99, 1e3), a duration (5m, 1h30m) or a metric or label name"},
		{name: "a keyword", set: setQuery, text: `x {{args.v}} y`, value: "OR", wantErr: "the value is a PromQL keyword"},
		{name: "a keyword by joining", set: setQuery, text: `x o{{args.v}} y`, value: "r", wantErr: `would make the PromQL keyword "or"`},
		{name: "a sign after a name", set: setQuery, text: `x{{args.v}}`, value: "-1", wantErr: "accepted there only as a whole operand"},
		{name: "a sign before ^", set: setQuery, text: `{{args.v}} ^ 2`, value: "-1", wantErr: "accepted there only as a whole operand"},
		{name: "an exponent's sign joined to a name", set: setQuery, text: `x > y{{args.v}}`, value: "1e-3", wantErr: "accepted there only as a whole operand"},
		{name: "an empty value", set: setQuery, text: `x > {{args.v}}`, value: "", wantErr: "the value is empty"},
		{name: "a comment cannot be left", set: setQuery, text: `x # {{args.v}}`, value: "a\nor vector(1)", wantErr: "outside a string literal"},
		{name: "a label value outside quotes", set: setQuery, text: `x{namespace={{args.v}}}`, value: `"a"} or vector(1`, wantErr: "outside a string literal"},
		{name: "freeText is substituted as it is", set: setQuery, text: `x{ {{args.v}} }`, value: `a="b", c=~"d.*"`, freeText: true, want: `x{ a="b", c=~"d.*" }`},
		{name: "freeText even inside quotes", set: setQuery, text: `x{a="{{args.v}}"}`, value: `b\.c`, freeText: true, want: `x{a="b\.c"}`},

		// A condition.
		{name: "a condition's number", set: setCondition, text: `result[0] >= {{args.v}}`, value: "0.95", want: `result[0] >= 0.95`},
		{name: "a condition's negative number", set: setCondition, text: `result[0] >= {{args.v}} && true`, value: "-5", want: `result[0] >= -5 && true`},
		{name: "a condition's boolean", set: setCondition, text: `{{args.v}} || result[0] > 1`, value: "false", want: `false || result[0] > 1`},
		{name: "a condition's string", set: setCondition, text: `result.classification == "{{args.v}}"`, value: `x" || true || "`,
			want: `result.classification == "x\" || true || \""`},
		{name: "a condition's single-quoted string", set: setCondition, text: `'{{args.v}}' == 'x'`, value: `' || true || '`, want: `'\' || true || \'' == 'x'`},
		{name: "a condition's raw string doubles a backtick", set: setCondition, text: "`{{args.v}}` == 'x'", value: "` || true || `", want: "``` || true || ``` == 'x'"},
		{name: "a condition's variable", set: setCondition, text: `result >= {{args.v}}`, value: "result", wantErr: "there a value must be a number (0.99, 1e3) or true or false"},
		{name: "a condition's expression", set: setCondition, text: `result[0] >= {{args.v}}`, value: "0 || true", wantErr: "outside a string literal"},
		{name: "a condition's name joined", set: setCondition, text: `result{{args.v}} > 0`, value: "1", wantErr: "the tag is joined to a name or a number"},
		{name: "a condition's comment cannot be left", set: setCondition, text: "true // {{args.v}}", value: "x\n|| true", wantErr: "outside a string literal"},
		{name: "a condition's block comment cannot be left", set: setCondition, text: "true /* {{args.v}} */", value: "*/ || true /*", wantErr: "outside a string literal"},
		{name: "a range query's start", set: setStart, text: `now() - duration("{{args.v}}")`, value: `5m") - duration("24h`, want: `now() - duration("5m\") - duration(\"24h")`},

		// Fields whose text is a value.
		{name: "an address", set: setAddress, text: `{{args.v}}`, value: "http://prometheus:9090", want: "http://prometheus:9090"},
		{name: "a header", set: setHeader, text: `Bearer {{args.v}}`, value: `a "b" c`, want: `Bearer a "b" c`},
	}
	for _, tt := range tests {
		s := oneArg(tt.set, tt.text, tt.freeText)
		got, errs := resolveArgs(s, map[string]string{"v": tt.value})
		if tt.wantErr != "" {
			field := tt.wantField
			if field == "" {
				field = "args.v"
			}
			if len(errs) != 1 || errs[0].Field != field || !strings.Contains(errs[0].Message, tt.wantErr) {
				t.Errorf("%s: got %v, want one error on %s with %q", tt.name, errs, field, tt.wantErr)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%s: %s", tt.name, formatErrors(errs))
			continue
		}
		if text := resolvedText(&got.Metrics[0]); text != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, text, tt.want)
		}
	}
}

// The message of a refused value says where it would go, and how to let
// it through: an Argo document's differs, as freeText is not Argo's.
func TestResolveRefusalMessages(t *testing.T) {
	doc := mustParse(t, `
args: [{name: namespace}, {name: api-token}]
metrics:
- name: m
  provider: {prometheus: {query: "x > {{args.namespace}} or y > {{args.api-token}}"}}
`)
	_, errs := resolveArgs(&doc.Spec, map[string]string{"namespace": `a"b`, "api-token": "s3cr3t value"})
	want := []api.FieldError{
		fe("args.namespace", `the value of argument "namespace" ("a\"b") cannot be substituted into metrics[0].provider.prometheus.query outside a string literal: `+
			`there a value must be a number (0.99, 1e3), a duration (5m, 1h30m) or a metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*, not a keyword such as or), `+
			`one token that cannot change the query's structure; put the tag inside quotes, where any value is escaped, or mark the argument freeText: true to substitute it as it is`),
		fe("args.api-token", `the value of argument "api-token" cannot be substituted into metrics[0].provider.prometheus.query outside a string literal: `+
			`there a value must be a number (0.99, 1e3), a duration (5m, 1h30m) or a metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*, not a keyword such as or), `+
			`one token that cannot change the query's structure; put the tag inside quotes, where any value is escaped, or mark the argument freeText: true to substitute it as it is`),
	}
	checkErrors(t, "a bare spec", errs, want)

	// The spec's own value is refused on its field, and an Argo document
	// is told of --verbatim-args.
	argo := mustParse(t, `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: t}
spec:
  args: [{name: w, value: "5m] or vector(1"}]
  metrics:
  - name: m
    provider: {prometheus: {query: "rate(x[{{args.w}}])"}}
`)
	_, errs = argo.Spec.Resolve(nil, ResolveOptions{Argo: true, Conditions: Expr, Languages: testLanguages})
	if len(errs) != 1 || errs[0].Field != "args[0].value" || !strings.HasSuffix(errs[0].Message,
		"put the tag inside quotes, where any value is escaped, or make the document a canaryd template (apiVersion canaryd.io/v1alpha1) "+
			"and mark the argument freeText: true to substitute it as it is; an argoproj.io/v1alpha1 document has its values substituted as they are, "+
			"as Argo Rollouts does, only where canaryd runs with --verbatim-args") {
		t.Errorf("an Argo document: %v", errs)
	}
	// With --verbatim-args, it runs as Argo would run it; a bare spec does
	// not.
	res, errs := argo.Spec.Resolve(nil, ResolveOptions{Argo: true, VerbatimArgs: true, Conditions: Expr, Languages: testLanguages})
	if len(errs) > 0 || prom(res.Spec.Metrics[0].Provider).Query != "rate(x[5m] or vector(1])" {
		t.Errorf("an Argo document with verbatim arguments: %v", errs)
	}
	bare := mustParse(t, "args: [{name: w, value: \"5m] or vector(1\"}]\nmetrics: [{name: m, provider: {prometheus: {query: \"rate(x[{{args.w}}])\"}}}]\n")
	if _, errs := bare.Spec.Resolve(nil, ResolveOptions{VerbatimArgs: true, Conditions: Expr, Languages: testLanguages}); len(errs) != 1 || errs[0].Field != "args[0].value" {
		t.Errorf("a bare spec with verbatim arguments: %v, want its value refused", errs)
	}
}

// freeText is canaryd's extension: an Argo document may not use it.
func TestParseRefusesFreeTextInAnArgoDocument(t *testing.T) {
	const body = "kind: AnalysisTemplate\nmetadata: {name: t}\nspec:\n  args: [{name: s, freeText: true}]\n  metrics: [{name: m, provider: {prometheus: {query: up}}}]\n"
	_, errs := Parse([]byte("apiVersion: argoproj.io/v1alpha1\n" + body))
	if len(errs) != 1 || errs[0].Field != "args[0].freeText" || !isExtensionError(errs[0]) {
		t.Errorf("argoproj.io: %v", errs)
	}
	doc, errs := Parse([]byte("apiVersion: canaryd.io/v1alpha1\n" + body))
	if len(errs) > 0 || !doc.Spec.Args[0].FreeText {
		t.Errorf("canaryd.io: %v", errs)
	}
}

// FuzzQueryArgument substitutes any value at a tag between any two texts of
// a query. Whenever canaryd accepts the value, the query reads as the
// template with a neutral value at the tag (an empty string, or 0) reads:
// the same tokens, but for the one the value is in; a string there holds
// exactly the value.
func FuzzQueryArgument(f *testing.F) {
	for _, seed := range [][3]string{
		{`sum(rate(x{namespace="`, `"}[1m]))`, exploit},
		{`x{a='`, `'}`, `'"\`},
		{"x{a=`", "`}", "a`b"},
		{`rate(x[`, `])`, "5m"},
		{`x > `, ``, "-1"},
		{`metric_`, `_total`, "http"},
		{`x # `, "\n+ y", "a\nb"},
		{`x{a="\`, `"}`, `"`},
		{`x{a="\x4`, `"}`, "1"},
		{`x o`, ` y`, "r"},
		{`x > `, ` ^ 2`, "-1"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, prefix, suffix, value string) {
		if strings.Contains(prefix+suffix, "{{") || strings.Contains(prefix+suffix, "}}") || !utf8.ValidString(prefix+suffix+value) ||
			strings.HasSuffix(prefix, "{") || strings.HasPrefix(suffix, "}") || strings.Contains(prefix+suffix, marker) {
			return // tags are the template's own business
		}
		s := oneArg(setQuery, prefix+"{{args.v}}"+suffix, false)
		got, errs := resolveArgs(s, map[string]string{"v": value})
		if len(errs) > 0 {
			return
		}
		r := prom(got.Metrics[0].Provider).Query
		tags, _ := scanTags(prefix+"{{args.v}}"+suffix, map[string]*argValue{"v": {}})
		findContexts(PromQL, prefix+"{{args.v}}"+suffix, tags)
		quoted := tags[0].ctx.Quote != 0

		// A neutral value of the same kind as the value: a string's
		// content, a number, a duration or a name.
		neutral := ""
		if !quoted {
			sign, body := "", value
			if value != "" && (value[0] == '-' || value[0] == '+') {
				sign, body = value[:1], value[1:]
			}
			alone, err := lexPromQL(body)
			if err != nil || len(alone) != 1 {
				t.Fatalf("%q accepted outside quotes: it reads as %v, %v", value, alone, err)
			}
			neutral = sign + map[promTokenKind]string{tokNumber: "0", tokDuration: "0s", tokIdentifier: "x"}[alone[0].kind]
		}
		want, err := lexPromQL(prefix + neutral + suffix)
		if err != nil {
			return // the template does not lex, whatever the value
		}
		gotTokens, err := lexPromQL(r)
		if err != nil {
			if quoted {
				t.Fatalf("%q escaped into %q does not lex: %v", value, r, err)
			}
			return // a name joined to the text may make it invalid, never another query
		}
		if len(gotTokens) != len(want) {
			t.Fatalf("%q in %q: %d tokens, want %d:\n%v\n%v", value, prefix+"{{args.v}}"+suffix, len(gotTokens), len(want), gotTokens, want)
		}
		var marked []promToken
		if quoted {
			if marked, err = lexPromQL(prefix + marker + suffix); err != nil || len(marked) != len(want) {
				t.Fatalf("the template with a marker at the tag reads otherwise: %v", err)
			}
		}
		start, end := len(prefix), len(r)-len(suffix)
		for i, g := range gotTokens {
			w := want[i]
			overlaps := g.start < end && g.end > start || (start == end && g.start <= start && start < g.end)
			switch {
			case quoted && w.kind == tokString && strings.Contains(marked[i].value, marker):
				if g.kind != tokString || g.value != strings.Replace(marked[i].value, marker, value, 1) {
					t.Fatalf("%q in %q: the string reads %q, want the value in it", value, prefix+"{{args.v}}"+suffix, g.value)
				}
			case !quoted && overlaps:
				if g.kind != tokNumber && g.kind != tokDuration && g.kind != tokIdentifier && !(g.kind == tokOperator && g.start == start && (g.text == "-" || g.text == "+")) {
					t.Fatalf("%q in %q: the value reads as %+v, not one operand", value, prefix+"{{args.v}}"+suffix, g)
				}
			case g.kind != w.kind || g.text != w.text || g.value != w.value:
				t.Fatalf("%q in %q changed the token %+v into %+v:\n%s", value, prefix+"{{args.v}}"+suffix, w, g, r)
			}
		}
	})
}

// marker stands for a value in a template, to find where the value goes in
// a string: a private-use character, which no quote or escape is.
const marker = "\uE000"

// FuzzConditionArgument substitutes any value at a tag between any two
// texts of a condition. Whenever canaryd accepts the value, expr parses the
// condition to the syntax tree of the template with a neutral value at the
// tag (an empty string, or 0): the same nodes, the value one literal, and
// a string there holding exactly the value.
func FuzzConditionArgument(f *testing.F) {
	for _, seed := range [][3]string{
		{`result.classification == "`, `"`, `x" || true || "`},
		{`'`, `' == 'x'`, `' || true || '`},
		{"`", "` == 'x'", "` || true || `"},
		{`result[0] >= `, ``, "0.95"},
		{`result[0] >= `, ` && true`, "-5"},
		{`result >= `, ``, "result"},
		{`true // `, "\n && false", "x\n|| true"},
		{`true /* `, ` */`, "*/ || true /*"},
		{`-`, ` > 0`, "-1"},
		{`"\u{4`, `"`, "1}"},
		{`result`, ` > 0`, "1"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, prefix, suffix, value string) {
		if strings.Contains(prefix+suffix, "{{") || strings.Contains(prefix+suffix, "}}") || !utf8.ValidString(prefix+suffix+value) ||
			strings.HasSuffix(prefix, "{") || strings.HasPrefix(suffix, "}") || strings.Contains(prefix+suffix, marker) || len(prefix+suffix) > 1000 {
			return
		}
		template := prefix + "{{args.v}}" + suffix
		s := oneArg(setCondition, template, false)
		got, errs := resolveArgs(s, map[string]string{"v": value})
		if len(errs) > 0 || got.Metrics[0].SuccessCondition == "" {
			return
		}
		r := got.Metrics[0].SuccessCondition
		tags, _ := scanTags(template, map[string]*argValue{"v": {}})
		findContexts(Expr, template, tags)
		quoted := tags[0].ctx.Quote != 0
		neutral := "0"
		if value != "" && (value[0] == '-' || value[0] == '+') {
			neutral = value[:1] + "0"
		}
		if quoted {
			neutral = ""
		}
		want, err := parser.Parse(prefix + neutral + suffix)
		if err != nil {
			return // the template does not parse, whatever the value
		}
		tree, err := parser.Parse(r)
		if err != nil {
			t.Fatalf("%q in %q: %q does not parse: %v", value, template, r, err)
		}
		gotNodes, wantNodes := astNodes(tree.Node), astNodes(want.Node)
		if len(gotNodes) != len(wantNodes) {
			t.Fatalf("%q in %q: %q parses to\n%v\nwant\n%v", value, template, r, describeAll(gotNodes), describeAll(wantNodes))
		}
		var markedNodes []ast.Node
		if quoted {
			marked, err := parser.Parse(prefix + marker + suffix)
			if err != nil {
				t.Fatalf("%q: the template with a marker in the string does not parse: %v", template, err)
			}
			markedNodes = astNodes(marked.Node)
		}
		for i := range gotNodes {
			g, w := gotNodes[i], wantNodes[i]
			if describe(g) != describe(w) {
				t.Fatalf("%q in %q: %q parses to\n%v\nwant\n%v", value, template, r, describeAll(gotNodes), describeAll(wantNodes))
			}
			gs, ok := g.(*ast.StringNode)
			if !ok {
				continue
			}
			expected := w.(*ast.StringNode).Value
			if quoted {
				expected = strings.Replace(markedNodes[i].(*ast.StringNode).Value, marker, value, 1)
			}
			if gs.Value != expected {
				t.Fatalf("%q in %q: a string reads %q, want %q", value, template, gs.Value, expected)
			}
		}
	})
}

// astNodes lists the nodes of a syntax tree, children first.
func astNodes(root ast.Node) []ast.Node {
	var out []ast.Node
	ast.Walk(&root, visitor(func(n *ast.Node) { out = append(out, *n) }))
	return out
}

type visitor func(*ast.Node)

func (v visitor) Visit(n *ast.Node) { v(n) }

// describe names a node by what it is and, for all but literals, what it
// says: the literals' values are what a value may change.
func describe(n ast.Node) string {
	switch x := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return "literal"
	case *ast.StringNode:
		return "string"
	case *ast.IdentifierNode:
		return "identifier " + x.Value
	case *ast.UnaryNode:
		return "unary " + x.Operator
	case *ast.BinaryNode:
		return "binary " + x.Operator
	case *ast.BuiltinNode:
		return "builtin " + x.Name
	case *ast.MemberNode:
		return fmt.Sprintf("member %v %v", x.Optional, x.Method)
	case *ast.PointerNode:
		return "pointer " + x.Name
	case *ast.VariableDeclaratorNode:
		return "let " + x.Name
	}
	return fmt.Sprintf("%T", n)
}

func describeAll(nodes []ast.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = describe(n)
	}
	return out
}

// TestConditionsNeedALanguage: without the conditions' language
// (ResolveOptions.Conditions) no argument is substituted into a condition,
// as it is or by another language's rules; a condition without a tag
// resolves all the same.
func TestConditionsNeedALanguage(t *testing.T) {
	s := oneArg(setCondition, `result[0] >= {{args.v}}`, false)
	_, errs := s.Resolve(map[string]string{"v": "1"}, ResolveOptions{Languages: testLanguages})
	if len(errs) != 1 || errs[0].Field != "metrics[0].successCondition" || !strings.Contains(errs[0].Message, "no language is declared for the conditions") {
		t.Errorf("got %v", errs)
	}
	s = oneArg(setCondition, `result[0] >= 1`, false)
	if _, errs := s.Resolve(map[string]string{"v": "1"}, ResolveOptions{Languages: testLanguages}); len(errs) != 0 {
		t.Errorf("without a tag: %v", errs)
	}
}
