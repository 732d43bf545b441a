package newrelic

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeAnswer decodes a NerdGraph answer of the usual shape into a as
// encoding/json would (its keys matched in any case, results' values as
// any: float64, string, bool, nil, []any, map[string]any), without the
// allocations of its reflection; ok is false for a body that is not JSON
// or whose shape is not the usual one, which json.Unmarshal then decodes,
// with its own error.
func decodeAnswer(body []byte, a *answer) (ok bool) {
	if !json.Valid(body) {
		return false
	}
	r := jsonReader{b: body, keys: a.keys}
	return r.object(func(key []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("errors")):
			return r.errors(a)
		case bytes.EqualFold(key, []byte("data")):
			return r.path(func() bool { return r.results(a) }, "actor", "account", "nrql", "results")
		}
		r.skip()
		return true
	})
}

// jsonReader reads a valid JSON text.
type jsonReader struct {
	b []byte
	i int
	// keys, when not nil, are names readKey gives again.
	keys *[]string
}

// maxKeptKeys and maxKeptKey bound the names readKey keeps: a row's
// few values, under short names.
const (
	maxKeptKeys = 8
	maxKeptKey  = 64
)

// readKey is key as a string: one of r.keys when it is one of them, so
// that the names of a row's values, the same at every measurement of a
// query, are not made again each time; a new short name is kept while
// there is room.
func (r *jsonReader) readKey(key []byte) string {
	if r.keys == nil {
		return string(key)
	}
	for _, k := range *r.keys {
		if k == string(key) {
			return k
		}
	}
	s := string(key)
	if len(*r.keys) < maxKeptKeys && len(s) <= maxKeptKey {
		*r.keys = append(*r.keys, s)
	}
	return s
}

func (r *jsonReader) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\n' || r.b[r.i] == '\r') {
		r.i++
	}
}

// next is the next value's first byte.
func (r *jsonReader) next() byte {
	r.space()
	return r.b[r.i]
}

// null consumes a null.
func (r *jsonReader) null() bool {
	if r.next() == 'n' {
		r.i += 4
		return true
	}
	return false
}

// object reads an object, calling member with each key, positioned at
// its value, which member must consume; false when the value is not an
// object or member says so. A null is no object, and no error, as
// encoding/json has it.
func (r *jsonReader) object(member func(key []byte) bool) bool {
	if r.null() {
		return true
	}
	if r.next() != '{' {
		return false
	}
	r.i++
	for {
		c := r.next()
		if c == '}' {
			r.i++
			return true
		}
		if c == ',' {
			r.i++
			r.space()
		}
		key, plain := r.rawString()
		if !plain {
			return false
		}
		r.space()
		r.i++ // the colon
		if !member(key) {
			return false
		}
	}
}

// array reads an array, calling elem positioned at each element, which
// elem must consume; a null is an empty array.
func (r *jsonReader) array(elem func() bool) bool {
	if r.null() {
		return true
	}
	if r.next() != '[' {
		return false
	}
	r.i++
	for {
		c := r.next()
		if c == ']' {
			r.i++
			return true
		}
		if c == ',' {
			r.i++
		}
		if !elem() {
			return false
		}
	}
}

// path descends through objects by the keys, and calls at at the last
// one's value; every other member is skipped.
func (r *jsonReader) path(at func() bool, keys ...string) bool {
	if len(keys) == 0 {
		return at()
	}
	return r.object(func(key []byte) bool {
		if bytes.EqualFold(key, []byte(keys[0])) {
			return r.path(at, keys[1:]...)
		}
		r.skip()
		return true
	})
}

// rawString reads a string's bytes; plain is false for one with an
// escape or invalid UTF-8 (or a value that is not a string), which the
// caller leaves to encoding/json.
func (r *jsonReader) rawString() (s []byte, plain bool) {
	if r.next() != '"' {
		return nil, false
	}
	start := r.i + 1
	for i := start; i < len(r.b); i++ {
		switch r.b[i] {
		case '\\':
			return nil, false
		case '"':
			r.i = i + 1
			// encoding/json replaces invalid UTF-8; left to it.
			return r.b[start:i], utf8.Valid(r.b[start:i])
		}
	}
	return nil, false
}

// str reads a string value.
func (r *jsonReader) str() (string, bool) {
	if r.null() {
		return "", true
	}
	s, plain := r.rawString()
	return string(s), plain
}

// errors reads the errors' messages and extensions.
func (r *jsonReader) errors(a *answer) bool {
	a.Errors = a.Errors[:0]
	return r.array(func() bool {
		a.Errors = append(a.Errors, gqlError{})
		e := &a.Errors[len(a.Errors)-1]
		return r.object(func(key []byte) bool {
			var ok bool
			switch {
			case bytes.EqualFold(key, []byte("message")):
				e.Message, ok = r.str()
				return ok
			case bytes.EqualFold(key, []byte("extensions")):
				return r.object(func(key []byte) bool {
					switch {
					case bytes.EqualFold(key, []byte("errorClass")):
						e.Extensions.ErrorClass, ok = r.str()
						return ok
					case bytes.EqualFold(key, []byte("error_code")):
						e.Extensions.ErrorCode, ok = r.str()
						return ok
					}
					r.skip()
					return true
				})
			}
			r.skip()
			return true
		})
	})
}

// results reads the rows of the results.
func (r *jsonReader) results(a *answer) bool {
	rows := a.Data.Actor.Account.NRQL.Results[:0]
	ok := r.array(func() bool {
		if r.null() {
			rows = append(rows, nil)
			return true
		}
		if r.next() != '{' {
			return false
		}
		v, ok := r.value()
		rows = append(rows, v.(map[string]any))
		return ok
	})
	a.Data.Actor.Account.NRQL.Results = rows
	return ok
}

// value reads any value as encoding/json decodes it into an any.
func (r *jsonReader) value() (any, bool) {
	switch c := r.next(); {
	case c == '{':
		m := map[string]any{}
		ok := r.object(func(key []byte) bool {
			v, ok := r.value()
			m[r.readKey(key)] = v
			return ok
		})
		return m, ok
	case c == '[':
		list := []any{}
		ok := r.array(func() bool {
			v, ok := r.value()
			list = append(list, v)
			return ok
		})
		return list, ok
	case c == '"':
		s, plain := r.rawString()
		return string(s), plain
	case c == 'n':
		r.i += 4
		return nil, true
	case c == 't':
		r.i += 4
		return true, true
	case c == 'f':
		r.i += 5
		return false, true
	}
	start := r.i
	for r.i < len(r.b) && bytes.IndexByte([]byte("+-.0123456789eE"), r.b[r.i]) >= 0 {
		r.i++
	}
	f, err := strconv.ParseFloat(string(r.b[start:r.i]), 64)
	return f, err == nil
}

// skip consumes a value.
func (r *jsonReader) skip() {
	depth := 0
	for {
		switch c := r.next(); c {
		case '{', '[':
			depth++
			r.i++
		case '}', ']':
			depth--
			r.i++
		case ',', ':':
			r.i++
			continue
		case '"':
			r.i++
			for r.b[r.i] != '"' {
				if r.b[r.i] == '\\' {
					r.i++
				}
				r.i++
			}
			r.i++
		default:
			for r.i < len(r.b) && bytes.IndexByte([]byte(",:]} \t\r\n"), r.b[r.i]) < 0 {
				r.i++
			}
		}
		if depth == 0 {
			return
		}
	}
}
