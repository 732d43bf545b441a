package graphite

import (
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/internal/lang"
)

// Query is the language of a Graphite metric's query as argument
// substitution reads it (lang.Language): the render API's query string,
// "target=sumSeries(app.{{args.service}}.requests.*.count)&from=-5min",
// whose targets are Graphite's expressions: metric paths of dotted
// segments, with the wildcards *, ?, [..] and {a,b}, functions, numbers
// and string literals in single or double quotes.
//
// Outside a string literal a value must be one path segment, or a number
// where an operand stands (an argument of a function, between "(" or ","
// and ")" or ","): letters, digits, "_" and "-". Anything else is refused:
// "." would add a segment, "*", "?", "[", "{" and "," would widen the
// series matched, "(" and ")" would call a function, "&", "=", "%", "+",
// "#" and ";" would end the parameter or add one, and space is removed
// from the query (as Argo Rollouts removes it) before it is sent.
//
// Inside a string literal ('5min', "alias") a value may also hold ".",
// ":", "/" and "@", but no quote, backslash, space or any of the URL's
// delimiters: there is no escaping that survives both Graphite's parser
// and the query string, so such a value is refused rather than escaped.
type Query struct{}

// Name names the language in messages.
func (Query) Name() string { return "Graphite query" }

// Noun: a query, bounded by --max-query-length.
func (Query) Noun() string { return "query" }

// Lex reads the string literals of Graphite's targets (single or double
// quoted, a backslash escaping the next character) and sets each tag's
// context: its quote inside one, else the operand rule and the path
// segment characters around it.
func (Query) Lex(s string, tags []lang.Span, ctx []lang.Context) {
	var quote byte
	pos, ti := 0, 0
	for ti < len(tags) {
		t := tags[ti]
		// Scan up to the tag.
		for ; pos < t.Start; pos++ {
			c := s[pos]
			switch {
			case quote != 0 && c == '\\':
				pos++
			case quote != 0 && c == quote:
				quote = 0
			case quote == 0 && (c == '\'' || c == '"'):
				quote = c
			}
		}
		if quote != 0 {
			ctx[ti] = lang.Context{Quote: quote, InEscape: pos > 0 && s[pos-1] == '\\' && !escaped(s, pos-1)}
		} else {
			prev := byte(0)
			if before := strings.TrimRight(s[:t.Start], " \t\n\r\f\v"); before != "" {
				prev = before[len(before)-1]
			}
			next := strings.TrimLeft(s[t.End:], " \t\n\r\f\v")
			ctx[ti] = lang.Context{
				Operand: (prev == '(' || prev == ',') && next != "" && (next[0] == ')' || next[0] == ','),
				Before:  lang.WordBefore(s[:t.Start], isSegmentByte),
				After:   lang.WordAfter(s[t.End:], isSegmentByte),
			}
		}
		pos = t.End
		ti++
	}
}

// escaped reports whether the backslash at i is itself escaped.
func escaped(s string, i int) bool {
	n := 0
	for i > 0 && s[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

var (
	segment = regexp.MustCompile(`^[\p{L}\p{N}_-]+$`)
	number  = regexp.MustCompile(`^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
	literal = regexp.MustCompile(`^[\p{L}\p{N}_.:/@-]*$`)
)

// EscapedLength: a value goes into a string literal as it is, when it
// holds only characters that mean the same to Graphite and in the query
// string; any other is refused.
func (Query) EscapedLength(v string, _ byte) (int, string) {
	if !literal.MatchString(v) {
		return 0, "in a string literal of a Graphite query a value may hold letters, digits, \"_\", \"-\", \".\", \":\", \"/\" and \"@\" only; " +
			"a quote, a backslash, a space or \"&\", \"=\", \"%\", \"+\", \"#\" would end the literal or change the query string around it"
	}
	return len(v), ""
}

// Escape returns v: EscapedLength let only characters through that need
// no escaping.
func (Query) Escape(v string, _ byte) string { return v }

// Plain reports why v cannot stand outside a string literal: it must be
// one path segment (joined to the segment characters around it, one
// still), or a number where an operand stands.
func (Query) Plain(v string, ctx lang.Context) string {
	switch {
	case v == "":
		return "the value is empty, which would leave a path segment or an argument out of the query"
	case ctx.Operand && !ctx.Joined() && number.MatchString(v):
		return ""
	case !segment.MatchString(v):
		return "in a Graphite query a value must be one path segment of letters, digits, \"_\" and \"-\" (or a number as a function's argument); " +
			"\".\" would add a segment, \"*\", \"?\", \"[\", \"{\" and \",\" would widen the series matched, \"(\" would call a function, and \"&\", \"=\", \"%\", \"+\" would change the query string"
	}
	return ""
}

// Unknown is a placeholder: one path segment.
func (Query) Unknown(name string) string { return lang.Placeholder(name) }

// Check leaves a target's syntax to Graphite, which answers one it
// cannot parse with an error status (an Error measurement); the query
// string's own shape is checked with the metric's configuration.
func (Query) Check(string) string { return "" }

// isSegmentByte reports whether c continues a path segment (non-ASCII
// letters included).
func isSegmentByte(c byte) bool {
	return c >= 0x80 || c == '_' || c == '-' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
