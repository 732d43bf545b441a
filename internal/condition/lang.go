package condition

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Expr is expr's language as argument substitution reads it
// (lang.Language): a metric's conditions, and a provider's fields that are
// expressions (a range query's start and end), declare it.
var Expr lang.Language = exprLanguage{}

type exprLanguage struct{}

func (exprLanguage) Name() string { return "expr" }

// Noun: an expression is bounded as a field (or as a condition, by
// --max-condition-length), not as a query.
func (exprLanguage) Noun() string { return "expression" }

// Lex reads text as expr's lexer does as far as string literals and
// comments go: "…" and '…' (with backslash escapes, \u{…} among them),
// `…` (raw, a backtick doubled), // and /* */ comments.
func (exprLanguage) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	const (
		code = iota
		inString
		lineComment
		blockComment
	)
	state := code
	var quote, prev byte // prev: the last byte of code that is not a space
	// escape counts the bytes of the current escape sequence still to
	// come; untilBrace marks \u{…}, which runs to its brace.
	escape, untilBrace := 0, false
	next := 0
	for i := 0; i < len(s); i++ {
		if next < len(tags) && i == tags[next].Start {
			t := tags[next]
			switch state {
			case inString:
				ctx[next] = lang.Context{Quote: quote, InEscape: escape > 0 || untilBrace}
				escape, untilBrace = 0, false
			case code:
				ctx[next] = lang.Context{
					Operand: lang.StartsOperand(prev) && lang.EndsOperand(s[t.End:]),
					Before:  lang.WordBefore(s[:t.Start], isExprWordByte),
					After:   lang.WordAfter(s[t.End:], isExprWordByte),
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
			switch {
			case c == '"' || c == '\'' || c == '`':
				state, quote = inString, c
			case c == '/' && i+1 < len(s) && s[i+1] == '/':
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
			case untilBrace:
				untilBrace = c != '}'
			case escape == 1 && c == 'u' && i+1 < len(s) && s[i+1] == '{':
				escape, untilBrace = 0, true
			case escape > 0:
				escape = lang.EscapeLength(c, escape)
			case c == '\\' && quote != '`':
				escape = 1
			case c == quote && quote == '`' && i+1 < len(s) && s[i+1] == '`':
				i++ // an escaped backtick
			case c == quote:
				state, prev = code, c
			case c == '\n' && quote != '`':
				// The lexer refuses a line break in a quoted string: the
				// text is invalid before the tag whatever the value.
				state, prev = code, c
			}
		case lineComment:
			if c == '\n' {
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

// isExprWordByte reports whether c can be part of an expr name or number,
// which a value next to it would join: any letter (every byte of UTF-8
// beyond ASCII counts), digits, _, $ and a number's dot.
func isExprWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// EscapedLength is the length of v in a string literal of the quote; in
// `…` a backtick is doubled.
func (exprLanguage) EscapedLength(v string, quote byte) (int, string) {
	if quote == '`' {
		return len(v) + strings.Count(v, "`"), ""
	}
	return lang.QuotedLength(v, quote), ""
}

// Escape escapes v for a string literal of the quote.
func (exprLanguage) Escape(v string, quote byte) string {
	if quote == '`' {
		return strings.ReplaceAll(v, "`", "``")
	}
	return lang.EscapeQuoted(v, quote)
}

// Unknown: an expression's plain value is a number.
func (exprLanguage) Unknown(string) string { return "1" }

// exprNumber is a decimal number, one of expr's plain literals with true
// and false.
var exprNumber = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$`)

// Plain reports why v cannot stand outside a string literal at ctx: it
// must be a number, true or false, signed only as a whole operand, and
// joined to nothing.
func (exprLanguage) Plain(v string, ctx lang.Context) string {
	if v == "" {
		return "the value is empty, which would leave an operand out"
	}
	body, signed := v, false
	if v[0] == '-' || v[0] == '+' {
		body, signed = v[1:], true
	}
	isNumber := exprNumber.MatchString(body)
	isBool := !signed && (body == "true" || body == "false")
	switch {
	case !isNumber && !isBool:
		return "there a value must be a number (0.99, 1e3) or true or false, one token that cannot change the expression's structure"
	case strings.ContainsAny(v, "+-") && (!ctx.Operand || ctx.Joined()):
		return "a value with a sign (-1, 1e-3) is accepted there only as a whole operand: after an operator, an opening bracket or a comma, " +
			"and before a closing bracket, a comma, a comparison or a logical operator"
	case ctx.Joined():
		return "the tag is joined to a name or a number of the text (" + lang.JoinedText(ctx) +
			"), and in an expression the value would make another name of it; separate the tag from it"
	}
	return ""
}

// Check leaves an expression to what compiles it: a condition to Compile,
// a range query's start and end to its provider.
func (exprLanguage) Check(string) string { return "" }
