package condition

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"
)

// TestComparisonShapes checks which conditions are evaluated as
// comparisons (fast.go), for which types of result.
func TestComparisonShapes(t *testing.T) {
	floats, scalar := []float64{0.995}, 0.5
	for _, tc := range []struct {
		condition string
		value     any
		want      bool
	}{
		{"result[0] >= 0.99", floats, true},
		{"result[0] < 1", floats, true},
		{"0.95 <= result[-1]", floats, true},
		{"result[2] != 0", floats, true},
		{"result == 0.5", scalar, true},
		{"result > 100", scalar, true},
		{"result[0] >= 0.99", Doubles(floats), false},
		{"result[0] >= 0.99", []any{0.995}, false},
		{"result >= 0.99", 1, false},
		{"result[0] >= 0.99 && result[0] < 2", floats, false},
		{"result[0] + 1 > 2", floats, false},
		{"result[0] > result[1]", floats, false},
		{"len(result) > 0", floats, false},
		{"result?.[0] > 1", floats, false},
		{"!(result[0] > 1)", floats, false},
		{"result[0] in [1, 2]", floats, false},
	} {
		program, err := compileTyped(tc.condition, tc.value)
		if err != nil {
			t.Errorf("%s: %v", tc.condition, err)
			continue
		}
		if got := comparisonOf(program, reflect.TypeOf(tc.value)) != nil; got != tc.want {
			t.Errorf("%s on %T: a comparison %v, want %v", tc.condition, tc.value, got, tc.want)
		}
	}
}

// TestComparisonAsTheMachine evaluates comparisons of every operator, on
// both sides, on values at the edges (NaN, infinities, zeros of both
// signs, an index out of range), as comparisons and with expr's machine.
func TestComparisonAsTheMachine(t *testing.T) {
	compared := 0
	values := []float64{0, math.Copysign(0, -1), 0.99, 0.995, 1, -1, 1e308, -1e-308, math.NaN(), math.Inf(1), math.Inf(-1), 1 << 53, 1<<53 + 1}
	literals := []string{"0", "0.99", "1", "100", "1e3", "9007199254740993", "0.1", ".5"}
	for _, op := range []string{"<", "<=", ">", ">=", "==", "!="} {
		for _, lit := range literals {
			for _, text := range []string{"result[0] " + op + " " + lit, lit + " " + op + " result[-1]", "result[1] " + op + " " + lit, "result " + op + " " + lit} {
				for _, v := range values {
					compared += checkComparison(t, text, []float64{v})
					compared += checkComparison(t, text, []float64{v, -v})
					compared += checkComparison(t, text, v)
				}
				compared += checkComparison(t, text, []float64{})
			}
		}
	}
	// Of 6×8 texts of each of four shapes, for each of 13 values:
	// result[0] and result[-1] on both lists, result[1] on the list of
	// two (the other is the machine's, out of range), result on the
	// number; never on the empty list.
	if want := 6 * 8 * 13 * (2 + 2 + 1 + 1); compared != want {
		t.Errorf("%d evaluations as comparisons, want %d", compared, want)
	}
}

// checkComparison evaluates text on value as a comparison, when it is
// one, and fails when expr's machine says otherwise. It returns 1 when it
// was evaluated as a comparison.
func checkComparison(t *testing.T, text string, value any) int {
	t.Helper()
	program, err := compileTyped(text, value)
	if err != nil {
		return 0 // the machine's to report
	}
	c := comparisonOf(program, reflect.TypeOf(value))
	if c == nil {
		return 0
	}
	got, done := c.eval(value)
	want, err := run(program, value, value)
	switch {
	case !done && err == nil:
		// The machine's: whatever it says is said.
	case done && err != nil:
		t.Errorf("%s on %v: %v as a comparison, an error from the machine: %v", text, value, got, err)
	case done && got != want:
		t.Errorf("%s on %v: %v as a comparison, %v from the machine", text, value, got, want)
	}
	if done {
		return 1
	}
	return 0
}

// FuzzComparison holds comparisons to expr's machine on any numbers.
func FuzzComparison(f *testing.F) {
	f.Add(uint8(3), int8(0), "0.99", false, false, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint8(0), int8(-1), "100", true, false, []byte{})
	f.Add(uint8(4), int8(0), "1", false, true, []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	f.Fuzz(func(t *testing.T, op uint8, index int8, lit string, swap, scalar bool, raw []byte) {
		ops := []string{"<", "<=", ">", ">=", "==", "!="}
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			return
		}
		side := fmt.Sprintf("result[%d]", index)
		var value any
		var floats []float64
		for len(raw) >= 8 {
			floats = append(floats, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
			raw = raw[8:]
		}
		value = floats
		if scalar {
			side, value = "result", 0.0
			if len(floats) > 0 {
				value = floats[0]
			}
		}
		text := side + " " + ops[int(op)%len(ops)] + " " + lit
		if swap {
			text = lit + " " + ops[int(op)%len(ops)] + " " + side
		}
		checkComparison(t, text, value)
	})
}

// TestFloatsWithoutReflection holds what valueFromPointer and
// resultLength tell of float64 and []float64 results without reflection
// to what they tell of them with it.
func TestFloatsWithoutReflection(t *testing.T) {
	reflected := func(in any) (any, int) {
		var value any
		switch {
		case in == nil:
		case reflect.TypeOf(in).Kind() == reflect.Slice && reflect.ValueOf(in).IsNil():
		default:
			value = in
		}
		n := 1
		if v := reflect.ValueOf(value); v.Kind() == reflect.Slice {
			n = v.Len()
		}
		return value, n
	}
	for _, in := range []any{0.0, math.NaN(), math.Inf(-1), []float64(nil), []float64{}, []float64{1}, []float64{1, 2, math.NaN()}} {
		wantValue, wantN := reflected(in)
		if got := valueFromPointer(in); fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", wantValue, wantValue) {
			t.Errorf("valueFromPointer(%#v) = %#v, want %#v", in, got, wantValue)
		}
		if got := resultLength(in); got != wantN {
			t.Errorf("resultLength(%#v) = %d, want %d", in, got, wantN)
		}
	}
}
