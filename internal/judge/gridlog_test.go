package judge

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGridLog: gridLog is math.Log within 2 ulp (or 2^−51 where the
// logarithm is below 1) on the grid terms' range, from 1 to a double's
// largest, and math.Log's own at +Inf and below 1.
func TestGridLog(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	xs := []float64{1, math.Nextafter(1, 2), 1 + 1e-12, 1.5, math.Nextafter(2, 1), 2, math.Sqrt2, 3, 1e6, 1e300, math.MaxFloat64, math.Inf(1), 0.5, 0}
	for range 200_000 {
		// 1 + r·o, r and o over the grid's range and beyond.
		xs = append(xs, 1+math.Exp2(60*r.Float64()-30)*r.Float64())
		xs = append(xs, math.Float64frombits(0x3ff0<<48+r.Uint64N(0x7fe0<<48-0x3ff0<<48)))
	}
	worst := 0.0
	for _, x := range xs {
		got, want := gridLog(x), math.Log(x)
		if math.IsInf(want, 0) || math.IsNaN(want) || x < 1 {
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("gridLog(%g) = %g, math.Log %g", x, got, want)
			}
			continue
		}
		unit := math.Max(math.Nextafter(want, math.Inf(1))-want, 0x1p-52)
		if e := math.Abs(got-want) / unit; e > 2 {
			t.Errorf("gridLog(%.17g) = %.17g, math.Log %.17g: %g units apart", x, got, want, e)
		} else if e > worst {
			worst = e
		}
	}
	t.Logf("%d values, at most %g units from math.Log", len(xs), worst)
}
