package report

import "testing"

// TestSimpleComparison checks which conditions have a threshold to draw:
// the measured value against a number, and nothing else.
func TestSimpleComparison(t *testing.T) {
	for _, c := range []struct {
		cond, label string // label "" for none
	}{
		{"result[0] >= 0.99", "≥ 0.99"},
		{"result < 0.05", "< 0.05"},
		{"0.02 < result[0]", "> 0.02"},
		{"result[0] <= -1.5", "≤ -1.5"},
		{"result > 10", "> 10"},
		{"all(result, # >= 0.95)", "≥ 0.95"},
		{"any(result, {# < 3})", "< 3"},
		{"result[1] >= 0.99", ""},
		{"result[0] >= 0.99 || result[0] < 0", ""},
		{"result[0] == 1", ""},
		{"result[0] >= args", ""},
		{"len(result) > 0", ""},
		{"all(result, # >= 0.95) && result[0] > 1", ""},
		{"not valid (", ""},
	} {
		th, ok := simpleComparison(c.cond)
		got := ""
		if ok {
			got = th.Op + " " + th.Text
		}
		if got != c.label {
			t.Errorf("%s: threshold %q, want %q", c.cond, got, c.label)
		}
	}
}

// TestDisplayValue checks values as the report shows them: three
// significant digits, a vector of one series as its value, and digits
// enough to keep a value on its side of a threshold.
func TestDisplayValue(t *testing.T) {
	for _, c := range []struct {
		raw  string
		near []float64
		want string
	}{
		{"[0.95]", nil, "0.950"},
		{"0.95", nil, "0.950"},
		{"[0.031]", nil, "0.0310"},
		{"[1234.5678]", nil, "1235"},
		{"[12.345]", nil, "12.3"},
		{"[0]", nil, "0"},
		{"[0.98951]", []float64{0.99}, "0.9895"},
		{"[0.99]", []float64{0.99}, "0.990"},
		{"[0.98951]", nil, "0.990"},
		{"[2.5e-07]", nil, "2.5e-07"},
		{"[0.1,0.2,0.3]", nil, "0.100 (3 series, 0.100 to 0.300)"},
		{"[]", nil, "no data (empty)"},
		{"NaN", nil, "NaN"},
		{"", nil, "-"},
		{"High (p=0.01)", nil, "High (p=0.01)"},
	} {
		if got := displayValue(c.raw, c.near...); got != c.want {
			t.Errorf("displayValue(%q, %v) = %q, want %q", c.raw, c.near, got, c.want)
		}
	}
}
