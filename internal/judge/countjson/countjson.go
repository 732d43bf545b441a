// Package countjson is the wire form of the judge's count test
// (judge.CountTest) that `canaryd judge` and POST /v1/judge share: a look
// read from one line of JSON, strictly, and a look's result written as one
// line of JSON. An interval of the baseline's history before the analysis
// (judge.CountConfig.History), one side's counts, is read the same way
// (ParseCounts).
//
// POST /v1/judge's body, the test's options, the baseline's history and
// its looks, is read here too (ParseRequest), each problem named by its
// field and pointer, and its answer written, the looks' results as one
// JSON array (Request.AppendResults).
//
// Reading is on the command's hot path (a million looks a second is the
// aim), so a look of the usual shape is read by a small parser of its own,
// without allocating; anything it does not follow (an escape in a key, a
// value that is not a number) is read again by encoding/json's tokenizer,
// which says what is wrong. Both refuse what the other refuses: unknown,
// repeated or missing fields, values that are not numbers (JSON has no
// NaN; the string "NaN" is a string), numbers beyond a float64, and
// anything after the look. The counts themselves (negative, decreasing,
// more bad than total) are the count test's to check.
//
// The package must not decide anything: the count test does.
package countjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/canaryd/canaryd/internal/judge"
)

// The fields of a look, as the count test's errors name them.
var sideNames = [2]string{"canary", "baseline"}
var countNames = [2]string{"bad", "total"}

// ParseLook reads one look, a JSON object
// {"canary":{"bad":N,"total":N},"baseline":{"bad":N,"total":N}}, and
// returns it or a *judge.FieldError naming the first problem's field
// ("canary.bad"; "" for the line as a whole).
func ParseLook(line []byte) (judge.CountLook, error) {
	var l judge.CountLook
	p := parser{b: line}
	if p.exact(&l) {
		return l, nil
	}
	p.i = 0
	if p.look(&l) {
		return l, nil
	}
	return slowLook(line)
}

// ParseCounts reads one side's counts, a JSON object {"bad":N,"total":N}:
// an interval of the baseline's history before the analysis
// (judge.CountConfig.History), as `canaryd judge --history` reads them a
// line each and POST /v1/judge's history holds them. It returns them or a
// *judge.FieldError naming the first problem's field ("bad"; "" for the
// object as a whole), as ParseLook does for a look.
func ParseCounts(line []byte) (judge.Counts, error) {
	var c judge.Counts
	p := parser{b: line}
	if p.counts(&c) {
		return c, nil
	}
	return slowCounts(line)
}

func (p *parser) counts(c *judge.Counts) bool {
	ok := p.side(c)
	p.ws()
	return ok && p.i == len(p.b)
}

// The parts of a look as canaryd and most programs write one: keys in
// this order, no spaces.
const (
	partCanary   = `{"canary":{"bad":`
	partTotal    = `,"total":`
	partBaseline = `},"baseline":{"bad":`
	partEnd      = `}}`
)

// exact reads a look written as canaryd writes one, with literal
// comparisons only.
func (p *parser) exact(l *judge.CountLook) bool {
	var ok bool
	if !p.literal(partCanary) {
		return false
	}
	if l.Canary.Bad, ok = p.number(); !ok || !p.literal(partTotal) {
		return false
	}
	if l.Canary.Total, ok = p.number(); !ok || !p.literal(partBaseline) {
		return false
	}
	if l.Baseline.Bad, ok = p.number(); !ok || !p.literal(partTotal) {
		return false
	}
	if l.Baseline.Total, ok = p.number(); !ok || !p.literal(partEnd) {
		return false
	}
	return p.i == len(p.b)
}

