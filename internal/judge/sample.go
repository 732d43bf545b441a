package judge

import (
	"math"
	"sort"
)

// SampleStats describes one sample after NaN handling and outlier removal,
// the numbers a report shows beside the classification (Kayenta's
// controlMetadata/experimentMetadata stats). All are 0 for an empty sample.
type SampleStats struct {
	// N is the number of points that were compared.
	N int
	// Mean, Median, Min and Max are of those points; Median is the 50th
	// percentile by R's type 7 (the usual median).
	Mean, Median, Min, Max float64
	// StdDev is the sample standard deviation (divisor N − 1; 0 when N is
	// 1).
	StdDev float64
	// NaN counts the NaN points of the input, removed or replaced by 0
	// according to the NaN strategy.
	NaN int
	// Outliers counts the points removed as outliers.
	Outliers int
}

// prepare applies the NaN strategy and, if asked, outlier removal to a copy
// of v, and returns the points to compare, sorted, with their description.
func prepare(v []float64, cfg Config) ([]float64, SampleStats) {
	var st SampleStats
	out := make([]float64, 0, len(v))
	for _, f := range v {
		if math.IsNaN(f) {
			st.NaN++
			if cfg.NaNStrategy == NaNReplace {
				out = append(out, 0)
			}
			continue
		}
		out = append(out, f)
	}
	sort.Float64s(out)
	if cfg.RemoveOutliers {
		kept := removeOutliers(out, cfg.OutlierFactor)
		st.Outliers = len(out) - len(kept)
		out = kept
	}
	describe(out, &st)
	return out, st
}

// removeOutliers returns the points of sorted inside the fences of Kayenta's
// IQRDetector with reduceSensitivity: [min(P1, Q1 − k·IQR), max(P99,
// Q3 + k·IQR)], so that a point is an outlier only if it is beyond both
// Tukey's fence and the 1st or 99th percentile. The fences always hold the
// median, so the result is never empty when sorted is not.
func removeOutliers(sorted []float64, k float64) []float64 {
	if len(sorted) == 0 {
		return sorted
	}
	q1, q3 := percentile(sorted, 25), percentile(sorted, 75)
	iqr := q3 - q1
	lo := math.Min(percentile(sorted, 1), q1-k*iqr)
	hi := math.Max(percentile(sorted, 99), q3+k*iqr)
	kept := make([]float64, 0, len(sorted))
	for _, f := range sorted {
		// A NaN fence (from ±Inf data) flags nothing, as in Kayenta.
		if f > hi || f < lo {
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by R's
// type 7 (linear interpolation between order statistics), the estimation
// type Kayenta asks of Commons Math. It is NaN for an empty sample.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1:
		return sorted[0]
	}
	pos := 1 + float64(n-1)*p/100
	if p == 100 {
		pos = float64(n)
	}
	if pos < 1 {
		return sorted[0]
	}
	if pos >= float64(n) {
		return sorted[n-1]
	}
	fpos := math.Floor(pos)
	lower, upper := sorted[int(fpos)-1], sorted[int(fpos)]
	return lower + (pos-fpos)*(upper-lower)
}

// describe fills in st's statistics of sorted.
func describe(sorted []float64, st *SampleStats) {
	n := len(sorted)
	st.N = n
	if n == 0 {
		return
	}
	st.Min, st.Max = sorted[0], sorted[n-1]
	st.Median = percentile(sorted, 50)
	st.Mean = mean(sorted)
	if n > 1 {
		// The corrected two-pass algorithm, as Commons Math computes it.
		var sq, sum float64
		for _, f := range sorted {
			d := f - st.Mean
			sq += d * d
			sum += d
		}
		st.StdDev = math.Sqrt((sq - sum*sum/float64(n)) / float64(n-1))
	}
}

// mean is the mean with Commons Math's correction pass, which removes most
// of the rounding error of the plain sum.
func mean(v []float64) float64 {
	var sum float64
	for _, f := range v {
		sum += f
	}
	m := sum / float64(len(v))
	var corr float64
	for _, f := range v {
		corr += f - m
	}
	return m + corr/float64(len(v))
}

// meanRatio is Kayenta's mean-ratio effect size, canary mean over baseline
// mean, NaN if either mean is 0.
func meanRatio(canaryMean, baselineMean float64) float64 {
	if canaryMean == 0 || baselineMean == 0 {
		return math.NaN()
	}
	return canaryMean / baselineMean
}

// cles is the common-language effect size of Vargha and Delaney's A: the
// probability that a canary point exceeds a baseline point, ties counting
// half, from the rank sum (Kayenta's EffectSizes.cles). It is U/(m·n).
func cles(canary, baseline []float64) float64 {
	w := newWilcoxon(canary, baseline)
	rankSum, _ := w.ranks(0)
	return (rankSum - w.nx*(w.nx+1)/2) / (w.nx * w.ny)
}
