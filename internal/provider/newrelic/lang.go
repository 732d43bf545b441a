package newrelic

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// NRQL is New Relic's query language as argument substitution reads it
// (lang.Language): '…' strings (and "…"), in which a backslash escapes
// the next character; `…` names of attributes, without escapes; and
// comments, -- and // to the end of the line and /* … */.
//
// In a string a value is escaped so that the string holds exactly it: a
// backslash and the quote with a backslash; a control character, which
// NRQL has no escape for, is refused. In a `…` name a value must hold no
// backtick and no control character. Outside them a value must be one
// token that cannot change the query: a number, or an attribute's name
// that is not a keyword (WHERE, FACET, SINCE, …).
type NRQL struct{}

// Name names the language in messages.
func (NRQL) Name() string { return "NRQL" }

// Noun: a query, bounded by --max-query-length.
func (NRQL) Noun() string { return "query" }

// Lex reads text as NRQL's lexer does as far as strings, quoted names and
// comments go.
func (NRQL) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	const (
		code = iota
		inString
		lineComment
		blockComment
	)
	state := code
	var quote, prev byte
	escape := false
	next := 0
	for i := 0; i < len(s); i++ {
		if next < len(tags) && i == tags[next].Start {
			t := tags[next]
			switch state {
			case inString:
				ctx[next] = lang.Context{Quote: quote, InEscape: escape}
				escape = false
			case code:
				ctx[next] = lang.Context{
					Operand: lang.StartsOperand(prev) && lang.EndsOperand(s[t.End:]),
					Before:  lang.WordBefore(s[:t.Start], isWordByte),
					After:   lang.WordAfter(s[t.End:], isWordByte),
				}
				prev = '0'
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
			switch {
			case c == '\'' || c == '"' || c == '`':
				state, quote = inString, c
			case c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '/':
				state = lineComment
				i++
			case c == '/' && i+1 < len(s) && s[i+1] == '*':
				state = blockComment
				i++
			}
			if !lang.IsSpace(c) {
				prev = c
			}
		case inString:
			switch {
			case escape:
				escape = false
			case c == '\\' && quote != '`':
				escape = true
			case c == quote:
				state, prev = code, c
			}
		case lineComment:
			if c == '\n' || c == '\r' {
				state = code
			}
		case blockComment:
			if c == '*' && i+1 < len(s) && s[i+1] == '/' {
				state = code
				i++
			}
		}
	}
}

// isWordByte reports whether c continues an NRQL name or number, which a
// value next to it would join.
func isWordByte(c byte) bool {
	return c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// EscapedLength is the length of v escaped for a string of the quote
// (Escape); a value with a control character is refused, and in a `…`
// name one with a backtick.
func (NRQL) EscapedLength(v string, quote byte) (int, string) {
	n := len(v)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c < ' ' || c == 0x7f:
			return 0, "NRQL has no escape for a control character such as a line break"
		case quote == '`' && c == '`':
			return 0, "a NRQL `…` name cannot hold a backtick"
		case quote != '`' && (c == '\\' || c == quote):
			n++
		}
	}
	return n, ""
}

// Escape escapes v for a string of the quote, so that it holds exactly v.
func (NRQL) Escape(v string, quote byte) string {
	if quote == '`' {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 4)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\\' || c == quote {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Unknown is a placeholder: one NRQL name.
func (NRQL) Unknown(name string) string { return lang.Placeholder(name) }

// Check leaves the query's syntax to New Relic, which answers a query it
// cannot parse with an error (an Error measurement): NRQL's parser is not
// public.
func (NRQL) Check(string) string { return "" }

// The plain literals of NRQL: a number, an attribute's name.
var (
	nrqlNumber = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
	nrqlName   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.]*$`)
)

// nrqlKeywords are NRQL's clauses, operators and words of time, which a
// value must not be: it would add a clause or change one.
var nrqlKeywords = []string{
	"select", "from", "where", "and", "or", "not", "in", "like", "is", "null", "facet", "since", "until", "ago", "limit", "max",
	"timeseries", "compare", "with", "as", "order", "by", "asc", "desc", "offset", "extrapolate", "slide", "raw", "auto",
	"cases", "show", "event", "types", "join", "on", "predict", "rlike", "between", "today", "yesterday", "now",
}

const nrqlPlain = "a number (0.99, 1e3) or an attribute's name ([a-zA-Z_][a-zA-Z0-9_.]*, not a keyword such as WHERE)"

// Plain reports why v cannot stand outside a string at ctx: it must be
// one number or name that is not a keyword; signed only as a whole
// operand; and joined to a word only to make one name or number.
func (NRQL) Plain(v string, ctx lang.Context) string {
	if v == "" {
		return "the value is empty, which would leave an operand out"
	}
	body, signed := v, false
	if v[0] == '-' || v[0] == '+' {
		body, signed = v[1:], true
	}
	isNumber := nrqlNumber.MatchString(body)
	isName := !signed && nrqlName.MatchString(body)
	switch {
	case isName && isNRQLKeyword(body):
		return "the value is a NRQL keyword (" + strings.Join(nrqlKeywords, ", ") + "), which would add a clause or change one"
	case !isNumber && !isName:
		return "there a value must be " + nrqlPlain + ", one token that cannot change the query's structure"
	case signed && (!ctx.Operand || ctx.Joined()):
		return "a value with a sign (-1) is accepted there only as a whole operand: after an operator, an opening bracket or a comma, " +
			"and before a closing bracket, a comma, a comparison or a logical operator"
	case ctx.Joined():
		word := ctx.Before + v + ctx.After
		if !nrqlName.MatchString(word) && !nrqlNumber.MatchString(word) {
			return "the tag is joined to a name or a number of the query (" + lang.JoinedText(ctx) +
				"), and with it the value would not make one name or number; separate the tag from it"
		}
		if isNRQLKeyword(word) {
			return "with the word the tag is joined to, the value would make the NRQL keyword " + word
		}
	}
	return ""
}

func isNRQLKeyword(s string) bool {
	for _, k := range nrqlKeywords {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}
