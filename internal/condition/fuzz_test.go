package condition

import (
	"math"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// fuzzResults are the shapes providers hand to conditions. Maps have one key
// so that no condition can see Go's random iteration order.
var fuzzResults = []any{
	nil,
	0.995,
	math.NaN(),
	math.Inf(1),
	[]float64{},
	[]float64{0.5, 0.99},
	(*float64)(nil),
	ptr(2.0),
	"1.1",
	true,
	map[string]any{"a": []any{1.0, "x", nil}},
	[]any{1.0, "a"},
}

// FuzzCompileAndJudge compiles arbitrary condition text and judges it
// against every result shape. Besides never panicking it checks that
//   - Judge's phase and error agree (an error exactly when the phase is Error);
//   - a cached Judge answers as a fresh compile (Eval) does;
//   - Compile never rejects a condition Argo would evaluate without error,
//     but for what it could cost (the allow-list, ranges, the cost bound).
func FuzzCompileAndJudge(f *testing.F) {
	for _, tc := range judgeCases {
		f.Add(tc.success)
		f.Add(tc.failure)
	}
	for _, s := range []string{
		"", "1", "nil", "1 +", "result", "$env", "result.x.y", "result?.x?.y == nil",
		"let x = result; x == x", "map(result, # * 2)[0] > 1", "result[1:] == []",
		"asFloat(result) > 1", "asInt(result) == 1", "isNil(result) ? true : result > 0",
		`"a" matches "("`, "toJSON(result) != ''", "1 / 0 > 0", "-result < 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cond string) {
		_, verr := validate(cond, 0)
		refusedForCost := isLimitError(verr)
		as := []struct{ success, failure string }{{cond, ""}, {"", cond}}
		for _, a := range as {
			c, errs := Compile(a.success, a.failure)
			if (c == nil) == (errs == nil) {
				t.Fatalf("Compile(%q, %q) = %v, %v; want exactly one of them", a.success, a.failure, c, errs)
			}
			if c == nil {
				c = newConditions(a.success, a.failure)
			}
			for _, r := range fuzzResults {
				phase, err := c.Judge(r)
				if (phase == api.PhaseError) != (err != nil) {
					t.Fatalf("Judge(%#v) with %q = %s, %v: phase and error disagree", r, cond, phase, err)
				}
				switch phase {
				case api.PhaseSuccessful, api.PhaseFailed, api.PhaseInconclusive, api.PhaseError:
				default:
					t.Fatalf("Judge(%#v) with %q = phase %q", r, cond, phase)
				}
				if cond == "" || strings.Contains(cond, "now") {
					continue // nothing to compare, or a clock that moves
				}
				ok, evalErr := Eval(cond, r)
				if errs != nil && evalErr == nil && !refusedForCost {
					t.Fatalf("Compile rejected %q with %v, but Eval(%#v) = %v without error", cond, errs, r, ok)
				}
				want := api.PhaseError
				if evalErr == nil {
					// One condition alone: true is the passing answer for a
					// success condition and the failing one for a failure
					// condition.
					want = api.PhaseFailed
					if ok == (a.success != "") {
						want = api.PhaseSuccessful
					}
				}
				if phase != want {
					t.Fatalf("Judge(%#v) with %+v = %s, %v; Eval = %v, %v", r, a, phase, err, ok, evalErr)
				}
			}
		}
	})
}
