package prometheus

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/analysis"
)

// fastAnswer is a successful query response read by decodeFast.
type fastAnswer struct {
	// tooMany is set when the result has more values than decodeFast was
	// allowed to read; nothing else is then set.
	tooMany bool
	scalar  bool
	// value is the scalar's value.
	value float64
	// values are a vector's samples, or a matrix's series one after the
	// other, as convert flattens them. Never nil.
	values   []float64
	warnings []string
	infos    []string
	// texts are the first values (the scalar's, or the first of values)
	// as the answer writes them, where that is how the display writes
	// them too (shortestText), and nil where it is not: display copies
	// them rather than formatting the values anew. They are the body's
	// bytes, to be read before the body is reused.
	texts [keptTexts][]byte
}

// keptTexts is how many values' texts an answer keeps: a canary's
// query is usually a ratio, one value.
const keptTexts = 4

// display is the measurement's value as Argo writes it: a scalar as
// model.SampleValue.String writes it, a vector or matrix as appendDisplay.
func (a *fastAnswer) display() string {
	if a.scalar {
		if a.texts[0] != nil {
			return string(a.texts[0])
		}
		return model.SampleValue(a.value).String()
	}
	var scratch [64]byte
	return string(appendDisplay(scratch[:0], a.values, a.texts[:]))
}

// decodeFast reads a successful query response in the form Prometheus,
// Thanos, Mimir and Cortex write it, about ten times cheaper than
// client_golang, whose decoding unmarshals every sample and every result
// type through encoding/json afresh (and grows a measurement's goroutine
// stack doing so).
//
// A vector or matrix of more than maxValues values is not read past the
// value over it: the answer is tooMany, and the values are not kept.
//
// It accepts a deliberately narrow subset of JSON: the envelope
// {"status":"success","data":{"resultType":…,"result":…}} with optional
// "warnings" and "infos", each key once and no other; scalar, vector and
// matrix results of float samples; strings of printable ASCII without
// escapes, and label names of the classic form; no exponents in
// timestamps; pairs of exactly two elements. On anything else ok is false
// and the caller hands the same bytes to client_golang, so a response is
// either one client_golang reads exactly so (FuzzDecodeFast checks this
// against client_golang itself) or client_golang's to decide, errors
// included.
func decodeFast(body []byte, maxValues int) (a fastAnswer, ok bool) {
	d := decoder{b: body, max: maxValues}
	defer func() {
		if d.over {
			a, ok = fastAnswer{tooMany: true}, true
		}
	}()
	if !d.consume('{') {
		return a, false
	}
	var seenStatus, seenData, seenWarnings, seenInfos bool
	for first := true; ; first = false {
		if d.consume('}') {
			if first {
				return a, false
			}
			break
		}
		if !first && !d.consume(',') {
			return a, false
		}
		key, ok := d.plainString()
		if !ok || !d.consume(':') {
			return a, false
		}
		switch string(key) {
		case "status":
			status, ok := d.plainString()
			if seenStatus || !ok || string(status) != "success" {
				return a, false
			}
			seenStatus = true
		case "data":
			if seenData || !d.data(&a) {
				return a, false
			}
			seenData = true
		case "warnings":
			if seenWarnings || !d.strings(&a.warnings) {
				return a, false
			}
			seenWarnings = true
		case "infos":
			if seenInfos || !d.strings(&a.infos) {
				return a, false
			}
			seenInfos = true
		default:
			return a, false
		}
	}
	d.space()
	a.texts = d.texts
	return a, seenStatus && seenData && d.i == len(d.b)
}

// decoder is a cursor over the response. Every method reports false on
// anything it does not recognise, and the response is then not decoded
// here at all.
type decoder struct {
	b []byte
	i int
	// max is the most values a vector or matrix may have; over is set,
	// and decoding stops, at the first one past it.
	max  int
	over bool
	// texts are the first values' texts (fastAnswer.texts).
	texts [keptTexts][]byte
}

