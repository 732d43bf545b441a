package condition

import (
	"testing"

	"github.com/canaryd/canaryd/api"
)

// The two benchmarks compare what a measurement costs with the per-type
// program cache against what it costs when the condition is compiled for
// every measurement, as Argo does.

const benchCondition = `result[0] >= 0.99`

// benchResult is boxed once, as a provider's value is, so that neither
// benchmark counts the conversion to any.
var benchResult any = []float64{0.995}

func BenchmarkJudgeCached(b *testing.B) {
	c, errs := Compile(benchCondition, "")
	if errs != nil {
		b.Fatalf("Compile: %v", errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		phase, err := c.Judge(benchResult)
		if err != nil || phase != api.PhaseSuccessful {
			b.Fatalf("Judge = %v, %v; want Successful", phase, err)
		}
	}
}

func BenchmarkCompileEachTime(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ok, err := Eval(benchCondition, benchResult)
		if err != nil || !ok {
			b.Fatalf("Eval = %v, %v; want true", ok, err)
		}
	}
}
