package judge

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// wave is a deterministic, latency-like sample (the formula of
// testdata/judge/golden.R): a level, two oscillations and a sawtooth.
func wave(n int, level, amp, phase float64) []float64 {
	v := make([]float64, n)
	for k := 1; k <= n; k++ {
		i := float64(k)
		v[k-1] = level + amp*math.Sin(0.7*i+phase) + 0.3*amp*math.Cos(3.1*i+phase) + 0.05*amp*float64((k*37)%11)
	}
	return v
}

func scaled(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// withNaN puts a NaN after every third point.
func withNaN(v []float64) []float64 {
	var out []float64
	for i, x := range v {
		out = append(out, x)
		if i%3 == 2 {
			out = append(out, math.NaN())
		}
	}
	return out
}

var (
	nan      = math.NaN()
	baseline = wave(200, 100, 10, 0)
	same     = wave(200, 100, 10, 2)               // no shift
	up5      = scaled(wave(200, 100, 10, 2), 1.05) // +5%
	down5    = scaled(wave(200, 100, 10, 2), 0.95) // −5%
)

type classifyCase struct {
	name             string
	canary, baseline []float64
	cfg              Config
	want             Classification
	wantCritical     bool
	wantReason       string // a substring of the reason
}

// classifyCases go through Classify's rules in order; each name says which
// rule the row is about.
var classifyCases = []classifyCase{
	// Step 1-2: NaN strategy and no data.
	{"nan remove: NaNs dropped, shift still found", withNaN(up5), baseline, Config{}, High, false, "canary is higher"},
	{"nan remove: all NaN canary is Nodata", []float64{nan, nan}, baseline, Config{}, Nodata, false, "no data for the canary (all 2 points were NaN)"},
	{"nan remove: empty baseline is Nodata", up5, nil, Config{}, Nodata, false, "no data for the baseline"},
	{"nan remove: both empty", nil, []float64{}, Config{}, Nodata, false, "no data for the canary and no data for the baseline"},
	{"nodata of a critical metric is critical", nil, baseline, Config{Critical: true}, Nodata, true, "(critical)"},
	{"mustHaveData: NodataFailMetric", nil, baseline, Config{MustHaveData: true}, NodataFailMetric, false, "must have data"},
	{"mustHaveData and critical: critical Nodata", nil, baseline, Config{MustHaveData: true, Critical: true}, Nodata, true, "no data"},
	{"nan replace: empty sample passes", nil, baseline, Config{NaNStrategy: NaNReplace, Critical: true}, Pass, false, "missing data passes"},
	{"nan replace: NaN counts become 0, so errors show",
		[]float64{nan, 1, 2, nan, 3, 1, 2, 4, 2, 3, 1, 2}, repeat(nan, 12), Config{NaNStrategy: NaNReplace}, High, false, "mean is 0"},
	{"nan replace: NaN is not 0 under remove",
		[]float64{nan, 1, 2, nan, 3, 1, 2, 4, 2, 3, 1, 2}, repeat(nan, 12), Config{}, Nodata, false, "baseline"},

	// Step 3: trivial passes.
	{"identical samples pass", same, slices.Clone(same), Config{}, Pass, false, "identical"},
	{"identical in another order pass", []float64{3, 1, 2}, []float64{1, 2, 3}, Config{}, Pass, false, "identical"},
	{"one value everywhere passes", repeat(7, 5), repeat(7, 9), Config{}, Pass, false, "every point of both samples is 7"},

	// Step 4: both samples constant, at different values.
	{"both constant, canary higher: High", repeat(5, 60), repeat(1, 60), Config{}, High, false, "canary is higher"},
	{"both constant, canary lower: Low", repeat(1, 60), repeat(5, 60), Config{}, Low, false, "canary is lower"},
	{"one point each, canary higher: High", []float64{5}, []float64{3}, Config{}, High, false, "canary is higher"},
	{"both constant, higher, direction decrease: Pass", repeat(5, 3), repeat(1, 3), Config{Direction: DirectionDecrease}, Pass, false, "fails only a decrease"},

	// Step 5: the test, the tolerance band, the direction, the effect size.
	{"no shift: Pass", same, baseline, Config{}, Pass, false, "no shift: "},
	{"+5%: High", up5, baseline, Config{}, High, false, "canary is higher"},
	{"-5%: Low", down5, baseline, Config{}, Low, false, "canary is lower"},
	{"+5%, direction increase: High", up5, baseline, Config{Direction: DirectionIncrease}, High, false, "higher"},
	{"-5%, direction increase: Pass", down5, baseline, Config{Direction: DirectionIncrease}, Pass, false, "fails only an increase"},
	{"+5%, direction decrease: Pass", up5, baseline, Config{Direction: DirectionDecrease}, Pass, false, "fails only a decrease"},
	{"-5%, direction decrease: Low", down5, baseline, Config{Direction: DirectionDecrease}, Low, false, "lower"},
	{"significant, but interval not clear of the band: Pass",
		wave(50, 105, 10, 2), wave(50, 100, 10, 0), Config{}, Pass, false, "not clear of the tolerance band ±0.25"},
	{"same shift, larger: High", wave(50, 110, 10, 2), wave(50, 100, 10, 0), Config{}, High, false, "higher"},
	{"a wider band passes +5%", up5, baseline, Config{Tolerance: 0.9}, Pass, false, "not clear of the tolerance band ±0.9"},
	{"+5% under allowedIncrease 1.10: Pass", up5, baseline, Config{AllowedIncrease: 1.10}, Pass, false, "by too little: meanRatio 1.049 < allowedIncrease 1.1"},
	{"+5% over allowedIncrease 1.04: High", up5, baseline, Config{AllowedIncrease: 1.04}, High, false, "meanRatio 1.049 >= allowedIncrease 1.04"},
	{"-5% above allowedDecrease 0.90: Pass", down5, baseline, Config{AllowedDecrease: 0.90}, Pass, false, "by too little"},
	{"-5% under allowedDecrease 0.96: Low", down5, baseline, Config{AllowedDecrease: 0.96}, Low, false, "<= allowedDecrease 0.96"},
	{"mean ratio undefined (baseline mean 0): effect not checked",
		[]float64{1, 2, 1, 3, 2, 1, 4, 2, 1, 3, 2, 2}, repeat(0, 12), Config{AllowedIncrease: 5}, High, false, "undefined"},
	{"errors against none, but zeros tie: interval not clear of the band",
		[]float64{0, 1, 0, 2, 3, 0, 1, 4, 2, 1, 3, 2}, repeat(0, 12), Config{}, Pass, false, "not clear of the tolerance band"},
	{"cles: +5% is High at the default 0.5", up5, baseline, Config{EffectSizeMeasure: EffectCLES}, High, false, "cles"},
	{"cles: +5% under allowedIncrease 0.9: Pass", up5, baseline, Config{EffectSizeMeasure: EffectCLES, AllowedIncrease: 0.9}, Pass, false, "by too little: cles"},

	// Step 6: critical escalation.
	{"critical High at default criticalIncrease", up5, baseline, Config{Critical: true}, High, true, "(critical)"},
	{"critical metric, High below criticalIncrease: not critical", up5, baseline, Config{Critical: true, CriticalIncrease: 1.5}, High, false, "higher"},
	{"critical Low at criticalDecrease 0.96", down5, baseline, Config{Critical: true, CriticalDecrease: 0.96}, Low, true, "(critical)"},
	{"critical metric, Low above criticalDecrease: not critical", down5, baseline, Config{Critical: true, CriticalDecrease: 0.5}, Low, false, "lower"},
	{"critical metric that passes is not critical", same, baseline, Config{Critical: true}, Pass, false, "no shift: "},
	{"non-critical metric is never critical", up5, baseline, Config{CriticalIncrease: 1.01}, High, false, "higher"},

	// Errors.
	{"+Inf in the canary: Error", []float64{1, 2, math.Inf(1)}, []float64{1, 2, 3}, Config{}, Error, false, "±Inf"},
	{"+Inf in a critical metric: critical Error", []float64{1, 2, math.Inf(1)}, []float64{1, 2, 3}, Config{Critical: true}, Error, true, "(critical)"},
	{"difference overflows: Error", []float64{1e308, 1.5e308}, []float64{-1e308, -1.5e308}, Config{}, Error, false, "overflows"},
	{"both constant and infinitely apart: Error", repeat(math.Inf(1), 3), repeat(1, 3), Config{}, Error, false, "±Inf"},
	{"invalid config: Error", up5, baseline, Config{Direction: "up", ConfidenceLevel: 1.5}, Error, false, `invalid judge configuration: direction "up"`},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) {
			canary, base := slices.Clone(tc.canary), slices.Clone(tc.baseline)
			got := Classify(canary, base, tc.cfg)
			if got.Classification != tc.want || got.Critical != tc.wantCritical {
				t.Errorf("%s: Classify = %s (critical %t), %q; want %s (critical %t)",
					tc.name, got.Classification, got.Critical, got.Reason, tc.want, tc.wantCritical)
			}
			if !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("%s: reason %q; want it to contain %q", tc.name, got.Reason, tc.wantReason)
			}
			if !slices.EqualFunc(canary, tc.canary, sameFloat) || !slices.EqualFunc(base, tc.baseline, sameFloat) {
				t.Errorf("%s: Classify modified its arguments", tc.name)
			}
		})
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestClassifyNumbers checks the numbers behind a classification, not only
// its label.
func TestClassifyNumbers(t *testing.T) {
	t.Run("R's numbers for a shifted sample", func(t *testing.T) {
		// The golden case "large n=200, canary +5%" (R: W 26971).
		want, err := MannWhitney(up5, baseline, 0.98)
		if err != nil {
			t.Fatal(err)
		}
		got := Classify(up5, baseline, Config{})
		if got.PValue != want.PValue || got.Estimate != want.Estimate ||
			got.ConfidenceInterval != [2]float64{want.Lower, want.Upper} {
			t.Errorf("Classify numbers p %g, est %g, CI %v; want MannWhitney's p %g, est %g, [%g, %g]",
				got.PValue, got.Estimate, got.ConfidenceInterval, want.PValue, want.Estimate, want.Lower, want.Upper)
		}
		if math.Abs(got.EffectSize-1.05) > 0.01 || got.EffectSize != got.MeanRatio {
			t.Errorf("EffectSize %g, MeanRatio %g; want both about 1.05", got.EffectSize, got.MeanRatio)
		}
	})
	t.Run("both constant: the interval is the difference", func(t *testing.T) {
		got := Classify(repeat(5, 60), repeat(1, 60), Config{})
		if got.Estimate != 4 || got.ConfidenceInterval != [2]float64{4, 4} || got.EffectSize != 5 {
			t.Errorf("estimate %g, CI %v, effect %g; want 4, [4 4], 5", got.Estimate, got.ConfidenceInterval, got.EffectSize)
		}
		// R's wilcox.test(rep(5, 60), rep(1, 60), exact = FALSE) p-value.
		if !agrees(got.PValue, 1.0827834312358088e-27) {
			t.Errorf("p-value %.17g; want R's 1.0827834312358088e-27", got.PValue)
		}
	})
	t.Run("one value everywhere: no shift at all", func(t *testing.T) {
		got := Classify(repeat(7, 5), repeat(7, 9), Config{})
		if got.PValue != 1 || got.Estimate != 0 || got.ConfidenceInterval != [2]float64{0, 0} {
			t.Errorf("p %g, estimate %g, CI %v; want 1, 0, [0 0] (R gives NaN and fails)", got.PValue, got.Estimate, got.ConfidenceInterval)
		}
	})
	t.Run("identical samples: R's numbers", func(t *testing.T) {
		// R: wilcox.test(c(3,1,2,5,4), c(3,1,2,5,4), ...) gives p 1,
		// estimate 0, interval [-3.99994975038706, 3.99994975038706].
		got := Classify([]float64{3, 1, 2, 5, 4}, []float64{3, 1, 2, 5, 4}, Config{})
		if got.PValue != 1 || got.Estimate != 0 || !agrees(got.ConfidenceInterval[1], 3.99994975038706) {
			t.Errorf("p %g, estimate %g, CI %v; want R's 1, 0, [-4, 4]", got.PValue, got.Estimate, got.ConfidenceInterval)
		}
	})
	t.Run("no data: NaN numbers, zero stats", func(t *testing.T) {
		got := Classify([]float64{nan}, baseline, Config{})
		if !math.IsNaN(got.PValue) || !math.IsNaN(got.Estimate) || !math.IsNaN(got.EffectSize) {
			t.Errorf("p %g, estimate %g, effect %g; want NaN", got.PValue, got.Estimate, got.EffectSize)
		}
		if got.Canary != (SampleStats{NaN: 1}) {
			t.Errorf("canary stats %+v; want only NaN: 1", got.Canary)
		}
	})
}

