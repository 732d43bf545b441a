// Package lang is the seam between argument substitution (internal/spec)
// and the languages that queries and expressions are written in: a
// Language reads a text as its lexer does, as far as string literals and
// comments go, escapes a value for its string literals, says which values
// may stand outside them, and checks that a resolved text parses.
//
// Each language lives with what runs it: PromQL with the Prometheus
// provider (internal/provider/prometheus/promql), expr with the conditions
// (internal/condition). A provider declares the language of each of its
// query fields (provider.Languages); a field it declares none for is a
// value, substituted as it is and checked for what it is.
//
// The package holds what the languages share: the context of a tag, the
// operand rules, the escaping of a quoted string literal and the
// placeholder that stands for a value not known. It must not know any
// language.
package lang

import (
	"strings"
)

// Language is what a query or an expression field is written in.
// Implementations are comparable values (a struct type), safe for
// concurrent use.
type Language interface {
	// Name names the language in messages: "PromQL".
	Name() string
	// Noun is what a text of the language is called in messages: "query"
	// (bounded by --max-query-length) or "expression" (bounded as any
	// other field).
	Noun() string
	// Lex reads text as the language's lexer does, as far as string
	// literals and comments go, and sets ctx[i] to where tags[i], a span
	// of text, stands. The tags are in order and do not overlap; a tag is
	// read as one operand.
	Lex(text string, tags []Span, ctx []Context)
	// EscapedLength is the length of v escaped for a string literal of
	// the quote; refused says why no escaping can put v there ("" when
	// it can).
	EscapedLength(v string, quote byte) (n int, refused string)
	// Escape escapes v for a string literal of the quote, so that the
	// literal holds exactly v. It is called only for a value that
	// EscapedLength did not refuse.
	Escape(v string, quote byte) string
	// Plain reports why v cannot stand outside a string literal at ctx:
	// it must be one token that cannot change the text's structure. ""
	// when it can.
	Plain(v string, ctx Context) string
	// Unknown is what stands, outside string literals, for the value of
	// the argument name where it is not known (Placeholder, or a number).
	Unknown(name string) string
	// Check reports why a resolved text does not parse, "" when it does
	// or when the language leaves that to what runs it. Placeholders
	// (Placeholder) stand for values not known: the text is refused only
	// when no value could make it parse. The message starts with
	// ParseProblem(Noun(), Name()).
	Check(text string) string
}

// Span is a tag's bytes in its text, braces included: [Start, End).
type Span struct {
	Start, End int
}

// Context is where in its text a tag stands.
type Context struct {
	// Quote is the quote of the string literal the tag is in: '"', '\''
	// or '`'; 0 outside string literals (code or a comment).
	Quote byte
	// InEscape: inside a quoted string literal, the tag stands within an
	// escape sequence of the text itself (right after its backslash, or
	// among the digits of \x41, \u0041, \101), so that the value's first
	// characters would be read as part of it.
	InEscape bool
	// Operand: outside string literals, a signed value would be one
	// operand at the tag: the text before it is empty or ends with an
	// operator, an opening bracket or a comma, and the text after it is
	// empty or starts with a closing bracket, a comma, a comparison or a
	// logical operator (nothing that binds tighter than a unary sign).
	Operand bool
	// Before and After are the characters of a name or a number that the
	// text has right before and right after the tag, outside string
	// literals: the value joins them into one token (metric_{{args.x}}).
	Before, After string
}

// Joined reports whether the tag is joined to a name or a number of the
// text.
func (c Context) Joined() bool { return c.Before != "" || c.After != "" }

// ParseProblem starts the message of a text that its language's parser
// refuses: "the query does not parse as PromQL". Such a problem holds
// whatever value its arguments get (see IsParseProblem).
func ParseProblem(noun, name string) string {
	return "the " + noun + " does not parse as " + name
}

// IsParseProblem reports whether msg is a language's parse problem
// (ParseProblem).
func IsParseProblem(msg string) bool {
	return strings.HasPrefix(msg, "the ") && strings.Contains(strings.SplitN(msg, ":", 2)[0], " does not parse as ")
}

// PlaceholderPrefix starts the placeholder that stands, in a text resolved
// with its values not all known, for a value that could not be
// substituted (see Placeholder).
const PlaceholderPrefix = "canaryd_placeholder_"

