package datadog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"
)

// unsafeString is b as a string without a copy, for a key compared and
// dropped while b is not changed.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// The answers as canaryd decodes them: Argo's shapes (datadogResponseV1
// and V2, whose numbers are float64 and *float64), but keeping of each
// list only what the result needs, so that a measurement holds one number
// whatever the answer's size. A list of another type than Argo's is an
// error, as in Argo.

type responseV1 struct {
	Series []seriesV1 `json:"series"`
}

type seriesV1 struct {
	Pointlist points `json:"pointlist"`
}

type responseV2 struct {
	Data struct {
		Attributes struct {
			Columns []columnV2 `json:"columns"`
		} `json:"attributes"`
		Errors string `json:"errors"`
	} `json:"data"`
}

type columnV2 struct {
	Values scalars `json:"values"`
}

// points is a v1 pointlist, [][]float64 in Argo: how many points, and
// the last one's length and value (its second number), null read as such.
type points struct {
	n         int
	lastLen   int
	lastNull  bool
	lastValue float64
}

// scalars is a v2 column's values, []*float64 in Argo: how many, and the
// first.
type scalars struct {
	n         int
	firstNull bool
	first     float64
}

// UnmarshalJSON reads a pointlist: null, or a list whose elements are
// null or lists of numbers and nulls. data is valid JSON (encoding/json
// checks the whole document first).
func (p *points) UnmarshalJSON(data []byte) error {
	r := reader{b: data}
	var err error
	*p, err = r.points()
	return err
}

// UnmarshalJSON reads a column's values: null, or a list of numbers and
// nulls.
func (s *scalars) UnmarshalJSON(data []byte) error {
	r := reader{b: data}
	var err error
	*s, err = r.scalars()
	return err
}

// points reads a pointlist at r.
func (r *reader) points() (points, error) {
	var p points
	if r.null() {
		return p, nil
	}
	if !r.open('[') {
		return p, typeError("pointlist", "[][]float64")
	}
	for !r.close(']') {
		p.n++
		p.lastLen, p.lastNull, p.lastValue = 0, false, 0
		if r.null() {
			r.comma()
			continue
		}
		if !r.open('[') {
			return p, typeError("pointlist", "[][]float64")
		}
		for i := 0; !r.close(']'); i++ {
			v, null, err := r.number()
			if err != nil {
				return p, err
			}
			p.lastLen++
			if i == 1 {
				p.lastValue, p.lastNull = v, null
			}
			r.comma()
		}
		r.comma()
	}
	return p, nil
}

// scalars reads a column's values at r.
func (r *reader) scalars() (scalars, error) {
	var s scalars
	if r.null() {
		return s, nil
	}
	if !r.open('[') {
		return s, typeError("values", "[]*float64")
	}
	for !r.close(']') {
		v, null, err := r.number()
		if err != nil {
			return s, err
		}
		if s.n == 0 {
			s.first, s.firstNull = v, null
		}
		s.n++
		r.comma()
	}
	return s, nil
}

// The fast path: an answer read without encoding/json's reflection, for
// the common answer only. Whatever it does not read exactly as
// encoding/json would (a key spelt in another case or with escapes, a key
// given twice, a value of another type, an errors text with escapes) makes
// it give up, and the answer is decoded by encoding/json as before.

// fastV1 reads a v1 answer: the first series' points and the count of all
// points.
func fastV1(b []byte) (first points, series, total int, ok bool) {
	r := reader{b: b}
	if !r.open('{') {
		return first, 0, 0, false
	}
	seen := false
	for !r.close('}') {
		key, ok := r.key()
		switch {
		case !ok:
			return first, 0, 0, false
		case key == "series":
			if seen {
				return first, 0, 0, false
			}
			seen = true
			if !r.open('[') {
				return first, 0, 0, false
			}
			for !r.close(']') {
				p, has, ok := r.series()
				if !ok || !has {
					return first, 0, 0, false // a series without pointlist: encoding/json's
				}
				if series == 0 {
					first = p
				}
				total += p.n
				series++
				r.comma()
			}
		case foldEq(key, "series"):
			return first, 0, 0, false
		default:
			r.skip()
		}
		r.comma()
	}
	return first, series, total, seen && series > 0
}

// fastV2 reads a v2 answer: the first column's values, the count of all
// values and the errors.
func fastV2(b []byte) (first scalars, columns, total int, errs string, ok bool) {
	r := reader{b: b}
	var seenData, seenAttrs, seenCols, seenErrs bool
	fail := func() (scalars, int, int, string, bool) { return scalars{}, 0, 0, "", false }
	if !r.open('{') {
		return fail()
	}
	for !r.close('}') {
		key, ok := r.key()
		switch {
		case !ok:
			return fail()
		case key == "data":
			if seenData {
				return fail()
			}
			seenData = true
			if !r.open('{') {
				return fail()
			}
			for !r.close('}') {
				key, ok := r.key()
				switch {
				case !ok:
					return fail()
				case key == "attributes":
					if seenAttrs {
						return fail()
					}
					seenAttrs = true
					if !r.open('{') {
						return fail()
					}
					for !r.close('}') {
						key, ok := r.key()
						switch {
						case !ok:
							return fail()
						case key == "columns":
							if seenCols {
								return fail()
							}
							seenCols = true
							if !r.open('[') {
								return fail()
							}
							for !r.close(']') {
								s, has, ok := r.column()
								if !ok || !has {
									return fail()
								}
								if columns == 0 {
									first = s
								}
								total += s.n
								columns++
								r.comma()
							}
						case foldEq(key, "columns"):
							return fail()
						default:
							r.skip()
						}
						r.comma()
					}
				case key == "errors":
					if seenErrs {
						return fail()
					}
					seenErrs = true
					s, ok := r.plainString()
					if !ok {
						return fail()
					}
					errs = s
				case foldEq(key, "attributes") || foldEq(key, "errors"):
					return fail()
				default:
					r.skip()
				}
				r.comma()
			}
		case foldEq(key, "data"):
			return fail()
		default:
			r.skip()
		}
		r.comma()
	}
	return first, columns, total, errs, seenCols && columns > 0
}

