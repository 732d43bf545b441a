package graphite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// series is what a measurement keeps of an answer: the first series'
// datapoints and their non-null values.
type series struct {
	points int
	values []float64
}

// answer is the render API's JSON answer, read as Argo reads it into its
// graphiteResponse ([{target, datapoints: [[value, time], …]}, …]): the
// same shapes accepted and refused, the same case-insensitive keys, but
// only the first series' values kept, and every series' datapoints
// counted against the bound.
type answer struct {
	first     series
	maxValues int
	total     int
}

// decodeAnswer reads body; the error is the measurement's.
func decodeAnswer(body []byte, maxValues int) (series, error) {
	if !json.Valid(body) {
		// encoding/json's own message of what is wrong.
		var raw json.RawMessage
		err := json.Unmarshal(body, &raw)
		return series{}, fmt.Errorf("the answer is not Graphite's JSON: %v", err)
	}
	a := answer{maxValues: maxValues}
	if err := a.UnmarshalJSON(body); err != nil {
		var tooMany *tooManyError
		if errors.As(err, &tooMany) {
			return series{}, err
		}
		return series{}, fmt.Errorf("the answer is not Graphite's JSON: %v", err)
	}
	return a.first, nil
}

type tooManyError struct{ max int }

func (e *tooManyError) Error() string {
	return fmt.Sprintf("the answer has more than the %d datapoints a measurement may have, all series together (--max-result-values); narrow the query or its window", e.max)
}

// UnmarshalJSON reads the answer. data is valid JSON: encoding/json
// checks the whole document before it calls this.
func (a *answer) UnmarshalJSON(data []byte) error {
	r := scanner{b: data}
	r.space()
	if r.literal("null") {
		return nil
	}
	if !r.open('[') {
		return fmt.Errorf("a list of series was expected, not %s", r.kind())
	}
	for i := 0; r.more(']'); i++ {
		if err := a.target(&r, i == 0); err != nil {
			return err
		}
	}
	return nil
}

// target reads one series; only the first keeps its values.
func (a *answer) target(r *scanner, first bool) error {
	if r.literal("null") {
		return nil
	}
	if !r.open('{') {
		return fmt.Errorf("a series was expected, not %s", r.kind())
	}
	for r.more('}') {
		key := r.key()
		switch {
		case bytes.EqualFold(key, []byte("target")):
			if !r.literal("null") && !r.skipString() {
				return fmt.Errorf("a series' target must be a string, not %s", r.kind())
			}
		case bytes.EqualFold(key, []byte("datapoints")):
			if err := a.datapoints(r, first); err != nil {
				return err
			}
		default:
			r.skip()
		}
	}
	return nil
}

// datapoints reads a series' datapoints, each [value, time] as Argo's
// dataPoint.UnmarshalJSON accepts it: a value that is null, a number or a
// string holding one; a time that is null, a number or a string holding
// an integer.
func (a *answer) datapoints(r *scanner, first bool) error {
	if first {
		a.first = series{}
	}
	if r.literal("null") {
		return nil
	}
	if !r.open('[') {
		return fmt.Errorf("a series' datapoints must be a list, not %s", r.kind())
	}
	for r.more(']') {
		if a.total++; a.total > a.maxValues {
			return &tooManyError{a.maxValues}
		}
		v, null, err := point(r)
		if err != nil {
			return err
		}
		if first {
			a.first.points++
			if !null {
				a.first.values = append(a.first.values, v)
			}
		}
	}
	return nil
}

// point reads one datapoint.
func point(r *scanner) (float64, bool, error) {
	if !r.open('[') {
		return 0, false, fmt.Errorf("error unmarshaling data point: a [value, time] list was expected, not %s", r.kind())
	}
	var v float64
	null := true
	n := 0
	for r.more(']') {
		switch n {
		case 0:
			var err error
			if v, null, err = r.number(false); err != nil {
				return 0, false, fmt.Errorf("error unmarshaling value: %v", err)
			}
		case 1:
			if _, _, err := r.number(true); err != nil {
				return 0, false, fmt.Errorf("error unmarshaling timestamp: %v", err)
			}
		default:
			r.skip()
		}
		n++
	}
	if n != 2 {
		return 0, false, fmt.Errorf("error unmarshaling data point: %d elements, not [value, time]", n)
	}
	return v, null, nil
}

// scanner reads valid JSON.
type scanner struct {
	b []byte
	i int
}

func (r *scanner) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\n' || r.b[r.i] == '\r') {
		r.i++
	}
}

// literal consumes word (null, true, false) when it comes next.
func (r *scanner) literal(word string) bool {
	r.space()
	if bytes.HasPrefix(r.b[r.i:], []byte(word)) {
		r.i += len(word)
		return true
	}
	return false
}

// open consumes the delimiter c when it comes next.
func (r *scanner) open(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// more reports whether a list or an object has another element, and
// consumes the comma before it or the closing delimiter after the last.
func (r *scanner) more(end byte) bool {
	r.space()
	switch {
	case r.i >= len(r.b):
		return false
	case r.b[r.i] == end:
		r.i++
		return false
	case r.b[r.i] == ',':
		r.i++
		r.space()
	}
	return true
}

// kind names the value that comes next, for messages.
func (r *scanner) kind() string {
	r.space()
	if r.i >= len(r.b) {
		return "nothing"
	}
	switch c := r.b[r.i]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

// key reads an object's key and the colon after it: the key as it is
// written, quotes left out, or decoded when it holds an escape.
func (r *scanner) key() []byte {
	r.space()
	start := r.i
	r.skipString()
	raw := r.b[start:r.i]
	r.open(':')
	if len(raw) < 2 {
		return nil
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return nil
	}
	return []byte(k)
}

// skipString consumes a string when one comes next.
func (r *scanner) skipString() bool {
	r.space()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return false
	}
	for r.i++; r.i < len(r.b); r.i++ {
		switch r.b[r.i] {
		case '\\':
			r.i++
		case '"':
			r.i++
			return true
		}
	}
	return true
}

// skip consumes one value.
func (r *scanner) skip() {
	r.space()
	if r.i >= len(r.b) {
		return
	}
	switch r.b[r.i] {
	case '"':
		r.skipString()
	case '[', '{':
		depth := 0
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case '"':
				r.skipString()
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
			r.i++
			if depth == 0 {
				return
			}
		}
	default:
		for r.i < len(r.b) && strings.IndexByte(",]} \t\n\r", r.b[r.i]) < 0 {
			r.i++
		}
	}
}

// number reads a datapoint's value (integer false) or time (integer
// true): null, a number, or a string holding one.
func (r *scanner) number(integer bool) (float64, bool, error) {
	r.space()
	if r.literal("null") {
		return 0, true, nil
	}
	start := r.i
	switch r.kind() {
	case "a number":
		r.skip()
		f, err := strconv.ParseFloat(string(r.b[start:r.i]), 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s is not a float64", r.b[start:r.i])
		}
		return f, false, nil
	case "a string":
		r.skipString()
		var s string
		if json.Unmarshal(r.b[start:r.i], &s) != nil {
			return 0, false, errors.New("the string does not decode")
		}
		if integer {
			n, err := strconv.ParseInt(s, 10, 64)
			return float64(n), false, err
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, false, err
	default:
		kind := r.kind()
		r.skip()
		return 0, false, fmt.Errorf("%s, not a number", kind)
	}
}