// add appends a value, whose text in the answer is text, unless that
// would make more than max.
func (d *decoder) add(values *[]float64, v float64, text []byte) bool {
	if len(*values) >= d.max {
		d.over = true
		return false
	}
	d.keepText(len(*values), text)
	*values = append(*values, v)
	return true
}

// keepText keeps the text of the i-th value, if it is one of the first
// and is written as the display writes it.
func (d *decoder) keepText(i int, text []byte) {
	if i < len(d.texts) && shortestText(text) {
		d.texts[i] = text
	}
}

func (d *decoder) space() {
	// Every white space byte is at most ' ': anything above is not.
	for d.i < len(d.b) && d.b[d.i] <= ' ' {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume skips white space and then c, if c is next.
func (d *decoder) consume(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// plainString reads a string of printable ASCII without escapes, which
// every JSON decoder reads as its bytes.
func (d *decoder) plainString() ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	b, start := d.b, d.i
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return b[start:i], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// strings reads an array of plain strings (warnings, infos).
func (d *decoder) strings(out *[]string) bool {
	if !d.consume('[') {
		return false
	}
	list := []string{}
	for first := true; ; first = false {
		if d.consume(']') {
			*out = list
			return true
		}
		if !first && !d.consume(',') {
			return false
		}
		s, ok := d.plainString()
		if !ok {
			return false
		}
		list = append(list, string(s))
	}
}

// data reads {"resultType": …, "result": …}, in that order: the type must
// be known before the result can be read.
func (d *decoder) data(a *fastAnswer) bool {
	if !d.consume('{') {
		return false
	}
	key, ok := d.plainString()
	if !ok || string(key) != "resultType" || !d.consume(':') {
		return false
	}
	resultType, ok := d.plainString()
	if !ok || !d.consume(',') {
		return false
	}
	key, ok = d.plainString()
	if !ok || string(key) != "result" || !d.consume(':') {
		return false
	}
	switch string(resultType) {
	case "scalar":
		a.scalar = true
		var text []byte
		if a.value, text, ok = d.pair(); ok {
			d.keepText(0, text)
		}
	case "vector":
		a.values = []float64{}
		ok = d.array(func() bool { return d.sample(&a.values, "value") })
	case "matrix":
		a.values = []float64{}
		ok = d.array(func() bool { return d.sample(&a.values, "values") })
	default:
		return false
	}
	return ok && d.consume('}')
}

// array reads [item, …] (possibly empty), calling item for each element.
func (d *decoder) array(item func() bool) bool {
	if !d.consume('[') {
		return false
	}
	for first := true; ; first = false {
		if d.consume(']') {
			return true
		}
		if !first && !d.consume(',') {
			return false
		}
		if !item() {
			return false
		}
	}
}

// sample reads a vector's sample {"metric": {…}, "value": [t, "v"]} or a
// matrix's series {"metric": {…}, "values": [[t, "v"], …]}, appending its
// values. A sample without a value (a native histogram, for one) is not
// read here: client_golang would give it the value 0.
func (d *decoder) sample(values *[]float64, valueKey string) bool {
	if !d.consume('{') {
		return false
	}
	var seenMetric, seenValue bool
	for first := true; ; first = false {
		if d.consume('}') {
			return seenValue
		}
		if !first && !d.consume(',') {
			return false
		}
		key, ok := d.plainString()
		if !ok || !d.consume(':') {
			return false
		}
		switch {
		case string(key) == "metric" && !seenMetric:
			seenMetric = true
			if !d.labels() {
				return false
			}
		case string(key) == valueKey && !seenValue:
			seenValue = true
			var ok bool
			if valueKey == "value" {
				ok = d.value(values)
			} else {
				ok = d.array(func() bool { return d.value(values) })
			}
			if !ok {
				return false
			}
		default:
			return false
		}
	}
}

// labels reads a series' labels, {"name": "value", …}, and checks them as
// strictly as any version of client_golang would: names of the classic
// form [a-zA-Z_][a-zA-Z0-9_]*, valid under every name validation scheme.
func (d *decoder) labels() bool {
	return d.members(func() bool {
		name, ok := d.plainString()
		if !ok || !classicLabelName(name) || !d.consume(':') {
			return false
		}
		_, ok = d.plainString()
		return ok
	})
}

func classicLabelName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i, c := range b {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// value reads a pair and appends its value.
func (d *decoder) value(values *[]float64) bool {
	v, text, ok := d.pair()
	return ok && d.add(values, v, text)
}

// pair reads [timestamp, "value"], exactly two elements, and returns the
// value and its text. The timestamp is checked, not kept: a JSON number
// without an exponent and with at most 18 integer digits, which
// model.Time parses without error.
func (d *decoder) pair() (float64, []byte, bool) {
	if !d.consume('[') || !d.timestamp() || !d.consume(',') {
		return 0, nil, false
	}
	raw, ok := d.plainString()
	if !ok {
		return 0, nil, false
	}
	// client_golang parses the string's bytes with strconv.ParseFloat
	// too, so NaN, +Inf and every other spelling read the same.
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, nil, false
	}
	return v, raw, d.consume(']')
}

// shortestText reports whether text is what strconv.FormatFloat(v, 'f',
// -1, 64), the display's spelling of a value, writes of the value v that
// strconv.ParseFloat reads in it: "NaN", "+Inf" or "-Inf", or a decimal
// with no exponent, no sign but a minus, no leading zero but a lone one
// before the point, no trailing zero after it, at most 15 significant
// digits and at most 24 bytes. A float64 holds any 15 significant
// digits (DBL_DIG): the value read is written back as the same digits,
// and no shorter ones read into it. A text of 24 bytes at most is well
// within float64's normal range, where that holds. FuzzShortestText
// holds it to strconv.
func shortestText(text []byte) bool {
	switch string(text) {
	case "NaN", "+Inf", "-Inf":
		return true
	}
	if len(text) == 0 || len(text) > 24 {
		return false
	}
	digits := text
	if digits[0] == '-' {
		digits = digits[1:]
	}
	point := -1
	significant := 0
	for i, c := range digits {
		switch {
		case c == '.' && point < 0:
			point = i
		case c < '0' || c > '9':
			return false
		case c != '0' || significant > 0:
			significant++
		}
	}
	switch {
	case len(digits) == 0 || point == 0 || point == len(digits)-1:
		return false // no digit, or none before or after the point
	case digits[0] == '0' && len(digits) > 1 && point != 1:
		return false // a leading zero
	case point > 0 && digits[len(digits)-1] == '0':
		return false // a trailing zero after the point
	}
	return significant <= 15
}

func (d *decoder) timestamp() bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.digits()
	switch {
	case digits == 0 || digits > 18:
		return false
	case digits > 1 && d.b[d.i-digits] == '0':
		return false // a leading zero is not JSON
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return false
		}
	}
	// An exponent, or anything else glued on, is left to client_golang.
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r', ',', ']':
		default:
			return false
		}
	}
	return true
}