// Placeholder is what stands for the value of the argument of this name
// where it could not be substituted: one name of ASCII letters, digits and
// underscores, which is no number, duration, address or condition, and
// which needs no escaping in a string literal.
func Placeholder(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !isASCIIWord(c) {
			b[i] = '_'
		}
	}
	return PlaceholderPrefix + string(b)
}

func isASCIIWord(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// IsSpace reports whether c is white space in the languages' texts.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// StartsOperand reports whether an operand may start after prev, the last
// byte of code before a tag (0 at the start of the text): after an
// operator, an opening bracket or a comma. Not after a name, a number, a
// closing bracket or a string (a sign would then be a binary operator), and
// not after a keyword such as PromQL's offset or bool, which is not told
// apart from a name.
func StartsOperand(prev byte) bool {
	return prev == 0 || strings.IndexByte("([{,=<>!+-*/%^|&?", prev) >= 0
}

// EndsOperand reports whether an operand that starts with a sign ends
// before rest, the text after a tag: rest is empty, or its first byte that
// is not a space is a closing bracket, a comma, a comparison or a logical
// operator. Not an arithmetic operator (^ and ** bind tighter than a sign:
// -1 ^ 2 is -(1 ^ 2)), an opening bracket, a dot, another tag or a word
// (an operator such as PromQL's atan2).
func EndsOperand(rest string) bool {
	rest = strings.TrimLeft(rest, " \t\n\r\f\v")
	return rest == "" || strings.IndexByte(")]},<>=!&|", rest[0]) >= 0
}

// WordBefore is the run of bytes for which word holds at the end of text,
// WordAfter at its start: what a value at a tag between them joins.
func WordBefore(text string, word func(byte) bool) string {
	i := len(text)
	for i > 0 && word(text[i-1]) {
		i--
	}
	return text[i:]
}

// WordAfter: see WordBefore.
func WordAfter(text string, word func(byte) bool) string {
	i := 0
	for i < len(text) && word(text[i]) {
		i++
	}
	return text[:i]
}

// EscapeLength returns how many bytes of an escape sequence of a quoted
// string are still to come after c, which comes after a backslash (left
// is 1) or among the sequence's digits (left > 1): \x takes two
// hexadecimal digits, \u four, \U eight, an octal escape three digits in
// all. The escapes are Go's, which PromQL's lexer and expr's share.
func EscapeLength(c byte, left int) int {
	if left > 1 {
		return left - 1
	}
	switch {
	case c == 'x':
		return 2
	case c == 'u':
		return 4
	case c == 'U':
		return 8
	case '0' <= c && c <= '7':
		return 2
	}
	return 0
}

// QuotedLength is the length of v escaped for a "…" or '…' string literal
// of the quote (see EscapeQuoted).
func QuotedLength(v string, quote byte) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' || c == quote:
			n++
		case c < ' ' || c == 0x7f:
			if shortEscape(c) != 0 {
				n++
			} else {
				n += 3 // \xHH
			}
		}
	}
	return n
}

// EscapeQuoted escapes v for a "…" or '…' string literal of the quote, so
// that the literal holds exactly v: a backslash, the quote and control
// characters become the escape sequences that Go's string literals, and
// PromQL's and expr's, read (\\, \", \', \n, \t, \xHH, …).
func EscapeQuoted(v string, quote byte) string {
	var b strings.Builder
	b.Grow(QuotedLength(v, quote))
	const hex = "0123456789abcdef"
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' || c == quote:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			if e := shortEscape(c); e != 0 {
				b.WriteByte('\\')
				b.WriteByte(e)
			} else {
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// shortEscape is the letter of c's one-letter escape (\n for a line feed),
// 0 when it has none.
func shortEscape(c byte) byte {
	switch c {
	case '\a':
		return 'a'
	case '\b':
		return 'b'
	case '\f':
		return 'f'
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	case '\v':
		return 'v'
	}
	return 0
}

// clipLength is the most of a text around a tag that a message quotes on
// either side.
const clipLength = 64

// JoinedText shows the text around a tag for a message:
// "metric_{{…}}_total".
func JoinedText(ctx Context) string {
	before, after := ctx.Before, ctx.After
	if cut := len(before) - clipLength; cut > 0 {
		for cut < len(before) && !runeStart(before[cut]) {
			cut++
		}
		before = "…" + before[cut:]
	}
	if len(after) > clipLength {
		cut := clipLength
		for cut > 0 && !runeStart(after[cut]) {
			cut--
		}
		after = after[:cut] + "…"
	}
	return before + "{{…}}" + after
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