func TestClassifyStats(t *testing.T) {
	tests := []struct {
		name   string
		sample []float64
		cfg    Config
		want   SampleStats
	}{
		{"plain", []float64{4, 1, 3, 2}, Config{},
			SampleStats{N: 4, Mean: 2.5, Median: 2.5, Min: 1, Max: 4, StdDev: math.Sqrt(5.0 / 3)}},
		{"NaN removed", []float64{4, nan, 1, 3, nan, 2}, Config{},
			SampleStats{N: 4, Mean: 2.5, Median: 2.5, Min: 1, Max: 4, StdDev: math.Sqrt(5.0 / 3), NaN: 2}},
		{"NaN replaced", []float64{nan, 2, 4}, Config{NaNStrategy: NaNReplace},
			SampleStats{N: 3, Mean: 2, Median: 2, Min: 0, Max: 4, StdDev: 2, NaN: 1}},
		{"one point", []float64{7}, Config{},
			SampleStats{N: 1, Mean: 7, Median: 7, Min: 7, Max: 7}},
		{"outlier removed", append(seq(1, 100), 1000), Config{RemoveOutliers: true},
			SampleStats{N: 100, Mean: 50.5, Median: 50.5, Min: 1, Max: 100, StdDev: math.Sqrt(841.6666666666666), Outliers: 1}},
		{"outlier kept by default", append(seq(1, 100), 1000), Config{},
			SampleStats{N: 101, Mean: 59.900990099009903, Median: 51, Min: 1, Max: 1000, StdDev: 98.790131587167664}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.sample, []float64{1, 2, 3}, tc.cfg).Canary
			if got.N != tc.want.N || got.NaN != tc.want.NaN || got.Outliers != tc.want.Outliers ||
				!near(got.Mean, tc.want.Mean) || !near(got.Median, tc.want.Median) || got.Min != tc.want.Min ||
				got.Max != tc.want.Max || !near(got.StdDev, tc.want.StdDev) {
				t.Errorf("%s: canary stats %+v; want %+v", tc.name, got, tc.want)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func seq(from, to int) []float64 {
	var v []float64
	for i := from; i <= to; i++ {
		v = append(v, float64(i))
	}
	return v
}

// TestRemoveOutliers checks Kayenta's IQR fences with reduceSensitivity:
// Tukey's fence at k·IQR, widened to the 1st and 99th percentiles.
func TestRemoveOutliers(t *testing.T) {
	tests := []struct {
		name   string
		sample []float64
		k      float64
		want   []float64 // the removed points
	}{
		// n = 101: Q1 26, Q3 76, IQR 50, upper fence max(P99 100, 226).
		{"Tukey fence removes a spike", append(seq(1, 100), 1000), 3, []float64{1000}},
		{"inside the fence stays", append(seq(1, 100), 226), 3, nil},
		{"just outside the fence goes", append(seq(1, 100), 226.5), 3, []float64{226.5}},
		{"a smaller factor removes more", append(seq(1, 100), 180), 1.5, []float64{180}},
		// IQR 0 would make every 9 and 11 an outlier; P1 = 9 and P99 = 11
		// keep them (that is what reduceSensitivity is for).
		{"percentiles widen a zero IQR", append(append(repeat(9, 3), repeat(10, 94)...), repeat(11, 3)...), 3, nil},
		{"single point", []float64{5}, 3, nil},
		{"empty", nil, 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sorted := slices.Clone(tc.sample)
			slices.Sort(sorted)
			kept := removeOutliers(sorted, tc.k)
			var removed []float64
			for _, v := range sorted {
				if !slices.Contains(kept, v) {
					removed = append(removed, v)
				}
			}
			if !slices.Equal(removed, tc.want) {
				t.Errorf("%s: removed %v; want %v", tc.name, removed, tc.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	// R: quantile(c(1, 2, 3, 4, 10), c(.01, .25, .5, .75, .99, 1), type = 7)
	v := []float64{1, 2, 3, 4, 10}
	for _, tc := range []struct{ p, want float64 }{{1, 1.04}, {25, 2}, {50, 3}, {75, 4}, {99, 9.76}, {100, 10}} {
		if got := percentile(v, tc.p); !near(got, tc.want) {
			t.Errorf("percentile(%v, %g) = %g; want %g", v, tc.p, got, tc.want)
		}
	}
}

func TestClassifyWarnings(t *testing.T) {
	tests := []struct {
		name             string
		canary, baseline []float64
		want             int
	}{
		{"both large", up5, baseline, 0},
		{"small canary", up5[:49], baseline, 1},
		{"both small", up5[:10], baseline[:10], 2},
		{"50 is enough", up5[:50], baseline[:50], 0},
		{"no data: no warning, the reason says it", nil, baseline, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.canary, tc.baseline, Config{}).Warnings
			if len(got) != tc.want {
				t.Errorf("%s: warnings %q; want %d", tc.name, got, tc.want)
			}
			for _, w := range got {
				if !strings.Contains(w, "fewer than 50") {
					t.Errorf("%s: warning %q does not say fewer than 50", tc.name, w)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error, one per problem; none means valid
	}{
		{"zero value", Config{}, nil},
		{"all set", Config{Direction: DirectionIncrease, NaNStrategy: NaNReplace, RemoveOutliers: true, OutlierFactor: 1.5,
			ConfidenceLevel: 0.95, Tolerance: 0.1, EffectSizeMeasure: EffectMeanRatio, AllowedIncrease: 1.1,
			AllowedDecrease: 0.9, CriticalIncrease: 2, CriticalDecrease: 0.5, Critical: true}, nil},
		{"every problem listed", Config{Direction: "up", NaNStrategy: "zero", OutlierFactor: -1, ConfidenceLevel: 1,
			Tolerance: math.NaN(), EffectSizeMeasure: "cohen", AllowedIncrease: math.Inf(1)},
			[]string{`direction "up"`, `nanStrategy "zero"`, "outlierFactor -1", "confidenceLevel 1", "tolerance NaN",
				`measure "cohen"`, "allowedIncrease +Inf"}},
		{"cles thresholds are probabilities", Config{EffectSizeMeasure: EffectCLES, AllowedIncrease: 1.1},
			[]string{"allowedIncrease 1.1: a cles threshold is a probability"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !checkValidate(t, tc.name, err, tc.want) {
				return
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tc.want) {
				t.Errorf("%s: Validate() lists %d problems; want %d", tc.name, n, len(tc.want))
			}
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	got := Config{}.WithDefaults()
	want := Config{Direction: DirectionEither, NaNStrategy: NaNRemove, OutlierFactor: 3, ConfidenceLevel: 0.98,
		Tolerance: 0.25, EffectSizeMeasure: EffectMeanRatio, AllowedIncrease: 1, AllowedDecrease: 1,
		CriticalIncrease: 1, CriticalDecrease: 1}
	if got != want {
		t.Errorf("Config{}.WithDefaults() = %+v; want %+v", got, want)
	}
	got = Config{EffectSizeMeasure: EffectCLES, AllowedIncrease: 0.7}.WithDefaults()
	if got.AllowedIncrease != 0.7 || got.AllowedDecrease != 0.5 || got.CriticalIncrease != 0.5 || got.CriticalDecrease != 0.5 {
		t.Errorf("cles defaults = %+v; want allowedIncrease 0.7 kept, the others 0.5", got)
	}
}

func TestEffectSizes(t *testing.T) {
	tests := []struct {
		name             string
		canary, baseline []float64
		wantCLES         float64
	}{
		{"canary above every baseline point", []float64{4, 5, 6}, []float64{1, 2, 3}, 1},
		{"canary below", []float64{1, 2, 3}, []float64{4, 5, 6}, 0},
		{"all tied", []float64{2, 2}, []float64{2, 2, 2}, 0.5},
		// Pairs: 1 vs (1,3): tie, less; 4 vs (1,3): more, more → (0.5+0+1+1)/4.
		{"mixed with a tie", []float64{1, 4}, []float64{1, 3}, 0.625},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cles(slices.Clone(tc.canary), slices.Clone(tc.baseline)); got != tc.wantCLES {
				t.Errorf("%s: cles = %g; want %g", tc.name, got, tc.wantCLES)
			}
		})
	}
	if got := meanRatio(2, 0); !math.IsNaN(got) {
		t.Errorf("meanRatio(2, 0) = %g; want NaN", got)
	}
	if got := meanRatio(0, 2); !math.IsNaN(got) {
		t.Errorf("meanRatio(0, 2) = %g; want NaN", got)
	}
	if got := meanRatio(3, 2); got != 1.5 {
		t.Errorf("meanRatio(3, 2) = %g; want 1.5", got)
	}
}

// checkValidate checks the error of a Validate named name: nil when want is
// empty, else one containing every text of want. It reports whether there
// is an error to look at further.
func checkValidate(t *testing.T, name string, err error, want []string) bool {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: Validate() = %v; want nil", name, err)
		}
		return false
	}
	if err == nil {
		t.Fatalf("%s: Validate() = nil; want %q", name, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: Validate() = %q; want it to contain %q", name, err, w)
		}
	}
	return true
}
