package influxdb

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Flux is InfluxDB's Flux as argument substitution reads it
// (lang.Language), from its scanner: "…" strings, with the escapes \n, \r,
// \t, \\, \", \${ and \xHH, and ${…} interpolations of code inside them;
// /…/ regular expressions where an operand is expected, with the escapes
// \/ and \\; and // comments to the end of the line.
//
// In a string a value is escaped so that the string holds exactly it: a
// backslash, a quote and the control characters as escapes, and "$" and
// "{" as \x24 and \x7b, so that no value can open an interpolation, at
// either of its ends. In a regular expression a value must be a plain word
// (letters, digits, "_", "-"): Flux has no escape there that keeps every
// value literal. Outside them a value must be one token that cannot change
// the query: a number, a duration, a date and time or a name that is not
// a keyword.
type Flux struct{}

// regexQuote marks a tag inside a regular expression literal (/…/) in
// lang.Context.Quote.
const regexQuote = '/'

// Name names the language in messages.
func (Flux) Name() string { return "Flux" }

// Noun: a query, bounded by --max-query-length.
func (Flux) Noun() string { return "query" }

// fluxState is where the lexer is: code (depth counts the braces opened
// in it, to find the end of an interpolation), a string, a regular
// expression or a comment.
type fluxState struct {
	kind  byte // 'c' code, '"' string, '/' regular expression, '#' comment
	depth int
}

