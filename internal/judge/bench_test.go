package judge

import (
	"fmt"
	"testing"
)

// BenchmarkClassify judges samples of the sizes a range query gives: 40
// points (10 minutes at 15 s), 240 (an hour) and 2880 (12 hours), shifted by
// 10%, so that the result is High at every size.
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{40, 240, 2880} {
		canary, base := scaled(wave(n, 100, 10, 2), 1.10), wave(n, 100, 10, 0)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := Classify(canary, base, Config{}); r.Classification != High {
					b.Fatalf("Classify = %s; want High", r.Classification)
				}
			}
		})
	}
}

func BenchmarkMannWhitney(b *testing.B) {
	canary, base := scaled(wave(240, 100, 10, 2), 1.05), wave(240, 100, 10, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MannWhitney(canary, base, 0.98); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScoreRun(b *testing.B) {
	var outcomes []MetricOutcome
	for i := range 20 {
		c := Pass
		if i%7 == 0 {
			c = High
		}
		outcomes = append(outcomes, MetricOutcome{Name: fmt.Sprint("m", i), Group: fmt.Sprint("g", i%4), Classification: c})
	}
	cfg := ScoreConfig{GroupWeights: map[string]float64{"g0": 40, "g1": 20}}
	b.ReportAllocs()
	for b.Loop() {
		ScoreRun(outcomes, cfg)
	}
}