func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// appendDisplay writes values as Argo shows a vector: [0.995,NaN], each
// value as model.SampleValue.String writes it, or as texts has it already
// written (texts[i], when it is not nil, is values[i]'s). What it writes is at most
// analysis.MaxValueBytes long: beyond, the values that fit are followed by
// how many there are in all, [0.1,0.2,… (12000 values)], so that a
// measurement never keeps more than that however large its result.
func appendDisplay(buf []byte, values []float64, texts [][]byte) []byte {
	start := len(buf)
	buf = append(buf, '[')
	for i, v := range values {
		mark := len(buf)
		if i > 0 {
			buf = append(buf, ',')
		}
		if i < len(texts) && texts[i] != nil {
			buf = append(buf, texts[i]...)
		} else {
			buf = strconv.AppendFloat(buf, v, 'f', -1, 64)
		}
		last := i == len(values)-1
		if n := len(buf) - start; (last && n+1 > analysis.MaxValueBytes) || (!last && n > analysis.MaxValueBytes-displayReserve) {
			buf = buf[:mark]
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, "… ("...)
			buf = strconv.AppendInt(buf, int64(len(values)), 10)
			return append(buf, " values)]"...)
		}
	}
	return append(buf, ']')
}

// displayReserve is room for the end of a cut display: ",… (" the count
// " values)]".
const displayReserve = len(",… (") + 20 + len(" values)]")

