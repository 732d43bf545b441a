package condition

import (
	"context"
	"math"
	"testing"
)

// The benchmarks compare what a measurement costs with the per-type
// program cache (JudgeCached) against what it costs when the condition is
// compiled for every measurement, as Argo does (CompileEachTime), for
// conditions as templates write them; and what a new analysis, or a request
// to /v1/evaluate, pays before its first verdict (NewConditions): Compile
// and a first Judge, alone or with a shared Programs.

// benchConditions are typical conditions with a value of the shape they
// are written for. Values are boxed once, as a provider's value is, so that
// no benchmark counts the conversion to any.
var benchConditions = []struct {
	name      string
	condition string
	value     any
}{
	{"threshold", `result[0] >= 0.99`, any([]float64{0.995})},
	{"scalar", `result >= 0.99`, any(0.995)},
	{"latency-or-empty", `len(result) == 0 || result[0] <= 500`, any([]float64{231.5})},
	{"nan-guard", `!isNaN(result[0]) && result[0] >= 0.95`, any([]float64{0.97})},
	{"all-series", `all(result, {# >= 0.95})`, any([]float64{0.99, 0.97, 0.999, 0.96, 0.98})},
	{"default", `default(result, 0) >= 0`, any(math.Pi)},
}

func BenchmarkJudgeCached(b *testing.B) {
	for _, bc := range benchConditions {
		b.Run(bc.name, func(b *testing.B) {
			c, errs := Compile(bc.condition, "")
			if errs != nil {
				b.Fatalf("Compile: %v", errs)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Judge(bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompileEachTime(b *testing.B) {
	for _, bc := range benchConditions {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Eval(bc.condition, bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNewConditions(b *testing.B) {
	bc := benchConditions[0]
	for _, variant := range []struct {
		name string
		opts func() []Option
	}{
		{"alone", func() []Option { return nil }},
		{"shared", func() []Option { return []Option{WithPrograms(NewPrograms(0))} }},
	} {
		b.Run(variant.name, func(b *testing.B) {
			opts := variant.opts()
			b.ReportAllocs()
			for b.Loop() {
				c, errs := Compile(bc.condition, "", opts...)
				if errs != nil {
					b.Fatal(errs)
				}
				if _, err := c.Judge(bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJudgeContext is a round's judgement as the engine asks for it.
func BenchmarkJudgeContext(b *testing.B) {
	for _, bc := range benchConditions {
		b.Run(bc.name, func(b *testing.B) {
			c, errs := Compile(bc.condition, "")
			if errs != nil {
				b.Fatalf("Compile: %v", errs)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.JudgeContext(ctx, bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