func (p *parser) literal(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// parser reads the usual shape of a look; ok false sends the line to
// slowLook, which finds the problem (or reads what the parser does not:
// escapes in keys).
type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads a key without escapes and its colon, and returns which of
// names it is; -1 for any other key or anything else.
func (p *parser) key(names *[2]string) int {
	if !p.byte('"') {
		return -1
	}
	start := p.i
	for p.i < len(p.b) && p.b[p.i] != '"' {
		if p.b[p.i] == '\\' || p.b[p.i] < 0x20 {
			return -1
		}
		p.i++
	}
	if p.i == len(p.b) {
		return -1
	}
	k := p.b[start:p.i]
	p.i++
	if !p.byte(':') {
		return -1
	}
	for n, name := range names {
		if string(k) == name {
			return n
		}
	}
	return -1
}

// object reads an object of exactly the two keys of names, in either
// order, calling value for each.
func (p *parser) object(names *[2]string, value func(n int) bool) bool {
	if !p.byte('{') {
		return false
	}
	var seen [2]bool
	for k := 0; k < 2; k++ {
		if k == 1 && !p.byte(',') {
			return false
		}
		n := p.key(names)
		if n < 0 || seen[n] || !value(n) {
			return false
		}
		seen[n] = true
	}
	return p.byte('}')
}

func (p *parser) look(l *judge.CountLook) bool {
	ok := p.object(&sideNames, func(n int) bool {
		c := &l.Canary
		if n == 1 {
			c = &l.Baseline
		}
		return p.side(c)
	})
	p.ws()
	return ok && p.i == len(p.b)
}

// side reads one side's object of counts, {"bad":N,"total":N}.
func (p *parser) side(c *judge.Counts) bool {
	return p.object(&countNames, func(m int) bool {
		v, ok := p.number()
		if m == 0 {
			c.Bad = v
		} else {
			c.Total = v
		}
		return ok
	})
}

// number reads a number as JSON writes one (RFC 8259 section 6) that is
// within a float64.
func (p *parser) number() (float64, bool) {
	p.ws()
	start := p.i
	// Small integers, the usual counts, need no ParseFloat.
	var n int64
	for p.i < len(p.b) && p.i-start < 15 && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	if p.i < len(p.b) && p.i > start && (p.b[start] != '0' || p.i == start+1) {
		switch p.b[p.i] {
		case ',', '}', ' ', '\t', '\n', '\r':
			return float64(n), true
		}
	}
	p.i = start
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return 0, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return 0, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(p.b[start:p.i]), 64) // does not allocate: the conversion does not escape
	return v, err == nil
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// slowLook reads a look with encoding/json's tokenizer, to say what is
// wrong with a line the parser did not take.
func slowLook(line []byte) (judge.CountLook, error) {
	var l judge.CountLook
	d, err := tokens(line)
	if err != nil {
		return l, err
	}
	if err := readObject(d, "", wholeLook, &sideNames, func(n int, field string) error {
		c := &l.Canary
		if n == 1 {
			c = &l.Baseline
		}
		return readSide(d, field, c)
	}); err != nil {
		return judge.CountLook{}, err
	}
	if err := end(d); err != nil {
		return judge.CountLook{}, err
	}
	return l, nil
}

// slowCounts reads one side's counts with encoding/json's tokenizer, to
// say what is wrong with a line the parser did not take.
func slowCounts(line []byte) (judge.Counts, error) {
	var c judge.Counts
	d, err := tokens(line)
	if err != nil {
		return c, err
	}
	if err := readObject(d, "", wholeCounts, &countNames, func(m int, field string) error {
		return readCount(d, field, m, &c)
	}); err != nil {
		return judge.Counts{}, err
	}
	if err := end(d); err != nil {
		return judge.Counts{}, err
	}
	return c, nil
}

// What readObject calls the object of a line as a whole.
const (
	wholeLook   = "a look"
	wholeCounts = "an interval"
)

// tokens is a tokenizer of line, or the problem of a line that is not
// JSON.
func tokens(line []byte) (*json.Decoder, error) {
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("not one JSON value")
		}
		return nil, &judge.FieldError{Message: "not JSON: " + err.Error()}
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	return d, nil
}

func end(d *json.Decoder) error {
	if _, err := d.Token(); err != io.EOF {
		return &judge.FieldError{Message: "more than one JSON value on the line"}
	}
	return nil
}

func readSide(d *json.Decoder, field string, c *judge.Counts) error {
	return readObject(d, field, "", &countNames, func(m int, field string) error {
		return readCount(d, field, m, c)
	})
}

