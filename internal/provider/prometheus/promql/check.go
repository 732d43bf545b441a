package promql

import (
	"errors"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"

	"github.com/canaryd/canaryd/internal/lang"
)

// Check parses a resolved query as Prometheus would; its problem starts
// with Problem.
func (Language) Check(query string) string {
	if strings.TrimSpace(query) == "" {
		return "" // a missing query is the provider's to report
	}
	if msg := parse(query); msg != "" {
		return Problem + ": " + msg
	}
	return ""
}

// Problem starts the message of a query that Prometheus' parser
// refuses. Such a problem holds whatever value its arguments get: a query
// with placeholders (spec.Placeholder) is refused only when it parses with
// none of the plain literals a value may be in their place.
const Problem = "the query does not parse as PromQL"

// promqlParser is Prometheus' own parser, with every feature a Prometheus
// may have switched on (experimental functions, duration expressions,
// extended range selectors, fill modifiers): canaryd refuses what no
// Prometheus would run, and leaves to the one it queries what that one
// has not enabled. A parser is safe for concurrent use.
var promqlParser = parser.NewParser(parser.Options{
	EnableExperimentalFunctions:  true,
	ExperimentalDurationExpr:     true,
	EnableExtendedRangeSelectors: true,
	EnableBinopFillModifiers:     true,
})

// placeholderToken is a placeholder in a resolved text, with whatever
// name characters surround it: one PromQL name.
var placeholderToken = regexp.MustCompile(lang.PlaceholderPrefix + `[a-zA-Z0-9_]*`)

// maxPlaceholderTrials bounds the parses of one query with placeholders:
// each of up to log2 of it placeholders is tried as a name and as a
// number; beyond, all as names and all as numbers.
const maxPlaceholderTrials = 64

// parse parses a resolved query and returns the parser's message
// ("1:11: parse error: unclosed left parenthesis"), "" when it parses.
// Placeholders stand where a value is not known (a template checked
// without its arguments' values, or an argument whose value is refused):
// a value there is a plain literal, a name or a number (which PromQL reads
// as a duration too), so the query is tried with each of them in each
// place, and refused only when none parses. Its message is then the one
// of the try that parsed furthest, at its position in query.
func parse(query string) string {
	_, err := promqlParser.ParseExpr(query)
	if err == nil {
		return ""
	}
	best, ok := firstParseErr(err)
	if !ok {
		return err.Error()
	}
	if spots := placeholderToken.FindAllStringIndex(query, -1); len(spots) > 0 {
		for _, choice := range placeholderChoices(len(spots)) {
			var b strings.Builder
			prev := 0
			for i, s := range spots {
				b.WriteString(query[prev:s[0]])
				if choice&(1<<i) != 0 {
					b.WriteString("1")
				} else {
					b.WriteString(query[s[0]:s[1]])
				}
				prev = s[1]
			}
			b.WriteString(query[prev:])
			_, err := promqlParser.ParseExpr(b.String())
			if err == nil {
				return ""
			}
			if pe, ok := firstParseErr(err); ok {
				pe.Query = query
				pe.PositionRange.Start = unshift(pe.PositionRange.Start, spots, choice)
				pe.PositionRange.End = unshift(pe.PositionRange.End, spots, choice)
				if pe.PositionRange.Start > best.PositionRange.Start {
					best = pe
				}
			}
		}
	}
	return best.Error()
}

// firstParseErr is the first of the parser's errors.
func firstParseErr(err error) (parser.ParseErr, bool) {
	if errs, ok := errors.AsType[parser.ParseErrors](err); ok && len(errs) > 0 {
		return errs[0], true
	}
	if pe, ok := errors.AsType[*parser.ParseErr](err); ok {
		return *pe, true
	}
	return parser.ParseErr{}, false
}

// unshift maps a position in a try of parse, whose placeholders
// at spots were numbers where choice says, to its position in the query.
func unshift(pos posrange.Pos, spots [][]int, choice uint64) posrange.Pos {
	shift := 0
	for i, s := range spots {
		if choice&(1<<i) == 0 {
			continue
		}
		if int(pos) < s[0]-shift+1 {
			break
		}
		shift += s[1] - s[0] - 1
	}
	return pos + posrange.Pos(shift)
}

// placeholderChoices lists, as bit sets (1: a number), the ways to fill n
// placeholders that parse tries after all names: every one when
// there are few, else all numbers.
func placeholderChoices(n int) []uint64 {
	if 1<<min(n, 63) > maxPlaceholderTrials {
		return []uint64{1<<min(n, 63) - 1}
	}
	out := make([]uint64, 0, 1<<n-1)
	for c := uint64(1); c < 1<<n; c++ {
		out = append(out, c)
	}
	return out
}
