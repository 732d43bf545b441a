package graphite

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// reference reads an answer as Argo does, with encoding/json
// (graphiteResponse, dataPoint.UnmarshalJSON): the first series' non-null
// values and its datapoints' count, or whether it refuses the answer.
func reference(body []byte) (values []float64, points int, ok bool) {
	var resp []struct {
		Target     *string           `json:"target"`
		Datapoints []json.RawMessage `json:"datapoints"`
	}
	if json.Unmarshal(body, &resp) != nil {
		return nil, 0, false
	}
	for i, t := range resp {
		for _, raw := range t.Datapoints {
			var p []any
			if json.Unmarshal(raw, &p) != nil || len(p) != 2 {
				return nil, 0, false
			}
			var v float64
			null := false
			switch x := p[0].(type) {
			case nil:
				null = true
			case float64:
				v = x
			case string:
				f, err := strconv.ParseFloat(x, 64)
				if err != nil {
					return nil, 0, false
				}
				v = f
			default:
				return nil, 0, false
			}
			switch x := p[1].(type) {
			case nil, float64:
			case string:
				if _, err := strconv.ParseInt(x, 10, 64); err != nil {
					return nil, 0, false
				}
			default:
				return nil, 0, false
			}
			if i == 0 {
				points++
				if !null {
					values = append(values, v)
				}
			}
		}
	}
	return values, points, true
}

// FuzzDecode holds the answer's reader to Argo's encoding/json reading:
// the same answers refused, the same values of the first series, and
// never a crash.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`[{"target":"a","datapoints":[[1,2],[null,3],["4.5","5"]]},{"target":"b","datapoints":[[1,2]]}]`,
		`[]`, `null`, `[null]`, `[{"DataPoints":[[1,1]]}]`, `[{"target":1}]`, `[{"datapoints":[[1]]}]`,
		`[{"datapoints":[[true,1]]}]`, `[{"datapoints":[[1,"1.5"]]}]`, `{"a":1}`, `[{"datapoints":{}}]`,
		`[{"tar\u0067et":"x","datapoints":[[1e400,1]]}]`, ` [ { "datapoints" : [ [ 1 , 1 ] ] } ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAnswer(body, math.MaxInt32)
		want, points, ok := reference(body)
		if ok != (err == nil) {
			t.Fatalf("%s: refused %v (%v), Argo refuses %v", body, err != nil, err, !ok)
		}
		if !ok {
			return
		}
		if got.points != points || len(got.values) != len(want) {
			t.Fatalf("%s: %d points %v, Argo %d %v", body, got.points, got.values, points, want)
		}
		for i := range want {
			if got.values[i] != want[i] && !(math.IsNaN(got.values[i]) && math.IsNaN(want[i])) {
				t.Fatalf("%s: %v, Argo %v", body, got.values, want)
			}
		}
	})
}
