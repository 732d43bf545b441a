// Package promql is PromQL as argument substitution reads it (lang.Language):
// its lexer as far as string literals and comments go, its escaping, the
// plain literals a value may be outside string literals, and Prometheus'
// own parser to check a resolved query. The Prometheus provider and the
// judge declare their query fields in it.
package promql

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Language is PromQL. Its zero value is ready to use.
type Language struct{}

// Name names the language in messages.
func (Language) Name() string { return "PromQL" }

// Noun is what a PromQL text is: a query, bounded by --max-query-length.
func (Language) Noun() string { return "query" }

// Lex reads text as PromQL's lexer does as far as string literals and
// comments go: "…" and '…' (with backslash escapes), `…` (raw, no
// escapes) and # comments to the end of the line.
func (Language) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	const (
		code = iota
		inString
		comment
	)
	state := code
	var quote, prev byte // prev: the last byte of code that is not a space
	escape := 0          // the bytes of the current escape sequence still to come
	next := 0
	for i := 0; i < len(s); i++ {
		if next < len(tags) && i == tags[next].Start {
			t := tags[next]
			switch state {
			case inString:
				ctx[next] = lang.Context{Quote: quote, InEscape: escape > 0}
				escape = 0
			case code:
				ctx[next] = lang.Context{
					Operand: lang.StartsOperand(prev) && lang.EndsOperand(s[t.End:]),
					Before:  lang.WordBefore(s[:t.Start], isWordByte),
					After:   lang.WordAfter(s[t.End:], isWordByte),
				}
				prev = '0' // the value is an operand
			default:
				ctx[next] = lang.Context{} // in a comment: held to the rules of code
			}
			i = t.End - 1
			next++
			continue
		}
		c := s[i]
		switch state {
		case code:
			switch c {
			case '"', '\'', '`':
				state, quote = inString, c
			case '#':
				state = comment
			}
			if !lang.IsSpace(c) {
				prev = c
			}
		case inString:
			switch {
			case escape > 0:
				escape = lang.EscapeLength(c, escape)
			case c == '\\' && quote != '`':
				escape = 1
			case c == quote:
				state, prev = code, c
			case c == '\n' && quote != '`':
				// The lexer refuses a line break in a quoted string: the
				// text is invalid before the tag whatever the value.
				state, prev = code, c
			}
		case comment:
			if c == '\n' || c == '\r' {
				state = code
			}
		}
	}
}

// isWordByte reports whether c can be part of a PromQL name or number
// ([a-zA-Z0-9_:], and a number's dot), which a value next to it would
// join.
func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// EscapedLength is the length of v in a string literal of the quote. A
// `…` string has no escapes and cannot hold a backtick.
func (Language) EscapedLength(v string, quote byte) (int, string) {
	if quote == '`' {
		if strings.Contains(v, "`") {
			return 0, "a PromQL raw string cannot hold a backtick; write the string with \"…\" in the template, where any value is escaped"
		}
		return len(v), ""
	}
	return lang.QuotedLength(v, quote), ""
}

// Escape escapes v for a string literal of the quote.
func (Language) Escape(v string, quote byte) string {
	if quote == '`' {
		return v
	}
	return lang.EscapeQuoted(v, quote)
}

// Unknown is a placeholder: one PromQL name.
func (Language) Unknown(name string) string { return lang.Placeholder(name) }

// The plain literals of PromQL: a number (decimal, with an exponent,
// hexadecimal, Inf or NaN), a duration, or a metric or label name.
var (
	number   = regexp.MustCompile(`^(?:0[xX][0-9a-fA-F]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)$`)
	duration = regexp.MustCompile(`^(?:[0-9]+(?:ms|[smhdwy]))+$`)
	name     = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// keywords are the PromQL words that are operators or modifiers, not
// names: a value must not join or modify the expressions around it.
// PromQL reads them in any case.
var keywords = []string{"and", "or", "unless", "atan2", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}

// plainLiterals describes the plain literals, for messages.
const plainLiterals = "a number (0.99, 1e3), a duration (5m, 1h30m) or a metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*, not a keyword such as or)"

// Plain reports why v cannot stand outside a string literal at ctx: it
// must be one number, duration or name that is not a keyword; signed
// only as a whole operand; and joined to a name only to make one name.
func (Language) Plain(v string, ctx lang.Context) string {
	if v == "" {
		return "the value is empty, which would leave an operand out"
	}
	body, signed := v, false
	if v[0] == '-' || v[0] == '+' {
		body, signed = v[1:], true
	}
	isNumber := number.MatchString(body) || duration.MatchString(body)
	isName := !signed && name.MatchString(body)
	if isName && isKeyword(body) {
		return "the value is a PromQL keyword (" + strings.Join(keywords, ", ") + "), which would join or modify the expressions around it"
	}
	switch {
	case !isNumber && !isName:
		return "there a value must be " + plainLiterals + ", one token that cannot change the query's structure"
	case strings.ContainsAny(v, "+-") && (!ctx.Operand || ctx.Joined()):
		return "a value with a sign (-1, 1e-3) is accepted there only as a whole operand: after an operator, an opening bracket or a comma, " +
			"and before a closing bracket, a comma, a comparison or a logical operator"
	case ctx.Joined():
		// A name may complete a name (metric_{{args.suffix}}): the three
		// must make one name, which the keywords are not.
		word := ctx.Before + v + ctx.After
		if !name.MatchString(word) {
			return "the tag is joined to a name or a number of the text (" + lang.JoinedText(ctx) +
				"), and with it the value would not make one name; separate the tag from it"
		}
		if len(word) <= len("group_right") && isKeyword(word) {
			return "with the name the tag is joined to, the value would make the PromQL keyword " + strconv.Quote(word)
		}
	}
	return ""
}

func isKeyword(s string) bool {
	for _, k := range keywords {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}
