package countjson

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/canaryd/canaryd/internal/judge"
)

// TestAppendResult: the line is what encoding/json writes of the same
// numbers, with null for those that are not finite.
func TestAppendResult(t *testing.T) {
	r := judge.CountResult{Look: 3, EValue: 1.5e-7, PValue: 1, Decision: judge.DecisionContinue,
		Ratio: judge.RatioEstimate{Estimate: math.NaN(), Lower: 0.25, Upper: math.Inf(1)}}
	const want = `{"look":3,"eValue":1.5e-7,"pValue":1,"ratio":{"estimate":null,"lower":0.25,"upper":null},"decision":"continue"}`
	if got := string(AppendResult(nil, r)); got != want {
		t.Errorf("AppendResult:\n got %s\nwant %s", got, want)
	}
	for _, f := range []float64{0, 1, -2.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 5.668679453516049e-7, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := string(appendFloat(nil, f)); got != string(want) {
			t.Errorf("appendFloat(%g) = %s, encoding/json writes %s", f, got, want)
		}
	}
}

// FuzzParseLook: the parsers agree. A line the fast parsers take, the
// tokenizer takes too, with the same counts; a line either refuses is
// refused with a field error; nothing panics.
func FuzzParseLook(f *testing.F) {
	for _, s := range []string{
		`{"canary":{"bad":1,"total":100},"baseline":{"bad":2,"total":100}}`,
		` { "baseline" : { "total" : 1e3 , "bad" : 0.5 } , "canary" : { "bad" : -0 , "total" : 10 } } `,
		`{"canary":{"bad":01,"total":100},"baseline":{"bad":2,"total":100}}`,
		`{"canary":{"bad":1,"bad":1,"total":100},"baseline":{"bad":2,"total":100}}`,
		`{"canary":{"bad":"NaN","total":100},"baseline":{"bad":2,"total":100}}`,
		`{"canary":{"bad":1e999,"total":100},"baseline":{"bad":2,"total":100}}`,
		`{"c\u0061nary":{"bad":1,"total":100},"baseline":{"bad":2,"total":100}}`,
		`{"canary":{"bad":123456789012345678,"total":1234567890123456789},"baseline":{"bad":2,"total":100}}`,
		`[]`, `null`, `{}`, `{"canary":{"bad":1,"total":100}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := ParseLook(line)
		slow, slowErr := slowLook(line)
		if (err == nil) != (slowErr == nil) {
			t.Fatalf("ParseLook: %v; the tokenizer: %v", err, slowErr)
		}
		if err != nil {
			if _, ok := err.(*judge.FieldError); !ok {
				t.Fatalf("error %T %v, want a *judge.FieldError", err, err)
			}
			return
		}
		if got != slow {
			t.Fatalf("ParseLook %+v, the tokenizer %+v", got, slow)
		}
	})
}

// FuzzParseCounts: the parsers of an interval's counts (a line of
// `canaryd judge --history`, an entry of POST /v1/judge's history) agree,
// as FuzzParseLook's do.
func FuzzParseCounts(f *testing.F) {
	for _, s := range []string{
		`{"bad":1,"total":100}`,
		` { "total" : 1e3 , "bad" : 0.5 } `,
		`{"bad":01,"total":100}`,
		`{"bad":1,"bad":1,"total":100}`,
		`{"bad":"NaN","total":100}`,
		`{"bad":1e999,"total":100}`,
		`{"b\u0061d":1,"total":100}`,
		`{"bad":1,"total":100,"errors":1}`,
		`{"canary":{"bad":1,"total":100},"baseline":{"bad":2,"total":100}}`,
		`{"bad":1,"total":100}{}`,
		`[]`, `null`, `{}`, `{"bad":1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := ParseCounts(line)
		slow, slowErr := slowCounts(line)
		if (err == nil) != (slowErr == nil) {
			t.Fatalf("ParseCounts: %v; the tokenizer: %v", err, slowErr)
		}
		if err != nil {
			if _, ok := err.(*judge.FieldError); !ok {
				t.Fatalf("error %T %v, want a *judge.FieldError", err, err)
			}
			return
		}
		if got != slow {
			t.Fatalf("ParseCounts %+v, the tokenizer %+v", got, slow)
		}
	})
}

// TestWriter: a Writer's lines are AppendResult's, look after look, as its
// numbers repeat, change (0 to −0 too), turn null and come back.
func TestWriter(t *testing.T) {
	values := []float64{1, 1, 0.37579095474386115, 0.37579095474386115, 0, math.Copysign(0, -1), 0,
		math.NaN(), math.NaN(), math.Inf(1), math.Inf(-1), 5.851924535820865e-152, 5.851924535820865e-152,
		-1.2345678901234567e-300, -1.2345678901234567e-300, 1e20, 123456789.125, 1}
	var w Writer
	for i := range values {
		r := judge.CountResult{Look: i + 1, EValue: values[i], PValue: values[(i+3)%len(values)], Decision: judge.DecisionContinue,
			Ratio: judge.RatioEstimate{Estimate: values[(i+5)%len(values)], Lower: values[i/2], Upper: values[(len(values)-1-i)/3]}}
		if got, want := string(w.Append(nil, r)), string(AppendResult(nil, r)); got != want {
			t.Errorf("look %d: the Writer wrote\n%s\nAppendResult writes\n%s", i+1, got, want)
		}
	}
}