// countValues counts the values of a query response's result without
// keeping them: the samples of a vector, the points of a matrix's series,
// native histograms included. It reads any JSON, escapes and all, and
// matches keys as client_golang's decoder does (ignoring case), so that a
// result client_golang would decode is counted before it is; it counts at
// one value for a vector's sample even without its value, and a matrix
// series' points as they are (none for an empty list). ok is false when the body is not a JSON object.
func countValues(body []byte) (n int, ok bool) {
	d := decoder{b: body}
	ok = d.object(func(key string) bool {
		if !strings.EqualFold(key, "data") {
			return d.skip()
		}
		return d.objectOrSkip(func(key string) bool {
			if !strings.EqualFold(key, "result") {
				return d.skip()
			}
			return d.arrayOrSkip(func() bool {
				d.space()
				if d.i >= len(d.b) || d.b[d.i] != '{' {
					// A scalar's [t, "v"], or what no decoder takes.
					return d.skip()
				}
				values, series := 0, false
				ok := d.object(func(key string) bool {
					switch {
					case strings.EqualFold(key, "value"), strings.EqualFold(key, "histogram"):
						values++
						return d.skip()
					case strings.EqualFold(key, "values"), strings.EqualFold(key, "histograms"):
						series = true
						return d.arrayOrSkip(func() bool { values++; return d.skip() })
					}
					return d.skip()
				})
				if !series {
					// A vector's sample is one value, even without one.
					values = max(values, 1)
				}
				n += values
				return ok
			})
		})
	})
	return n, ok
}

// object reads {"key": value, …}, calling member for each key with the
// decoder at its value, which member must read.
func (d *decoder) object(member func(key string) bool) bool {
	return d.members(func() bool {
		key, ok := d.anyString()
		return ok && d.consume(':') && member(key)
	})
}

// members reads {member, …}, calling member for each, which must read it
// whole (key, colon and value).
func (d *decoder) members(member func() bool) bool {
	if !d.consume('{') {
		return false
	}
	for first := true; ; first = false {
		if d.consume('}') {
			return true
		}
		if !first && !d.consume(',') {
			return false
		}
		if !member() {
			return false
		}
	}
}

// objectOrSkip is object when an object is next, and skips anything else.
func (d *decoder) objectOrSkip(member func(key string) bool) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '{' {
		return d.object(member)
	}
	return d.skip()
}

// arrayOrSkip is array when an array is next, and skips anything else.
func (d *decoder) arrayOrSkip(item func() bool) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '[' {
		return d.array(item)
	}
	return d.skip()
}

// anyString reads a JSON string, escapes included.
func (d *decoder) anyString() (string, bool) {
	d.space()
	start := d.i
	if !d.skipString() {
		return "", false
	}
	raw := d.b[start:d.i]
	if !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// skipString moves past a string, escapes included.
func (d *decoder) skipString() bool {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	for d.i++; d.i < len(d.b); d.i++ {
		switch d.b[d.i] {
		case '\\':
			d.i++
		case '"':
			d.i++
			return true
		}
	}
	return false
}

// skip moves past one value of any kind. Nesting is counted, not
// recursed into, so that no depth of brackets can exhaust the stack.
func (d *decoder) skip() bool {
	d.space()
	depth := 0
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case '"':
			if !d.skipString() {
				return false
			}
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return false
			}
			depth--
			d.i++
		case ',', ':':
			if depth == 0 {
				return false
			}
			d.i++
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			// A number or a literal.
			for d.i < len(d.b) && !strings.ContainsRune(",:]} \t\n\r", rune(d.b[d.i])) {
				d.i++
			}
		}
		if depth == 0 {
			return true
		}
	}
	return false
}
