package judge

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGridLogs: gridLogs is math.Log(1 + r·o) within 2 ulp (or 2^−51
// where the logarithm is below 1) on the grid terms' range, from 1 to a
// double's largest, and math.Log's own at +Inf and below 1.
func TestGridLogs(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	rs := []float64{0, 1e-300, math.SmallestNonzeroFloat64, 0x1p-52, 1e-12, 0.5, math.Nextafter(1, 0), 1, math.Sqrt2 - 1, 2, 1e6, 1e300, math.MaxFloat64, math.Inf(1), -0.5, -1}
	for range 200_000 {
		// r·o over the grid's range and beyond, and any double from 1 up.
		rs = append(rs, math.Exp2(60*r.Float64()-30)*r.Float64())
		rs = append(rs, math.Float64frombits(0x3ff0<<48+r.Uint64N(0x7fe0<<48-0x3ff0<<48))-1)
	}
	for _, o := range []float64{1, 0.37, 3} {
		got := make([]float64, len(rs))
		gridLogs(got, rs, o)
		worst := 0.0
		for i, ratio := range rs {
			x := 1 + ratio*o
			want := math.Log(x)
			if math.IsInf(want, 0) || math.IsNaN(want) || x < 1 {
				if got[i] != want && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
					t.Errorf("log(1 + %g·%g) = %g, math.Log %g", ratio, o, got[i], want)
				}
				continue
			}
			unit := math.Max(math.Nextafter(want, math.Inf(1))-want, 0x1p-52)
			if e := math.Abs(got[i]-want) / unit; e > 2 {
				t.Errorf("log(%.17g) = %.17g, math.Log %.17g: %g units apart", x, got[i], want, e)
			} else if e > worst {
				worst = e
			}
		}
		t.Logf("o = %g: %d values, at most %g units from math.Log", o, len(rs), worst)
	}
}
