package condition

import (
	"math"
	"reflect"
	"testing"
)

// The rows are §2.5's helper unit tests, plus the cases where canaryd has
// to decide something Argo does not test.

func TestAsInt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        any
		want      int64
		wantPanic bool
	}{
		{"2.5 string", "1", 1, false},
		{"2.5 not an int", "notint", 0, true},
		{"2.5 decimal string", "1.1", 0, true},
		{"float64 truncates", 2.9, 2, false},
		{"float32", float32(-2.5), -2, false},
		{"int", 7, 7, false},
		{"int8", int8(-8), -8, false},
		{"int16", int16(16), 16, false},
		{"int32", int32(32), 32, false},
		{"int64", int64(64), 64, false},
		{"uint", uint(1), 1, false},
		{"uint8", uint8(8), 8, false},
		{"uint16", uint16(16), 16, false},
		{"uint32", uint32(32), 32, false},
		{"uint64", uint64(64), 64, false},
		{"bool", true, 0, true},
		{"nil", nil, 0, true},
	} {
		got, panicked := catch(func() any { return asInt(tc.in) })
		if panicked != tc.wantPanic || (!panicked && got != tc.want) {
			t.Errorf("%s: asInt(%#v) = %v, panicked %v; want %v, panic %v", tc.name, tc.in, got, panicked, tc.want, tc.wantPanic)
		}
	}
}

func TestAsFloat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        any
		want      float64
		wantPanic bool
	}{
		{"2.5 string", "1", 1, false},
		{"2.5 not a float", "notfloat", 0, true},
		{"2.5 decimal string", "1.1", 1.1, false},
		{"float64", 2.5, 2.5, false},
		{"float32", float32(0.5), 0.5, false},
		{"int", 7, 7, false},
		{"int8", int8(-8), -8, false},
		{"int16", int16(16), 16, false},
		{"int32", int32(32), 32, false},
		{"int64", int64(64), 64, false},
		{"uint", uint(1), 1, false},
		{"uint8", uint8(8), 8, false},
		{"uint16", uint16(16), 16, false},
		{"uint32", uint32(32), 32, false},
		{"uint64", uint64(64), 64, false},
		{"bool", false, 0, true},
	} {
		got, panicked := catch(func() any { return asFloat(tc.in) })
		if panicked != tc.wantPanic || (!panicked && got != tc.want) {
			t.Errorf("%s: asFloat(%#v) = %v, panicked %v; want %v, panic %v", tc.name, tc.in, got, panicked, tc.want, tc.wantPanic)
		}
	}
}

func catch(f func() any) (out any, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return f(), false
}

func TestIsNaNAndIsInf(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            float64
		wantNaN, wInf bool
	}{
		{"2.5 Inf", math.Inf(1), false, true},
		{"-Inf", math.Inf(-1), false, true},
		{"2.5 zero", 0, false, false},
		{"NaN", math.NaN(), true, false},
	} {
		if got := isNaN(tc.in); got != tc.wantNaN {
			t.Errorf("%s: isNaN(%v) = %v; want %v", tc.name, tc.in, got, tc.wantNaN)
		}
		if got := isInf(tc.in); got != tc.wInf {
			t.Errorf("%s: isInf(%v) = %v; want %v", tc.name, tc.in, got, tc.wInf)
		}
	}
}

func TestDefaultFunc(t *testing.T) {
	var nilFloat *float64
	for _, tc := range []struct {
		name     string
		result   any
		fallback any
		want     any
	}{
		{"2.5 nil pointer, 0", nilFloat, 0, 0},
		{"2.5 nil pointer, 1", nilFloat, 1, 1},
		{"2.5 nil pointer, 2", nilFloat, 2, 2},
		{"2.5 pointer to 1", ptr(1.0), 0, 1.0},
		{"nil slice", []float64(nil), 3, 3},
		{"value", 4.0, 0, 4.0},
	} {
		// The first argument is ignored; nil shows it.
		if got := defaultFunc(tc.result)(nil, tc.fallback); got != tc.want {
			t.Errorf("%s: default(_, %v) = %#v; want %#v", tc.name, tc.fallback, got, tc.want)
		}
	}
}

func TestIsNil(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want bool
	}{
		{"2.5 nil pointer", (*float64)(nil), true},
		{"2.5 nil slice", []string(nil), true},
		{"2.5 float", 1.0, false},
		{"2.5 slice", []string{"hi", "hello"}, false},
		{"2.5 int", 1, false},
		{"2.5 false", false, false},
		{"nil", nil, true},
		{"nil map", map[string]any(nil), true},
		{"nil chan", (chan int)(nil), true},
		{"array (Argo panics)", [2]float64{}, false},
		{"empty slice", []float64{}, false},
	} {
		if got := isNil(tc.in); got != tc.want {
			t.Errorf("%s: isNil(%#v) = %v; want %v", tc.name, tc.in, got, tc.want)
		}
		// isNil() in a condition ignores its argument and asks about the
		// result it was built for.
		if got := isNilFunc(tc.in)("ignored"); got != tc.want {
			t.Errorf("%s: isNilFunc(%#v)(_) = %v; want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestValueFromPointer(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"2.5 nil pointer", (*float64)(nil), nil},
		{"2.5 nil slice", []string(nil), nil},
		{"2.5 slice", []string{"hi", "hello"}, []string{"hi", "hello"}},
		{"2.5 pointer to 1", ptr(1.0), 1.0},
		{"2.5 int", 1, 1},
		{"2.5 false", false, false},
		{"nil map", map[string]any(nil), nil},
		{"one level only", ptr(ptr(1.0)), nil}, // checked by type below
		{"array", [1]float64{1}, [1]float64{1}},
	} {
		got := valueFromPointer(tc.in)
		if tc.name == "one level only" {
			if _, ok := got.(*float64); !ok {
				t.Errorf("%s: valueFromPointer(**float64) = %T; want *float64", tc.name, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: valueFromPointer(%#v) = %#v; want %#v", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestIsNilOrEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want bool
	}{
		{"2.5 nil", nil, true},
		{"2.5 empty []float64", []float64{}, true},
		{"2.5 empty []string", []string{}, true},
		{"2.5 [1.0]", []float64{1.0}, false},
		{"2.5 42", 42, false},
		{"2.5 hello", "hello", false},
		{"nil pointer", (*float64)(nil), true},
		{"empty array", [0]float64{}, true},
		{"empty map is not empty to Argo", map[string]any{}, false},
		{"empty string is not empty to Argo", "", false},
		{"pointer to an empty slice is not empty to Argo", ptr([]float64{}), false},
	} {
		if got := isNilOrEmpty(tc.in); got != tc.want {
			t.Errorf("%s: isNilOrEmpty(%#v) = %v; want %v", tc.name, tc.in, got, tc.want)
		}
	}
}
