package prometheus

import (
	"strconv"
)

// fastAnswer is a successful query response read by decodeFast.
type fastAnswer struct {
	scalar bool
	// value is the scalar's value.
	value float64
	// values are a vector's samples, or a matrix's series one after the
	// other, as convert flattens them. Never nil.
	values   []float64
	warnings []string
	infos    []string
}

// decodeFast reads a successful query response in the form Prometheus,
// Thanos, Mimir and Cortex write it, about ten times cheaper than
// client_golang, whose decoding unmarshals every sample and every result
// type through encoding/json afresh (and grows a measurement's goroutine
// stack doing so).
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
func decodeFast(body []byte) (a fastAnswer, ok bool) {
	d := decoder{b: body}
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
	return a, seenStatus && seenData && d.i == len(d.b)
}

// decoder is a cursor over the response. Every method reports false on
// anything it does not recognise, and the response is then not decoded
// here at all.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) space() {
	for d.i < len(d.b) {
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
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, true
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
		ok = d.pair(&a.value)
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
				var v float64
				ok = d.pair(&v)
				*values = append(*values, v)
			} else {
				ok = d.array(func() bool {
					var v float64
					if !d.pair(&v) {
						return false
					}
					*values = append(*values, v)
					return true
				})
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
		name, ok := d.plainString()
		if !ok || !classicLabelName(name) || !d.consume(':') {
			return false
		}
		if _, ok := d.plainString(); !ok {
			return false
		}
	}
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

// pair reads [timestamp, "value"], exactly two elements. The timestamp is
// checked, not kept: a JSON number without an exponent and with at most 18
// integer digits, which model.Time parses without error.
func (d *decoder) pair(value *float64) bool {
	if !d.consume('[') || !d.timestamp() || !d.consume(',') {
		return false
	}
	raw, ok := d.plainString()
	if !ok {
		return false
	}
	// client_golang parses the string's bytes with strconv.ParseFloat
	// too, so NaN, +Inf and every other spelling read the same.
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return false
	}
	*value = v
	return d.consume(']')
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
// value as model.SampleValue.String writes it.
func appendDisplay(buf []byte, values []float64) []byte {
	buf = append(buf, '[')
	for i, v := range values {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendFloat(buf, v, 'f', -1, 64)
	}
	return append(buf, ']')
}