func readCount(d *json.Decoder, field string, m int, c *judge.Counts) error {
	v, err := readNumber(d, field)
	if m == 0 {
		c.Bad = v
	} else {
		c.Total = v
	}
	return err
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// kind names a JSON token's type for a message.
func kind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return fmt.Sprintf("a string (%q)", v)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// readObject reads an object of the keys of names, each once and all of
// them, with value reading each key's value. The object is named by its
// field, or by whole when it is the line's.
func readObject(d *json.Decoder, field, whole string, names *[2]string, value func(n int, field string) error) error {
	t, _ := d.Token()
	what := whole
	if field != "" {
		what = field
	}
	if t != json.Delim('{') {
		return &judge.FieldError{Field: field, Message: fmt.Sprintf("%s must be an object {%q: …, %q: …}, got %s", what, names[0], names[1], kind(t))}
	}
	var seen [2]bool
	for d.More() {
		t, _ := d.Token()
		key, _ := t.(string)
		n := -1
		for i, name := range names {
			if key == name {
				n = i
			}
		}
		switch {
		case n < 0:
			return &judge.FieldError{Field: join(field, key), Message: fmt.Sprintf("unknown field; %s takes %s and %s", what, names[0], names[1])}
		case seen[n]:
			return &judge.FieldError{Field: join(field, key), Message: "given more than once"}
		}
		seen[n] = true
		if err := value(n, join(field, key)); err != nil {
			return err
		}
	}
	_, _ = d.Token() // '}'
	for i, name := range names {
		if !seen[i] {
			return &judge.FieldError{Field: join(field, name), Message: "is required"}
		}
	}
	return nil
}

func readNumber(d *json.Decoder, field string) (float64, error) {
	t, _ := d.Token()
	n, ok := t.(json.Number)
	if !ok {
		return 0, &judge.FieldError{Field: field, Message: "must be a number, got " + kind(t)}
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, &judge.FieldError{Field: field, Message: fmt.Sprintf("must be a finite number, got %s (beyond a float64)", n)}
	}
	return v, nil
}

// AppendResult appends r as one line of JSON, without the newline:
// {"look":1,"eValue":…,"pValue":…,"ratio":{"estimate":…,"lower":…,"upper":…},"decision":"continue"}.
// A number that is not finite (an upper bound of +Inf, an estimate of
// NaN) is null.
func AppendResult(dst []byte, r judge.CountResult) []byte {
	var w Writer
	return w.Append(dst, r)
}

// A Writer appends results as AppendResult does, one look after another,
// and keeps the text of the numbers it wrote last: of a test's looks, the
// p-value and the confidence sequence's bounds change at few looks, and
// a number equal to the one before (to the bit) is copied rather than
// formatted again. The zero Writer is ready; it is not safe for
// concurrent use.
type Writer struct {
	eValue, pValue, estimate, lower, upper numberText
}

// numberText is the text of the number whose bits are bits, n bytes of
// text (0: none yet).
type numberText struct {
	bits uint64
	n    uint8
	text [32]byte
}

// Append appends r as AppendResult does.
func (w *Writer) Append(dst []byte, r judge.CountResult) []byte {
	dst = append(dst, `{"look":`...)
	dst = strconv.AppendInt(dst, int64(r.Look), 10)
	dst = append(dst, `,"eValue":`...)
	dst = w.eValue.append(dst, r.EValue)
	dst = append(dst, `,"pValue":`...)
	dst = w.pValue.append(dst, r.PValue)
	dst = append(dst, `,"ratio":{"estimate":`...)
	dst = w.estimate.append(dst, r.Ratio.Estimate)
	dst = append(dst, `,"lower":`...)
	dst = w.lower.append(dst, r.Ratio.Lower)
	dst = append(dst, `,"upper":`...)
	dst = w.upper.append(dst, r.Ratio.Upper)
	dst = append(dst, `},"decision":"`...)
	dst = append(dst, r.Decision...)
	return append(dst, `"}`...)
}

// append appends f's text, copied when f is the number written last.
func (t *numberText) append(dst []byte, f float64) []byte {
	bits := math.Float64bits(f)
	if t.n > 0 && t.bits == bits {
		return append(dst, t.text[:t.n]...)
	}
	start := len(dst)
	dst = appendFloat(dst, f)
	if n := len(dst) - start; n <= len(t.text) {
		t.bits, t.n = bits, uint8(copy(t.text[:], dst[start:]))
	} else {
		t.n = 0
	}
	return dst
}

// appendFloat writes f as encoding/json does, and null when it is not
// finite.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
