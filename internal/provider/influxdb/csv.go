package influxdb

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/condition"
)

// The annotated CSV of Flux's query API, read as influxdb-client-go reads
// it for Argo (QueryTableResult.Next, FluxRecord.Value), but keeping of
// each record only its _value: the result is the list of every record's
// _value, of every table, typed by the table's #datatype annotation.
//
// A table starts with its annotation rows (#datatype, #group, #default),
// then a header row of column names, then its records; the first column of
// every row is the annotation's name, empty for the header and the
// records. An error table's header is "error" (and "reference"), and its
// one record the error's message.

// csvReader reads the rows of an answer, which it may change in place (a
// quoted field's doubled quotes are undone where they are).
type csvReader struct {
	b    []byte
	i    int
	line int
	// fields is the current row's fields, slices of b.
	fields [][]byte
}

// row reads the next row that is not blank into r.fields; false at the
// end of the answer.
func (r *csvReader) row() (bool, error) {
	for r.i < len(r.b) {
		r.line++
		r.fields = r.fields[:0]
		if c := r.b[r.i]; c == '\n' || c == '\r' {
			r.skipLineEnd()
			continue // a blank line
		}
		for {
			f, err := r.field()
			if err != nil {
				return false, err
			}
			r.fields = append(r.fields, f)
			if r.i >= len(r.b) || r.b[r.i] != ',' {
				break
			}
			r.i++
		}
		r.skipLineEnd()
		return true, nil
	}
	return false, nil
}

func (r *csvReader) skipLineEnd() {
	if r.i < len(r.b) && r.b[r.i] == '\r' {
		r.i++
	}
	if r.i < len(r.b) && r.b[r.i] == '\n' {
		r.i++
	}
}

// field reads one field, up to the comma or the line's end after it.
func (r *csvReader) field() ([]byte, error) {
	start := r.i
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case ',', '\n', '\r':
				return r.b[start:r.i], nil
			case '"':
				return nil, r.errorf("a bare \" in a field that is not quoted")
			}
			r.i++
		}
		return r.b[start:r.i], nil
	}
	// A quoted field: "" is a quote; undone in place.
	r.i++
	out := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		r.i++
		if c == '\n' {
			r.line++
		}
		if c != '"' {
			r.b[out] = c
			out++
			continue
		}
		if r.i < len(r.b) && r.b[r.i] == '"' {
			r.b[out] = '"'
			out++
			r.i++
			continue
		}
		if r.i < len(r.b) && r.b[r.i] != ',' && r.b[r.i] != '\n' && r.b[r.i] != '\r' {
			return nil, r.errorf("a quote in a quoted field that is not doubled")
		}
		return r.b[start+1 : out], nil
	}
	return nil, r.errorf("a quoted field that does not end")
}

func (r *csvReader) errorf(format string, args ...any) error {
	return fmt.Errorf("the answer is not valid CSV: line %d: %s", r.line, fmt.Sprintf(format, args...))
}

// table is what of the current table the result needs: the datatype and
// default of its _value column.
type table struct {
	columns   int
	datatypes [][]byte
	defaults  [][]byte
	hasTypes  bool
	// value is the _value column's index among the columns after the
	// annotation's; -1 when the table has none (its records' _value is
	// nil, as FluxRecord.Value has it).
	value int
	// named: the header row has been read; errorTable: it is an error's.
	named, errorTable bool
}

// errNoAnnotations and its kin are influxdb-client-go's messages.
var (
	errNoAnnotations = errors.New("parsing error, annotations not found")
	errNoDatatype    = errors.New("parsing error, datatype annotation not found")
)

