package cloudwatch

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// MetricMath is the language of a query's expression, CloudWatch's Metric
// Math, as argument substitution reads it (lang.Language):
// "errors / requests * 100", "SEARCH('{AWS/ApplicationELB,LoadBalancer} MetricName=\"HTTPCode_Target_5XX_Count\" {{args.lb}}', 'Sum', 60)".
//
//   - Outside a string literal a value must be one token: a number or a
//     name (a query's id, a function's name), so that it cannot add an
//     operand, call a function or change the expression around it.
//   - Inside a string literal ('…' or "…", a SEARCH's search expression)
//     a value must be one word of letters, digits, "_", "-", ".", "/" and
//     ":" (the characters of CloudWatch's namespaces, metric names and
//     dimension values): a quote would end the literal, and a space, a
//     parenthesis, "=", a brace or a comma would add a term to the search
//     or change one. Nothing is escaped: the search expression within a
//     literal has no escape that keeps every value one term.
//
// Dimension values, metric names and namespaces are values: they go into
// GetMetricData's fields as they are and cannot change a query.
type MetricMath struct{}

// Name names the language in messages.
func (MetricMath) Name() string { return "CloudWatch Metric Math" }

// Noun: an expression is a query, bounded by --max-query-length.
func (MetricMath) Noun() string { return "query" }

// Lex reads the string literals of text (single and double quoted, a
// backslash escaping the next character) and sets each tag's context.
func (MetricMath) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	var quote byte
	ti := 0
	for i := 0; i < len(s) && ti < len(tags); i++ {
		if i == tags[ti].Start {
			ctx[ti] = tagContext(s, tags[ti], quote)
			i = tags[ti].End - 1
			ti++
			continue
		}
		c := s[i]
		switch {
		case quote != 0 && c == '\\':
			if i+1 == tags[ti].Start {
				ctx[ti] = tagContext(s, tags[ti], quote)
				ctx[ti].InEscape = true
				i = tags[ti].End - 1
				ti++
				continue
			}
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		}
	}
}

// tagContext is where the tag t stands: in the literal of quote, or
// outside literals.
func tagContext(s string, t lang.Span, quote byte) lang.Context {
	if quote != 0 {
		return lang.Context{Quote: quote}
	}
	prev := byte(0)
	if before := strings.TrimRight(s[:t.Start], " \t\n\r\f\v"); before != "" {
		prev = before[len(before)-1]
	}
	return lang.Context{
		Operand: lang.StartsOperand(prev) && lang.EndsOperand(s[t.End:]),
		Before:  lang.WordBefore(s[:t.Start], isWordByte),
		After:   lang.WordAfter(s[t.End:], isWordByte),
	}
}

var (
	literalWord = regexp.MustCompile(`^[\p{L}\p{N}_.:/-]+$`)
	token       = regexp.MustCompile(`^(?:[a-zA-Z_][a-zA-Z0-9_]*|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)$`)
)

const literalRule = "in a CloudWatch Metric Math string a value must be one word of letters, digits, \"_\", \"-\", \".\", \"/\" and \":\"; " +
	"a quote would end the string, and a space, a parenthesis, \"=\", a brace or a comma would add a term to a search or change one"

// EscapedLength: a value goes into a string literal unchanged when it is
// one word (see MetricMath), and is refused otherwise.
func (MetricMath) EscapedLength(v string, _ byte) (int, string) {
	switch {
	case v == "":
		return 0, "the value is empty, which would leave a term out of the string"
	case !literalWord.MatchString(v):
		return 0, literalRule
	}
	return len(v), ""
}

// Escape returns v: EscapedLength lets through only values that need no
// escaping.
func (MetricMath) Escape(v string, _ byte) string { return v }

// Plain reports why v cannot stand outside a string literal: it must be a
// number or a name, and with the word it is joined to, one token still.
func (MetricMath) Plain(v string, ctx lang.Context) string {
	switch {
	case v == "":
		return "the value is empty, which would leave an operand out of the expression"
	case !token.MatchString(v):
		return "in a CloudWatch Metric Math expression a value must be a number (100, 0.5) or a name ([a-zA-Z_][a-zA-Z0-9_]*: a query's id), one token that cannot change the expression's structure"
	case ctx.Joined() && !token.MatchString(ctx.Before+v+ctx.After):
		return "the tag is joined to a name or a number of the expression (" + lang.JoinedText(ctx) + "), and with it the value would not make one token; separate the tag from it"
	}
	return ""
}

// Unknown is a placeholder: one name of the expression.
func (MetricMath) Unknown(name string) string { return lang.Placeholder(name) }

// Check leaves the expression's syntax to CloudWatch, which answers one it
// cannot parse with a ValidationError (an Error measurement).
func (MetricMath) Check(string) string { return "" }

// isWordByte reports whether c continues a name or a number.
func isWordByte(c byte) bool {
	return c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
