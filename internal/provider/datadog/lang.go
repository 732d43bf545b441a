package datadog

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Query is Datadog's metric query syntax as argument substitution reads it
// (lang.Language): "avg:trace.http.request.errors{service:{{args.service}},env:prod}.as_count()".
// It has no string literals, so a value goes into a query as it is, and
// must be one plain word that stays within a tag value, a metric name or
// a function's argument: letters, digits, "_", "-", ".", "/" and ":"
// (Datadog's tag characters). A value holding anything else ("}", ",",
// "{", "(", ")", "!", "*", a space, a quote) is refused: it would end the
// tag value, add a filter, widen one or change the query around it.
type Query struct{}

// Formula is the language of a v2 formula ("a / b * 100"): a value there
// is a number or the name of a query.
type Formula struct{}

// Name names the language in messages.
func (Query) Name() string { return "Datadog query" }

// Name names the language in messages.
func (Formula) Name() string { return "Datadog formula" }

// Noun: a query, bounded by --max-query-length.
func (Query) Noun() string { return "query" }

// Noun: a formula is an expression, bounded as any other field.
func (Formula) Noun() string { return "expression" }

// Lex: every tag stands in code (Datadog's queries and formulas have no
// string literal), joined to the word characters around it.
func (Query) Lex(s string, tags []lang.Span, ctx []lang.Context) { lex(s, tags, ctx, isTagByte) }

// Lex: see Query.Lex; a formula's words are names and numbers.
func (Formula) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	lex(s, tags, ctx, isFormulaByte)
}

func lex(s string, tags []lang.Span, ctx []lang.Context, word func(byte) bool) {
	for i, t := range tags {
		prev := byte(0)
		if before := strings.TrimRight(s[:t.Start], " \t\n\r\f\v"); before != "" {
			prev = before[len(before)-1]
		}
		ctx[i] = lang.Context{
			Operand: lang.StartsOperand(prev) && lang.EndsOperand(s[t.End:]),
			Before:  lang.WordBefore(s[:t.Start], word),
			After:   lang.WordAfter(s[t.End:], word),
		}
	}
}

// EscapedLength: there are no string literals to escape into.
func (Query) EscapedLength(string, byte) (int, string) { return 0, noStrings }

// EscapedLength: see Query.EscapedLength.
func (Formula) EscapedLength(string, byte) (int, string) { return 0, noStrings }

const noStrings = "Datadog's query syntax has no string literal to escape a value into"

// Escape is never called (EscapedLength refuses every value).
func (Query) Escape(v string, _ byte) string { return v }

// Escape is never called (EscapedLength refuses every value).
func (Formula) Escape(v string, _ byte) string { return v }

// Unknown is a placeholder: one word of either language.
func (Query) Unknown(name string) string { return lang.Placeholder(name) }

// Unknown is a placeholder: a query's name.
func (Formula) Unknown(name string) string { return lang.Placeholder(name) }

// Check leaves a query's syntax to Datadog, which answers a query it
// cannot parse with an error (an Error measurement); canaryd has no parser
// of its own to hold it to.
func (Query) Check(string) string { return "" }

// Check leaves a formula's syntax to Datadog (see Query.Check).
func (Formula) Check(string) string { return "" }

var (
	tagValue    = regexp.MustCompile(`^[\p{L}\p{N}_.:/-]+$`)
	formulaWord = regexp.MustCompile(`^(?:[a-zA-Z_][a-zA-Z0-9_]*|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)$`)
)

// Plain reports why v cannot stand in a query: it must be one word of
// Datadog's tag characters, and with the word it is joined to, one word
// still (which it always is).
func (Query) Plain(v string, _ lang.Context) string {
	switch {
	case v == "":
		return "the value is empty, which would leave a tag value or a name out of the query"
	case !tagValue.MatchString(v):
		return "in a Datadog query a value must be one word of letters, digits, \"_\", \"-\", \".\", \"/\" and \":\" (Datadog's tag characters); " +
			"any other character (\"}\", \",\", \"{\", \"(\", \"!\", \"*\", a space, a quote) would end the tag value or change the query around it"
	}
	return ""
}

// Plain reports why v cannot stand in a formula: it must be a number or a
// query's name, unsigned, and not joined to another word unless the two
// make one name.
func (Formula) Plain(v string, ctx lang.Context) string {
	switch {
	case v == "":
		return "the value is empty, which would leave an operand out of the formula"
	case !formulaWord.MatchString(v):
		return "in a Datadog formula a value must be a number (100, 0.5) or a query's name ([a-zA-Z_][a-zA-Z0-9_]*), one token that cannot change the formula's structure"
	case ctx.Joined() && !formulaWord.MatchString(ctx.Before+v+ctx.After):
		return "the tag is joined to a name or a number of the formula (" + lang.JoinedText(ctx) + "), and with it the value would not make one token; separate the tag from it"
	}
	return ""
}

// isTagByte reports whether c continues a word of a query: a tag's
// characters (non-ASCII letters included).
func isTagByte(c byte) bool {
	return c >= 0x80 || c == '_' || c == '.' || c == ':' || c == '/' || c == '-' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// isFormulaByte reports whether c continues a name or a number of a
// formula.
func isFormulaByte(c byte) bool {
	return c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
