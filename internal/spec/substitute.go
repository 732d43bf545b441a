package spec

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Language is what a field's text is written in. It decides how an
// argument's value goes into the field (see Resolve): escaped inside a
// string literal, a plain literal elsewhere, or, in a field whose text is
// a value, as it is. A metric's conditions are expressions; what each
// provider field is, its provider declares (ResolveOptions.Languages).
type Language uint8

const (
	// ValueText is a field whose text is a value: a name, a duration, a
	// count, an address, a header, a credential. A value cannot change the
	// structure of a field that has none; each such field is checked for
	// what it is (a duration, an integer, an allowed datasource, a header
	// value without line breaks).
	ValueText Language = iota
	// PromQL is a Prometheus query.
	PromQL
	// Expr is an expr-lang expression: a condition, or a range query's
	// start or end.
	Expr
)

// fieldLanguage tells the language of a string field from its path
// relative to its metric ("provider.prometheus.query"): the conditions are
// expressions, a provider's fields are what o.Languages says, and every
// other field is a value.
func (o ResolveOptions) fieldLanguage(rel string) Language {
	if rel == "successCondition" || rel == "failureCondition" {
		return Expr
	}
	return o.Languages[rel]
}

// tag is one {{…}} of a field's text.
type tag struct {
	// start and end are the tag's bytes in the text, braces included.
	start, end int
	// raw is the text between the braces.
	raw string
	// arg is the argument the tag names; nil when it names none.
	arg *argValue
	ctx tagContext
	// escape: the value goes into a string literal and is escaped.
	escape bool
	// placeholder: the tag cannot be substituted, and a placeholder takes
	// its place (ResolveOptions.Continue).
	placeholder bool
}

// tagContext is where in its field's language a tag stands.
type tagContext struct {
	// quote is the quote of the string literal the tag is in: '"', '\''
	// or '`'; 0 outside string literals (code or a comment).
	quote byte
	// inEscape: inside a quoted string literal, the tag stands within an
	// escape sequence of the text itself (right after its backslash, or
	// among the digits of \x41, \u0041, \101), so that the value's first
	// characters would be read as part of it.
	inEscape bool
	// operand: outside string literals, a signed value would be one
	// operand at the tag: the text before it is empty or ends with an
	// operator, an opening bracket or a comma, and the text after it is
	// empty or starts with a closing bracket, a comma, a comparison or a
	// logical operator (nothing that binds tighter than a unary sign).
	operand bool
	// before and after are the characters of a name or a number that the
	// text has right before and right after the tag, outside string
	// literals: the value joins them into one token (metric_{{args.x}}).
	before, after string
}

// scanTags lists the tags of s as expand reads them: tags do not nest, and
// the text between "{{" and the next "}}" is the tag. unclosed reports a
// "{{" that is never closed.
func scanTags(s string, args map[string]*argValue) (tags []tag, unclosed bool) {
	for off := 0; ; {
		i := strings.Index(s[off:], openTag)
		if i < 0 {
			return tags, false
		}
		start := off + i
		j := strings.Index(s[start+len(openTag):], closeTag)
		if j < 0 {
			return nil, true
		}
		end := start + len(openTag) + j + len(closeTag)
		t := tag{start: start, end: end, raw: s[start+len(openTag) : end-len(closeTag)]}
		if name, ok := strings.CutPrefix(strings.TrimSpace(t.raw), argsTag); ok {
			t.arg = args[name]
		}
		tags = append(tags, t)
		off = end
	}
}