// member reads an object's members at r, after its '{', up to the next
// one named name, and leaves r at its value (found); at the object's end,
// its '}' read, found is false. ok is false when a key has an escape or is
// name spelt in another case, which encoding/json would match too. A
// function reading the value, passed in, would make r escape to the heap:
// the caller reads it.
func (r *reader) member(name string) (found, ok bool) {
	for !r.close('}') {
		key, ok := r.key()
		switch {
		case !ok || foldEq(key, name):
			return false, false
		case key == name:
			return true, true
		}
		r.skip()
		r.comma()
	}
	return false, true
}

// series reads a v1 series at r, an object: its pointlist, which has
// says it had. ok is false when it is not an object, or its pointlist is
// not one, given twice or spelt otherwise.
func (r *reader) series() (p points, has, ok bool) {
	if !r.open('{') {
		return p, false, false
	}
	for {
		found, ok := r.member("pointlist")
		switch {
		case !ok || found && has:
			return p, false, false
		case !found:
			return p, has, true
		}
		has = true
		var err error
		if p, err = r.points(); err != nil {
			return p, false, false
		}
		r.comma()
	}
}

// column reads a v2 column at r, an object: its values, which has says
// it had. ok is false when it is not an object, or its values are not a
// list of numbers, given twice or spelt otherwise.
func (r *reader) column() (s scalars, has, ok bool) {
	if !r.open('{') {
		return s, false, false
	}
	for {
		found, ok := r.member("values")
		switch {
		case !ok || found && has:
			return s, false, false
		case !found:
			return s, has, true
		}
		has = true
		var err error
		if s, err = r.scalars(); err != nil {
			return s, false, false
		}
		r.comma()
	}
}

// key reads an object's key and its colon; ok is false for a key with an
// escape.
func (r *reader) key() (string, bool) {
	s, ok := r.rawString()
	if !ok || strings.IndexByte(s, '\\') >= 0 || !r.open(':') {
		return "", false
	}
	return s, true
}

// plainString reads a string without escapes, as a new string.
func (r *reader) plainString() (string, bool) {
	s, ok := r.rawString()
	if !ok || strings.IndexByte(s, '\\') >= 0 {
		return "", false
	}
	return strings.Clone(s), true
}

// rawString reads a string and returns its bytes between the quotes,
// escapes as they are, without copying them.
func (r *reader) rawString() (string, bool) {
	r.space()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	for i := start; i < len(r.b); i++ {
		switch r.b[i] {
		case '\\':
			i++
		case '"':
			r.i = i + 1
			return unsafeString(r.b[start:i]), true
		}
	}
	return "", false
}

// skip skips one value (the text is valid JSON).
func (r *reader) skip() {
	r.space()
	depth := 0
	for r.i < len(r.b) {
		switch c := r.b[r.i]; c {
		case '"':
			if _, ok := r.rawString(); !ok {
				r.i = len(r.b) // not JSON: nothing more is read
				return
			}
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return // the end of the enclosing value: not ours
			}
			if depth == 0 {
				r.i++
				return
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return
			}
		default:
			if depth == 0 { // a number or a literal
				for r.i < len(r.b) && strings.IndexByte(",}] \t\n\r", r.b[r.i]) < 0 {
					r.i++
				}
				return
			}
		}
		r.i++
	}
}

// foldEq reports whether key is name in another case, which encoding/json
// would match too.
func foldEq(key, name string) bool { return key != name && strings.EqualFold(key, name) }

// typeError is encoding/json's message for a value of another type.
func typeError(field, want string) error {
	return fmt.Errorf("json: cannot unmarshal into Go struct field %s of type %s", field, want)
}

// reader reads tokens of a valid JSON text.
type reader struct {
	b []byte
	i int
}

func (r *reader) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\n' || r.b[r.i] == '\r') {
		r.i++
	}
}

// open and close consume c when it comes next.
func (r *reader) open(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *reader) close(c byte) bool {
	if r.open(c) {
		return true
	}
	return r.i >= len(r.b) // cannot happen in valid JSON; ends the loop
}

func (r *reader) comma() { r.open(',') }

func (r *reader) null() bool {
	r.space()
	if len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// number reads a number or null; anything else is an error, as Argo's
// float64 would have it.
func (r *reader) number() (float64, bool, error) {
	if r.null() {
		return 0, true, nil
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		r.i++
	}
	if r.i == start {
		return 0, false, errors.New("json: cannot unmarshal a value that is not a number into Go value of type float64")
	}
	v, err := strconv.ParseFloat(string(r.b[start:r.i]), 64)
	if err != nil {
		return 0, false, fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", r.b[start:r.i])
	}
	return v, false, nil
}
