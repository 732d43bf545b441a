package datadog

import (
	"errors"
	"fmt"
	"strconv"
)

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
	*p = points{}
	r := reader{b: data}
	if r.null() {
		return nil
	}
	if !r.open('[') {
		return typeError("pointlist", "[][]float64")
	}
	for !r.close(']') {
		p.n++
		p.lastLen, p.lastNull, p.lastValue = 0, false, 0
		if r.null() {
			r.comma()
			continue
		}
		if !r.open('[') {
			return typeError("pointlist", "[][]float64")
		}
		for i := 0; !r.close(']'); i++ {
			v, null, err := r.number()
			if err != nil {
				return err
			}
			p.lastLen++
			if i == 1 {
				p.lastValue, p.lastNull = v, null
			}
			r.comma()
		}
		r.comma()
	}
	return nil
}

// UnmarshalJSON reads a column's values: null, or a list of numbers and
// nulls.
func (s *scalars) UnmarshalJSON(data []byte) error {
	*s = scalars{}
	r := reader{b: data}
	if r.null() {
		return nil
	}
	if !r.open('[') {
		return typeError("values", "[]*float64")
	}
	for !r.close(']') {
		v, null, err := r.number()
		if err != nil {
			return err
		}
		if s.n == 0 {
			s.first, s.firstNull = v, null
		}
		s.n++
		r.comma()
	}
	return nil
}

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