// findContexts sets the context of every tag of s, a text in lang, by
// reading s as the language's lexer does as far as string literals and
// comments go: PromQL's "…" and '…' (with backslash escapes), `…` (raw,
// no escapes) and # comments to the end of the line; expr's "…" and '…'
// (with backslash escapes), `…` (raw, a backtick doubled), // and /* */
// comments. A tag is read as a value that lexes as one operand: a plain
// literal, or an escaped string's content.
func findContexts(lang Language, s string, tags []tag) {
	const (
		code = iota
		inString
		lineComment
		blockComment
	)
	state := code
	var quote, prev byte // prev: the last byte of code that is not a space
	// escape counts the bytes of the current escape sequence still to
	// come; untilBrace marks expr's \u{…}, which runs to its brace.
	escape, untilBrace := 0, false
	next := 0
	for i := 0; i < len(s); i++ {
		if next < len(tags) && i == tags[next].start {
			t := &tags[next]
			switch state {
			case inString:
				t.ctx = tagContext{quote: quote, inEscape: escape > 0 || untilBrace}
				escape, untilBrace = 0, false
			case code:
				t.ctx = tagContext{
					operand: startsOperand(prev) && endsOperand(s[t.end:]),
					before:  wordBefore(lang, s[:t.start]),
					after:   wordAfter(lang, s[t.end:]),
				}
				prev = '0' // the value is an operand
			default:
				t.ctx = tagContext{} // in a comment: held to the rules of code
			}
			i = t.end - 1
			next++
			continue
		}
		c := s[i]
		switch state {
		case code:
			switch {
			case c == '"' || c == '\'' || c == '`':
				state, quote = inString, c
			case lang == PromQL && c == '#':
				state = lineComment
			case lang == Expr && c == '/' && i+1 < len(s) && s[i+1] == '/':
				state = lineComment
				i++
			case lang == Expr && c == '/' && i+1 < len(s) && s[i+1] == '*':
				state = blockComment
				i++
			}
			if !isSpace(c) {
				prev = c
			}
		case inString:
			switch {
			case untilBrace:
				untilBrace = c != '}'
			case escape > 0:
				escape = escapeLength(lang, c, escape, i+1 < len(s) && s[i+1] == '{')
				untilBrace = escape < 0
				escape = max(escape, 0)
			case c == '\\' && quote != '`':
				escape = 1
			case c == quote && quote == '`' && lang == Expr && i+1 < len(s) && s[i+1] == '`':
				i++ // expr's escaped backtick
			case c == quote:
				state, prev = code, c
			case c == '\n' && quote != '`':
				// Both lexers refuse a line break in a quoted string: the
				// text is invalid before the tag whatever the value.
				state, prev = code, c
			}
		case lineComment:
			if c == '\n' || (lang == PromQL && c == '\r') {
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

// escapeLength returns how many bytes of an escape sequence are still to
// come after c, which comes after a backslash (left is 1) or among the
// sequence's digits (left > 1): \x takes two hexadecimal digits, \u four,
// \U eight, an octal escape three digits in all. -1 is expr's \u{…}
// (brace tells that c, a u, is followed by one), which runs to its brace.
func escapeLength(lang Language, c byte, left int, brace bool) int {
	if left > 1 {
		return left - 1
	}
	switch {
	case c == 'x':
		return 2
	case c == 'u' && lang == Expr && brace:
		return -1
	case c == 'u':
		return 4
	case c == 'U':
		return 8
	case '0' <= c && c <= '7':
		return 2
	}
	return 0
}

// isWordByte reports whether c can be part of a name or a number of lang,
// which a value next to it would join: PromQL's names are ASCII
// ([a-zA-Z0-9_:]); expr's may have any letter (every byte of UTF-8 beyond
// ASCII counts) and $; numbers of both have dots.
func isWordByte(lang Language, c byte) bool {
	switch {
	case c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'):
		return true
	case lang == PromQL:
		return c == ':'
	}
	return c == '$' || c >= 0x80
}

// wordBefore is the run of word bytes at the end of text, wordAfter at
// its start: what a value at the tag between them joins.
func wordBefore(lang Language, text string) string {
	i := len(text)
	for i > 0 && isWordByte(lang, text[i-1]) {
		i--
	}
	return text[i:]
}

func wordAfter(lang Language, text string) string {
	i := 0
	for i < len(text) && isWordByte(lang, text[i]) {
		i++
	}
	return text[:i]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// startsOperand reports whether an operand may start after prev, the last
// byte of code before a tag (0 at the start of the text): after an
// operator, an opening bracket or a comma. Not after a name, a number, a
// closing bracket or a string (a sign would then be a binary operator), and
// not after a keyword such as PromQL's offset or bool, which canaryd does
// not tell apart from a name.
func startsOperand(prev byte) bool {
	return prev == 0 || strings.IndexByte("([{,=<>!+-*/%^|&?", prev) >= 0
}

// endsOperand reports whether an operand that starts with a sign ends
// before rest, the text after a tag: rest is empty, or its first byte that
// is not a space is a closing bracket, a comma, a comparison or a logical
// operator. Not an arithmetic operator (^ and ** bind tighter than a sign:
// -1 ^ 2 is -(1 ^ 2)), an opening bracket, a dot, another tag or a word
// (an operator such as PromQL's atan2).
func endsOperand(rest string) bool {
	rest = strings.TrimLeft(rest, " \t\n\r\f\v")
	return rest == "" || strings.IndexByte(")]},<>=!&|", rest[0]) >= 0
}

// escapedLength is the length of v escaped for a string literal of the
// given quote (see escapeString).
func escapedLength(v string, quote byte) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quote == '`':
			if c == '`' {
				n++ // expr doubles it; PromQL cannot hold it (refused)
			}
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

// escapeString escapes v for a string literal of the given quote, so that
// the literal holds exactly v: in "…" and '…', a backslash, the quote and
// control characters become escape sequences that PromQL's lexer and
// expr's both read (\\, \", \', \n, \t, \xHH, …); in expr's `…`, a backtick
// is doubled. PromQL's `…` has no escapes: a value with a backtick is
// refused before this is called.
func escapeString(v string, quote byte) string {
	var b strings.Builder
	b.Grow(escapedLength(v, quote))
	const hex = "0123456789abcdef"
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote == '`':
			if c == '`' {
				b.WriteByte('`')
			}
			b.WriteByte(c)
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

// The plain literals of each language: what a value may be outside string
// literals. Each is one token of the language, so that the value is one
// operand whatever it is.
var (
	// PromQL: a number (decimal, with an exponent, hexadecimal, Inf or
	// NaN), a duration, or a metric or label name.
	promNumber   = regexp.MustCompile(`^(?:0[xX][0-9a-fA-F]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)$`)
	promDuration = regexp.MustCompile(`^(?:[0-9]+(?:ms|[smhdwy]))+$`)
	promName     = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	// expr: a decimal number or a boolean.
	exprNumber = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$`)
)

// promKeywords are the PromQL words that are operators or modifiers, not
// names: a value must not join or modify the expressions around it. PromQL
// reads them in any case.
var promKeywords = []string{"and", "or", "unless", "atan2", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}

// plainLiteral reports why v cannot stand outside a string literal in a
// text of lang, at a tag of context ctx; "" when it can.
func plainLiteral(v string, lang Language, ctx tagContext) string {
	if v == "" {
		return "the value is empty, which would leave an operand out"
	}
	body, signed := v, false
	if v[0] == '-' || v[0] == '+' {
		body, signed = v[1:], true
	}
	var number, name bool
	switch lang {
	case PromQL:
		number = promNumber.MatchString(body) || promDuration.MatchString(body)
		name = !signed && promName.MatchString(body)
		if name && isPromKeyword(body) {
			return "the value is a PromQL keyword (" + strings.Join(promKeywords, ", ") + "), which would join or modify the expressions around it"
		}
	case Expr:
		number = exprNumber.MatchString(body)
		name = !signed && (body == "true" || body == "false")
	}
	joined := ctx.before != "" || ctx.after != ""
	switch {
	case !number && !name:
		return "there a value must be " + plainLiterals(lang) + ", one token that cannot change the " + languageNoun(lang) + "'s structure"
	case strings.ContainsAny(v, "+-") && (!ctx.operand || joined):
		return "a value with a sign (-1, 1e-3) is accepted there only as a whole operand: after an operator, an opening bracket or a comma, " +
			"and before a closing bracket, a comma, a comparison or a logical operator"
	case joined && lang == Expr:
		return "the tag is joined to a name or a number of the text (" + joinedText(ctx) +
			"), and in an expression the value would make another name of it; separate the tag from it"
	case joined:
		// A name may complete a name (metric_{{args.suffix}}): the three
		// must make one name, which the keywords are not.
		word := ctx.before + v + ctx.after
		if !promName.MatchString(word) {
			return "the tag is joined to a name or a number of the text (" + joinedText(ctx) +
				"), and with it the value would not make one name; separate the tag from it"
		}
		if len(word) <= len("group_right") && isPromKeyword(word) {
			return "with the name the tag is joined to, the value would make the PromQL keyword " + strconv.Quote(word)
		}
	}
	return ""
}

// joinedText shows the text around a tag for a message.
func joinedText(ctx tagContext) string {
	before, after := ctx.before, ctx.after
	if cut := len(before) - clipLength; cut > 0 {
		for cut < len(before) && !utf8.RuneStart(before[cut]) {
			cut++
		}
		before = "…" + before[cut:]
	}
	return before + "{{…}}" + clip(after)
}

func languageNoun(lang Language) string {
	if lang == PromQL {
		return "query"
	}
	return "expression"
}

func isPromKeyword(s string) bool {
	for _, k := range promKeywords {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// plainLiterals describes a language's plain literals, for messages.
func plainLiterals(lang Language) string {
	if lang == PromQL {
		return "a number (0.99, 1e3), a duration (5m, 1h30m) or a metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*, not a keyword such as or)"
	}
	return "a number (0.99, 1e3) or true or false"
}
