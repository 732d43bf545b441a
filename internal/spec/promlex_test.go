package spec

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file restates the lexer of prometheus/promql/parser (lex.go), as far
// as the structure of a query goes, to check substitution against: the
// tokens a query reads as, with each string's value as the parser unquotes
// it. Operators are one token per byte; that they pair up (==, =~) is the
// same on both sides of any comparison made with it.

type promTokenKind int

const (
	tokString promTokenKind = iota
	tokNumber
	tokDuration
	tokIdentifier
	tokKeyword
	tokOperator
)

type promToken struct {
	kind       promTokenKind
	start, end int
	// text is the token as written; value, for a string, as unquoted.
	text, value string
}

var promLexKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "by": true, "without": true, "on": true,
	"ignoring": true, "group_left": true, "group_right": true, "bool": true, "offset": true,
}

func isPromAlpha(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isPromDigit(c byte) bool { return '0' <= c && c <= '9' }

// lexPromQL returns the tokens of q; an error where PromQL's lexer stops.
func lexPromQL(q string) ([]promToken, error) {
	var out []promToken
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(q) && q[i] != '\n' && q[i] != '\r' {
				i++
			}
		case c == '"' || c == '\'':
			end, value, err := lexPromString(q, i)
			if err != nil {
				return nil, err
			}
			out = append(out, promToken{kind: tokString, start: i, end: end, text: q[i:end], value: value})
			i = end
		case c == '`':
			j := strings.IndexByte(q[i+1:], '`')
			if j < 0 {
				return nil, errors.New("unterminated raw string")
			}
			end := i + 1 + j + 1
			if !utf8.ValidString(q[i+1 : end-1]) {
				return nil, errors.New("invalid UTF-8 rune")
			}
			out = append(out, promToken{kind: tokString, start: i, end: end, text: q[i:end], value: q[i+1 : end-1]})
			i = end
		case isPromDigit(c) || (c == '.' && i+1 < len(q) && isPromDigit(q[i+1])):
			end, kind, err := lexPromNumber(q, i)
			if err != nil {
				return nil, err
			}
			out = append(out, promToken{kind: kind, start: i, end: end, text: q[i:end]})
			i = end
		case isPromAlpha(c) || c == ':':
			j := i + 1
			for j < len(q) && (isPromAlpha(q[j]) || isPromDigit(q[j]) || q[j] == ':') {
				j++
			}
			word := q[i:j]
			kind := tokIdentifier
			switch lower := strings.ToLower(word); {
			case promLexKeywords[lower]:
				kind = tokKeyword
			case lower == "inf" || lower == "nan":
				kind = tokNumber
			}
			out = append(out, promToken{kind: kind, start: i, end: j, text: word})
			i = j
		case strings.IndexByte("(){}[],=!<>~+-*/%^@", c) >= 0:
			out = append(out, promToken{kind: tokOperator, start: i, end: i + 1, text: q[i : i+1]})
			i++
		default:
			return nil, errors.New("unexpected character " + strconv.QuoteRune(rune(c)))
		}
	}
	return out, nil
}

// lexPromString reads the "…" or '…' string at q[start], escapes as
// lexEscape reads them, and returns its end and its value.
func lexPromString(q string, start int) (int, string, error) {
	quote := q[start]
	var b strings.Builder
	for i := start + 1; i < len(q); {
		c := q[i]
		switch {
		case c == quote:
			return i + 1, b.String(), nil
		case c == '\n':
			return 0, "", errors.New("unterminated quoted string")
		case c != '\\':
			r, size := utf8.DecodeRuneInString(q[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, "", errors.New("invalid UTF-8 rune")
			}
			b.WriteString(q[i : i+size])
			i += size
			continue
		}
		if i+1 >= len(q) {
			return 0, "", errors.New("escape sequence not terminated")
		}
		e := q[i+1]
		simple := map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', quote: quote}
		if v, ok := simple[e]; ok {
			b.WriteByte(v)
			i += 2
			continue
		}
		var digits, base int
		var max rune
		first := i + 2
		switch {
		case '0' <= e && e <= '7':
			digits, base, max, first = 3, 8, 255, i+1
		case e == 'x':
			digits, base, max = 2, 16, 255
		case e == 'u':
			digits, base, max = 4, 16, utf8.MaxRune
		case e == 'U':
			digits, base, max = 8, 16, utf8.MaxRune
		default:
			return 0, "", errors.New("unknown escape sequence")
		}
		if first+digits > len(q) {
			return 0, "", errors.New("escape sequence not terminated")
		}
		n, err := strconv.ParseUint(q[first:first+digits], base, 32)
		if err != nil || rune(n) > max || (0xD800 <= n && n < 0xE000) {
			return 0, "", errors.New("illegal escape sequence")
		}
		// As strconv.Unquote, which the parser calls: \x and octal are
		// bytes, \u and \U runes.
		if e == 'u' || e == 'U' {
			b.WriteRune(rune(n))
		} else {
			b.WriteByte(byte(n))
		}
		i = first + digits
	}
	return 0, "", errors.New("unterminated quoted string")
}

// lexPromNumber reads the number or duration at q[start].
func lexPromNumber(q string, start int) (int, promTokenKind, error) {
	i := start
	digits := "0123456789"
	if strings.HasPrefix(q[i:], "0x") || strings.HasPrefix(q[i:], "0X") {
		i += 2
		digits = "0123456789abcdefABCDEF"
	}
	accept := func(set string) bool {
		if i < len(q) && strings.IndexByte(set, q[i]) >= 0 {
			i++
			return true
		}
		return false
	}
	run := func(set string) {
		for accept(set) {
		}
	}
	run(digits)
	if accept(".") {
		run(digits)
	}
	if digits == "0123456789" && accept("eE") {
		accept("+-")
		run("0123456789")
	}
	if i < len(q) && (isPromAlpha(q[i]) || isPromDigit(q[i])) {
		// A duration: units after numbers (5m, 1h30m, 100ms).
		j := start
		for j < len(q) && (isPromAlpha(q[j]) || isPromDigit(q[j])) {
			j++
		}
		if promDuration.MatchString(q[start:j]) {
			return j, tokDuration, nil
		}
		return 0, 0, errors.New("bad number or duration syntax: " + strconv.Quote(q[start:j]))
	}
	return i, tokNumber, nil
}

// promDuration is a PromQL duration (5m, 1h30m, 100ms).
var promDuration = regexp.MustCompile(`^(?:[0-9]+(?:ms|[smhdwy]))+$`)
