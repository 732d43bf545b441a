package judge

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// fuzzSample decodes fuzz bytes into a sample. In tie mode each byte is a
// small integer, NaN or ±Inf, so that ties, constant samples and missing
// points are common; otherwise each 8 bytes are a float64's bits, any value
// at all.
func fuzzSample(b []byte, ties bool) []float64 {
	var v []float64
	if ties {
		for _, c := range b {
			switch c % 16 {
			case 13:
				v = append(v, math.NaN())
			case 14:
				v = append(v, math.Inf(1))
			case 15:
				v = append(v, math.Inf(-1))
			default:
				v = append(v, float64(c%16))
			}
		}
		return v
	}
	for len(b) >= 8 {
		v = append(v, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	return v
}

// fuzzConfig picks a Config from the bits of mode; threshold, if not 0, is
// used for every effect-size threshold and may be invalid.
func fuzzConfig(mode uint16, threshold float64) Config {
	cfg := Config{
		Direction:      []Direction{"", DirectionIncrease, DirectionDecrease, DirectionEither}[mode&3],
		NaNStrategy:    []NaNStrategy{NaNRemove, NaNReplace}[mode>>2&1],
		RemoveOutliers: mode>>3&1 == 1,
		Critical:       mode>>4&1 == 1,
		MustHaveData:   mode>>5&1 == 1,
	}
	if mode>>6&1 == 1 {
		cfg.EffectSizeMeasure = EffectCLES
	}
	if mode>>7&1 == 1 {
		cfg.ConfidenceLevel = 0.8
	}
	if mode>>8&1 == 1 {
		cfg.Tolerance = 0.01
	}
	cfg.AllowedIncrease, cfg.AllowedDecrease = threshold, threshold
	cfg.CriticalIncrease, cfg.CriticalDecrease = threshold, threshold
	return cfg
}

// FuzzClassify checks Classify's invariants on any samples: it never
// panics, it returns one of the classifications, its p-value is in [0, 1]
// and NaN only without data (or with an invalid Config, which is an Error),
// an interval is ordered, a critical result fails, the arguments are left
// alone, and the same input gives the same result.
func FuzzClassify(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{1, 2, 3, 3, 4, 5}, true, uint16(0), 0.0)
	f.Add([]byte{5, 5, 5}, []byte{1, 1, 1}, true, uint16(16), 0.0)
	f.Add([]byte{13, 13}, []byte{1, 2}, true, uint16(4), 0.0)
	f.Add([]byte{14, 1, 2}, []byte{1, 2, 3}, true, uint16(16), 0.0)
	f.Add([]byte{7}, []byte{3}, true, uint16(0), 1.1)
	f.Add([]byte{0, 0, 1, 0, 2}, []byte{0, 0, 0, 0, 0}, true, uint16(64), 0.6)
	f.Add(make([]byte, 16), make([]byte, 24), false, uint16(8), 0.0)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 1, 0, 0, 0, 0, 0, 0xf0, 0x3f}, []byte{1, 0, 0, 0, 0, 0, 0xf0, 0x3f}, false, uint16(255), -1.0)

	valid := map[Classification]bool{Pass: true, High: true, Low: true, Nodata: true, NodataFailMetric: true, Error: true}
	f.Fuzz(func(t *testing.T, cb, bb []byte, ties bool, mode uint16, threshold float64) {
		canary, baseline := fuzzSample(cb, ties), fuzzSample(bb, ties)
		cfg := fuzzConfig(mode, threshold)
		canaryIn, baselineIn := slices.Clone(canary), slices.Clone(baseline)

		got := Classify(canary, baseline, cfg)

		if !valid[got.Classification] {
			t.Fatalf("classification %q is not one of the constants", got.Classification)
		}
		if got.Reason == "" {
			t.Errorf("%s with an empty reason", got.Classification)
		}
		invalid := cfg.Validate() != nil
		if invalid && got.Classification != Error {
			t.Errorf("invalid config %+v gave %s; want Error", cfg, got.Classification)
		}
		noData := got.Canary.N == 0 || got.Baseline.N == 0
		if math.IsNaN(got.PValue) {
			if !noData && !invalid {
				t.Errorf("p-value NaN with data (%d, %d points): %s, %q", got.Canary.N, got.Baseline.N, got.Classification, got.Reason)
			}
		} else if got.PValue < 0 || got.PValue > 1 {
			t.Errorf("p-value %g outside [0, 1]", got.PValue)
		}
		if noData && !invalid {
			switch got.Classification {
			case Nodata, NodataFailMetric:
			case Pass:
				if cfg.NaNStrategy != NaNReplace {
					t.Errorf("Pass without data under %q", cfg.NaNStrategy)
				}
			default:
				t.Errorf("%s without data", got.Classification)
			}
		}
		if got.Classification == High || got.Classification == Low {
			lo, hi := got.ConfidenceInterval[0], got.ConfidenceInterval[1]
			if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
				t.Errorf("%s with interval [%g, %g]", got.Classification, lo, hi)
			}
			if (got.Classification == High) != (lo > 0) {
				t.Errorf("%s with interval [%g, %g]", got.Classification, lo, hi)
			}
		}
		if got.Critical && (got.Classification == Pass || got.Classification == NodataFailMetric || !cfg.Critical) {
			t.Errorf("critical %s (config critical %t)", got.Classification, cfg.Critical)
		}
		if !slices.EqualFunc(canary, canaryIn, sameFloat) || !slices.EqualFunc(baseline, baselineIn, sameFloat) {
			t.Error("Classify modified its arguments")
		}
		again := Classify(canary, baseline, cfg)
		if again.Classification != got.Classification || again.Reason != got.Reason ||
			!sameFloat(again.PValue, got.PValue) || !sameFloat(again.Estimate, got.Estimate) {
			t.Errorf("not deterministic: %s %q, then %s %q", got.Classification, got.Reason, again.Classification, again.Reason)
		}
	})
}