// read reads an answer's records, and returns each one's _value; more
// than maxValues is an error. The answer's fields are read in place.
func (sc *scratch) read(body []byte, maxValues int) (*result, error) {
	// The scratch's own, so that it is not allocated: what the
	// measurement keeps of it, its list of values, is made anew.
	values := &sc.values
	*values = result{}
	r := &sc.csv
	r.b, r.i, r.line, r.fields = body, 0, 0, r.fields[:0]
	t := &sc.table
	*t = table{datatypes: t.datatypes[:0], defaults: t.defaults[:0]}
	started := false
	annotating := false
	for {
		ok, err := r.row()
		if err != nil || !ok {
			return values, err
		}
		if len(r.fields) <= 1 {
			continue // as the client does
		}
		first := r.fields[0]
		if len(first) > 0 && first[0] == '#' {
			if !annotating {
				*t = table{columns: len(r.fields) - 1, value: -1, datatypes: t.datatypes[:0], defaults: t.defaults[:0]}
				started, annotating = true, true
			}
		}
		if !started {
			return values, errNoAnnotations
		}
		if len(r.fields)-1 != t.columns {
			return values, fmt.Errorf("parsing error, row has different number of columns than the table: %d vs %d", len(r.fields)-1, t.columns)
		}
		switch string(first) {
		case "#datatype":
			t.datatypes = append(t.datatypes[:0], r.fields[1:]...)
			t.hasTypes = true
			continue
		case "#default":
			t.defaults = append(t.defaults[:0], r.fields[1:]...)
			continue
		case "":
		default:
			if first[0] == '#' {
				continue // #group, and annotations the result does not need
			}
			return values, fmt.Errorf("parsing error, a row's first column must be empty or an annotation, not %q", clip(string(first)))
		}
		if annotating {
			annotating = false
			if !t.hasTypes {
				return values, errNoDatatype
			}
			t.named = true
			if string(r.fields[1]) == "error" {
				t.errorTable = true
				continue
			}
			for i, name := range r.fields[1:] {
				if string(name) == "_value" {
					t.value = i
					break
				}
			}
			continue
		}
		if t.errorTable {
			return values, queryError(r.fields)
		}
		if values.len() >= maxValues {
			return values, tooManyValues(maxValues)
		}
		v, f, isFloat, err := t.valueOf(r.fields[1:])
		switch {
		case err != nil:
			return values, err
		case isFloat:
			values.addFloat(f)
		default:
			values.add(v)
		}
	}
}

// valueOf is a record's _value, converted by its datatype as the client
// converts it; nil when it is empty and has no default. A double is f,
// isFloat set, so that a list of doubles is kept as []float64.
func (t *table) valueOf(fields [][]byte) (v any, f float64, isFloat bool, err error) {
	if t.value < 0 {
		return nil, 0, false, nil
	}
	s := fields[t.value]
	if len(s) == 0 && t.value < len(t.defaults) {
		s = t.defaults[t.value]
	}
	if len(s) == 0 {
		return nil, 0, false, nil
	}
	var typ []byte
	if t.value < len(t.datatypes) {
		typ = t.datatypes[t.value]
	}
	if string(typ) == "double" {
		f, err = strconv.ParseFloat(string(s), 64)
		return nil, f, err == nil, err
	}
	v, err = convert(string(typ), string(s))
	return v, 0, false, err
}

// convert is a value of a datatype other than double, as the client
// converts it.
func convert(typ, s string) (any, error) {
	switch typ {
	case "long":
		return strconv.ParseInt(s, 10, 64)
	case "unsignedLong":
		return strconv.ParseUint(s, 10, 64)
	case "string":
		return s, nil
	case "boolean":
		return !strings.EqualFold(s, "false"), nil
	case "dateTime:RFC3339":
		return time.Parse(time.RFC3339, s)
	case "dateTime:RFC3339Nano":
		return time.Parse(time.RFC3339Nano, s)
	case "duration":
		return time.ParseDuration(s)
	case "base64Binary":
		return base64.StdEncoding.DecodeString(s)
	}
	return nil, fmt.Errorf("_value has unknown data type %s", clip(typ))
}

// result is the list of _value an answer gives, as Argo's conditions see
// it: a condition.Doubles while every value is a double (the usual
// answer, kept without a value boxed each), else a []any of the client's
// types.
type result struct {
	floats []float64
	values []any
}

func (r *result) len() int { return len(r.floats) + len(r.values) }

func (r *result) addFloat(f float64) {
	if r.values != nil {
		r.values = append(r.values, f)
		return
	}
	r.floats = append(r.floats, f)
}

func (r *result) add(v any) {
	if r.values == nil {
		r.values = make([]any, len(r.floats), len(r.floats)+1)
		for i, f := range r.floats {
			r.values[i] = f
		}
		r.floats = nil
	}
	r.values = append(r.values, v)
}

// list is the result as the conditions see it: a list of doubles is
// condition.Doubles, which they read as Argo's []interface{}.
func (r *result) list() any {
	if r.values != nil {
		return r.values
	}
	return condition.Doubles(r.floats)
}

// queryError is the error an error table holds: its message (or "unknown
// query error") and its reference, as the client writes them.
func queryError(fields [][]byte) error {
	msg := "unknown query error"
	if len(fields) > 1 && len(fields[1]) > 0 {
		msg = string(fields[1])
	}
	if len(fields) > 2 && len(fields[2]) > 0 {
		msg += "," + string(fields[2])
	}
	return errors.New(clip(msg))
}

// tooManyValues is the error of an answer of more than max values.
func tooManyValues(max int) error {
	return fmt.Errorf("the answer has more than the %d values a measurement may have (--max-result-values); narrow the query or its range", max)
}

// clip keeps a quoted value in a message short.
func clip(s string) string {
	const max = 512
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