// Lex reads text as Flux's scanner does as far as strings, interpolations,
// regular expressions and comments go.
func (Flux) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	stack := []fluxState{{kind: 'c'}}
	var prev byte // the last byte of code that is not a space
	escape := 0   // after a backslash -1, else the bytes of an escape sequence still to come
	next := 0
	for i := 0; i < len(s); i++ {
		top := &stack[len(stack)-1]
		if next < len(tags) && i == tags[next].Start {
			t := tags[next]
			switch top.kind {
			case '"', regexQuote:
				ctx[next] = lang.Context{Quote: top.kind, InEscape: escape != 0}
				escape = 0
			case 'c':
				ctx[next] = lang.Context{
					Operand: startsOperand(prev) && lang.EndsOperand(s[t.End:]),
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
		switch top.kind {
		case 'c':
			switch {
			case c == '"':
				stack = append(stack, fluxState{kind: '"'})
			case c == '/' && i+1 < len(s) && s[i+1] == '/':
				stack = append(stack, fluxState{kind: '#'})
				i++
			case c == '/' && startsOperand(prev):
				stack = append(stack, fluxState{kind: regexQuote})
			case c == '{':
				top.depth++
			case c == '}' && top.depth == 0 && len(stack) > 1:
				stack = stack[:len(stack)-1] // the end of an interpolation
			case c == '}':
				top.depth--
			}
			if !lang.IsSpace(c) {
				prev = c
			}
		case '"':
			switch {
			case escape < 0: // the byte after a backslash
				switch c {
				case 'x':
					escape = 2 // \xHH
				case '$':
					escape = 1 // \${
				default:
					escape = 0
				}
			case escape > 0:
				escape--
			case c == '\\':
				escape = -1
			case c == '$' && i+1 < len(s) && s[i+1] == '{':
				stack = append(stack, fluxState{kind: 'c'})
				prev = '('
				i++
			case c == '"':
				stack = stack[:len(stack)-1]
				prev = '"'
			}
		case regexQuote:
			switch {
			case escape != 0:
				escape = 0
			case c == '\\':
				escape = -1
			case c == '/':
				stack = stack[:len(stack)-1]
				prev = '0' // a regular expression is an operand
			}
		case '#':
			if c == '\n' {
				stack = stack[:len(stack)-1]
			}
		}
	}
}

// startsOperand: after prev an operand may start (Flux's scanner expects a
// regular expression there): after an operator, an opening bracket, a
// comma, a colon (a named argument) or at the start.
func startsOperand(prev byte) bool {
	return lang.StartsOperand(prev) || prev == ':' || prev == '~'
}

// isWordByte reports whether c continues a Flux name, number, duration or
// date and time, which a value next to it would join.
func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// EscapedLength is the length of v escaped for a string (Escape); in a
// regular expression, v must be a plain word.
func (Flux) EscapedLength(v string, quote byte) (int, string) {
	if quote == regexQuote {
		if !regexWord.MatchString(v) {
			return 0, "in a Flux regular expression a value must be letters, digits, \"_\" and \"-\": Flux has no escape there that keeps every value literal; " +
				"compare with a string instead (r.host == \"{{…}}\"), where any value is escaped"
		}
		return len(v), ""
	}
	n := 0
	for i := 0; i < len(v); i++ {
		n += len(fluxEscape(v[i]))
	}
	return n, ""
}

// Escape escapes v for a Flux string, so that it holds exactly v; in a
// regular expression v is a plain word, as it is.
func (Flux) Escape(v string, quote byte) string {
	if quote == regexQuote {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		b.WriteString(fluxEscape(v[i]))
	}
	return b.String()
}

// fluxEscapes are the bytes a Flux string cannot hold as they are, or
// that would open an interpolation next to a "$" or a "{".
var fluxEscapes = [256]string{'\\': `\\`, '"': `\"`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '$': `\x24`, '{': `\x7b`}

func fluxEscape(c byte) string {
	if e := fluxEscapes[c]; e != "" {
		return e
	}
	if c < ' ' || c == 0x7f {
		const hex = "0123456789abcdef"
		return `\x` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	return byteStrings[c]
}

// byteStrings holds each byte as a string, so that escaping allocates only
// its result.
var byteStrings = func() (s [256]string) {
	for i := range s {
		s[i] = string([]byte{byte(i)})
	}
	return s
}()

// Unknown is a placeholder: one Flux name.
func (Flux) Unknown(name string) string { return lang.Placeholder(name) }

// Check leaves the query's syntax to InfluxDB, which answers a query it
// cannot parse with an error (an Error measurement): Flux's parser is not
// in Go.
func (Flux) Check(string) string { return "" }

// The plain literals of Flux: a number, a duration, a date and time, a
// name.
var (
	regexWord    = regexp.MustCompile(`^[\p{L}\p{N}_-]+$`)
	fluxNumber   = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$`)
	fluxDuration = regexp.MustCompile(`^(?:[0-9]+(?:y|mo|w|d|h|m|s|ms|us|µs|ns))+$`)
	fluxTime     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?)?$`)
	fluxName     = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)
)

// fluxKeywords are the words Flux's scanner reads as keywords, not names.
var fluxKeywords = []string{"and", "or", "not", "empty", "in", "import", "package", "return", "option", "builtin", "testcase", "test", "if", "then", "else", "exists"}

const fluxPlain = "a number (0.99), a duration (5m, 1h30m), a date and time (2026-01-02T03:04:05Z) or a name (not a keyword such as or)"

// Plain reports why v cannot stand outside a string at ctx: it must be
// one number, duration, date and time or name that is not a keyword;
// signed only as a whole operand; and joined to a word only to make one
// number, duration or name.
func (Flux) Plain(v string, ctx lang.Context) string {
	if v == "" {
		return "the value is empty, which would leave an operand out"
	}
	body, signed := v, false
	if v[0] == '-' || v[0] == '+' {
		body, signed = v[1:], true
	}
	isLiteral := fluxNumber.MatchString(body) || fluxDuration.MatchString(body) || (!signed && fluxTime.MatchString(body))
	isName := !signed && fluxName.MatchString(body)
	switch {
	case isName && isFluxKeyword(body):
		return "the value is a Flux keyword (" + strings.Join(fluxKeywords, ", ") + "), which would change the query around it"
	case !isLiteral && !isName:
		return "there a value must be " + fluxPlain + ", one token that cannot change the query's structure"
	case signed && (!ctx.Operand || ctx.Joined()):
		return "a value with a sign (-5m) is accepted there only as a whole operand: after an operator, an opening bracket, a colon or a comma, " +
			"and before a closing bracket, a comma, a comparison or a logical operator"
	case ctx.Joined():
		word := ctx.Before + v + ctx.After
		if !fluxName.MatchString(word) && !fluxNumber.MatchString(word) && !fluxDuration.MatchString(word) {
			return "the tag is joined to a name or a number of the query (" + lang.JoinedText(ctx) +
				"), and with it the value would not make one name, number or duration; separate the tag from it"
		}
		if isFluxKeyword(word) {
			return "with the word the tag is joined to, the value would make the Flux keyword " + word
		}
	}
	return ""
}

func isFluxKeyword(s string) bool {
	for _, k := range fluxKeywords {
		if s == k {
			return true
		}
	}
	return false
}
