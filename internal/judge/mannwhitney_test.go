package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// goldenPath is written by testdata/judge/golden.R (Rscript
// testdata/judge/golden.R from the repository root); make test does not run
// R, it reads the committed file.
var goldenPath = filepath.Join("..", "..", "testdata", "judge", "golden.json")

// rnum is a number in golden.json: R writes NaN and ±Inf, which JSON cannot
// hold, as the strings "NaN", "Inf" and "-Inf".
type rnum float64

func (n *rnum) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			*n = rnum(math.NaN())
		case "Inf":
			*n = rnum(math.Inf(1))
		case "-Inf":
			*n = rnum(math.Inf(-1))
		default:
			return fmt.Errorf("unknown number %q", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = rnum(f)
	return nil
}

type goldenCase struct {
	Name      string   `json:"name"`
	ConfLevel float64  `json:"conf_level"`
	X         []rnum   `json:"x"`
	Y         []rnum   `json:"y"`
	Statistic rnum     `json:"statistic"`
	PValue    rnum     `json:"p_value"`
	Estimate  *rnum    `json:"estimate"` // nil where R failed
	ConfInt   []rnum   `json:"conf_int"` // nil where R failed
	Error     *string  `json:"error"`
	Warnings  []string `json:"warnings"`
}

type goldenFile struct {
	RVersion string       `json:"r_version"`
	Cases    []goldenCase `json:"cases"`
}

func floats(v []rnum) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

// goldenTolerance is the agreement demanded of every number in golden.json:
// a relative error of at most 1e-6, |got − want| <= 1e-6·|want|, with an
// absolute floor of 1e-12 for values at or next to zero (an estimate of 0
// may come out as ±1e-17 from the root finder). NaN agrees only with NaN.
const goldenTolerance = 1e-6

func agrees(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if got == want {
		return true
	}
	return math.Abs(got-want) <= math.Max(goldenTolerance*math.Abs(want), 1e-12)
}

func loadGolden(t testing.TB) goldenFile {
	t.Helper()
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("reading %s (regenerate with Rscript testdata/judge/golden.R): %v", goldenPath, err)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("decoding %s: %v", goldenPath, err)
	}
	if len(g.Cases) == 0 {
		t.Fatalf("%s has no cases", goldenPath)
	}
	return g
}

// TestMannWhitneyGolden checks MannWhitney against R's wilcox.test(x, y,
// conf.int = TRUE, conf.level, exact = FALSE, correct = TRUE) on every case
// of golden.json, to a relative 1e-6 (see goldenTolerance). Where R fails to
// compute the interval, MannWhitney must fail too, with W and the p-value
// still R's.
func TestMannWhitneyGolden(t *testing.T) {
	g := loadGolden(t)
	for _, tc := range g.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := MannWhitney(floats(tc.X), floats(tc.Y), tc.ConfLevel)
			if !agrees(got.W, float64(tc.Statistic)) {
				t.Errorf("W = %.17g; R (%s) says %.17g", got.W, g.RVersion, float64(tc.Statistic))
			}
			if !agrees(got.PValue, float64(tc.PValue)) {
				t.Errorf("p-value = %.17g; R says %.17g", got.PValue, float64(tc.PValue))
			}
			if tc.Error != nil {
				if !errors.Is(err, ErrTied) && !errors.Is(err, ErrNonFinite) {
					t.Fatalf("err = %v; R failed (%q), so want ErrTied or ErrNonFinite", err, *tc.Error)
				}
				if !math.IsNaN(got.Estimate) || !math.IsNaN(got.Lower) || !math.IsNaN(got.Upper) {
					t.Errorf("estimate and interval = %g [%g, %g]; want NaN where R failed", got.Estimate, got.Lower, got.Upper)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v; R computed the interval", err)
			}
			if !agrees(got.Estimate, float64(*tc.Estimate)) {
				t.Errorf("estimate = %.17g; R says %.17g", got.Estimate, float64(*tc.Estimate))
			}
			if len(tc.ConfInt) != 2 {
				t.Fatalf("golden conf_int has %d values", len(tc.ConfInt))
			}
			if !agrees(got.Lower, float64(tc.ConfInt[0])) || !agrees(got.Upper, float64(tc.ConfInt[1])) {
				t.Errorf("interval = [%.17g, %.17g]; R says [%.17g, %.17g]",
					got.Lower, got.Upper, float64(tc.ConfInt[0]), float64(tc.ConfInt[1]))
			}
		})
	}
}

func TestMannWhitneyErrors(t *testing.T) {
	tests := []struct {
		name      string
		x, y      []float64
		conf      float64
		wantErr   error
		wantStats bool // W and p still computed
	}{
		{"empty x", nil, []float64{1, 2}, 0.98, ErrNoData, false},
		{"only NaN in y", []float64{1, 2}, []float64{math.NaN()}, 0.98, ErrNoData, false},
		{"conf level 1", []float64{1, 2}, []float64{3, 4}, 1, ErrConfLevel, false},
		{"conf level 0", []float64{1, 2}, []float64{3, 4}, 0, ErrConfLevel, false},
		{"conf level NaN", []float64{1, 2}, []float64{3, 4}, math.NaN(), ErrConfLevel, false},
		{"both constant", []float64{2, 2, 2}, []float64{1, 1, 1}, 0.98, ErrTied, true},
		{"one point each", []float64{2}, []float64{1}, 0.98, ErrTied, true},
		{"-Inf", []float64{math.Inf(-1), 2}, []float64{1, 3}, 0.98, ErrNonFinite, true},
		{"overflowing range", []float64{1e308, 1.7e308}, []float64{-1e308, 0}, 0.98, ErrNonFinite, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MannWhitney(tc.x, tc.y, tc.conf)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("%s: err = %v; want %v", tc.name, err, tc.wantErr)
			}
			if stats := !math.IsNaN(got.W) && !math.IsNaN(got.PValue); stats != tc.wantStats {
				t.Errorf("%s: W %g, p %g; want them computed: %t", tc.name, got.W, got.PValue, tc.wantStats)
			}
			if !math.IsNaN(got.Estimate) || !math.IsNaN(got.Lower) || !math.IsNaN(got.Upper) {
				t.Errorf("%s: estimate %g [%g, %g]; want NaN with an error", tc.name, got.Estimate, got.Lower, got.Upper)
			}
		})
	}
}

// TestMannWhitneyDropsNaN checks that NaNs are dropped as R drops them, and
// that the arguments are left alone.
func TestMannWhitneyDropsNaN(t *testing.T) {
	x := []float64{4, math.NaN(), 5, 6}
	y := []float64{3, 1, math.NaN(), 2}
	got, err := MannWhitney(x, y, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	// R: wilcox.test(c(4, NaN, 5, 6), c(3, 1, NaN, 2), conf.int = TRUE,
	// conf.level = 0.98, exact = FALSE) is the golden case without NaNs.
	want := MWResult{W: 9, PValue: 0.0808555983700523, Estimate: 3, Lower: 1, Upper: 5}
	if !agrees(got.W, want.W) || !agrees(got.PValue, want.PValue) || !agrees(got.Estimate, want.Estimate) ||
		!agrees(got.Lower, want.Lower) || !agrees(got.Upper, want.Upper) {
		t.Errorf("MannWhitney with NaNs = %+v; want %+v", got, want)
	}
	if x[0] != 4 || !math.IsNaN(x[1]) || y[0] != 3 {
		t.Errorf("MannWhitney modified its arguments: %v %v", x, y)
	}
}

// TestMannWhitneyIntervalIsOrdered: with heavily tied samples the statistic
// jumps across both quantiles at one shift (8 here), both ends of the
// interval are that shift to within the root finder's tolerance, and they
// must still come out ordered. (FuzzClassify found the case.)
func TestMannWhitneyIntervalIsOrdered(t *testing.T) {
	x := []float64{0, 11, 1, 8, 8, 8}
	y := make([]float64, 57)
	y[19] = 2
	got, err := MannWhitney(x, y, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if !(got.Lower <= got.Upper) || math.Abs(got.Lower-8) > 1e-4 || math.Abs(got.Upper-8) > 1e-4 {
		t.Errorf("interval [%g, %g], want both ends at 8, ordered", got.Lower, got.Upper)
	}
}

// TestQnorm checks the AS 241 quantile against R 4.2's qnorm, printed with
// digits = 17. The branches: central (|p − ½| <= 0.425), tail (r <= 5) and
// far tail.
func TestQnorm(t *testing.T) {
	for _, tc := range []struct {
		p     float64
		lower bool
		want  float64
	}{
		{0.01, false, 2.3263478740408408},
		{0.1, false, 1.2815515655446008},
		{0.025, true, -1.9599639845400538},
		{0.3, true, -0.5244005127080407},
		{0.5, true, 0},
		{1e-20, true, -9.262340089798405},
		{1e-20, false, 9.262340089798405},
		{0, true, math.Inf(-1)},
		{1, true, math.Inf(1)},
	} {
		got := qnorm(tc.p, tc.lower)
		if got != tc.want && math.Abs(got-tc.want) > 4e-16*math.Abs(tc.want) {
			t.Errorf("qnorm(%g, lower %t) = %.17g; want R's %.17g", tc.p, tc.lower, got, tc.want)
		}
	}
	if got := qnorm(1.5, true); !math.IsNaN(got) {
		t.Errorf("qnorm(1.5) = %g; want NaN", got)
	}
}

func TestZeroin(t *testing.T) {
	f := func(x float64) float64 { return x*x - 2 }
	got := zeroin(f, 0, 2, f(0), f(2), 1e-12, 1000)
	if math.Abs(got-math.Sqrt2) > 1e-12 {
		t.Errorf("zeroin(x² − 2) = %.17g; want √2", got)
	}
	if got := zeroin(f, math.Sqrt2, 2, 0, f(2), 1e-4, 1000); got != math.Sqrt2 {
		t.Errorf("zeroin with f(a) = 0 = %g; want a", got)
	}
}

// goldenVerdicts is Classify's verdict, with the default Config at the
// case's confidence level, on each golden case. Where R computed the
// interval, Classify must also report R's p-value, estimate and interval.
// Where R failed, the row says what Classify does instead, explicitly.
var goldenVerdicts = map[string]struct {
	want Classification
	// For the cases R fails on: the p-value, estimate and interval Classify
	// reports.
	p, estimate, lower, upper float64
}{
	// Fully separated tiny samples are High even at p = 0.08: the interval
	// cannot extend past [min(x) − max(y), max(x) − min(y)] (R, Kayenta).
	"tiny n=3, canary above baseline, no overlap": {want: High},
	"tiny n=3, canary below baseline, no overlap": {want: Low},
	"tiny n=3, overlapping":                       {want: Pass},
	"n=2 against n=3":                             {want: Pass},
	"n=1 against n=5":                             {want: Pass},
	"identical samples, not constant":             {want: Pass},
	"ties: sparse error counts":                   {want: Pass},
	"ties: baseline constant zero":                {want: Pass},
	"ties: rounded n=200, canary +3":              {want: High},
	"ties: rounded n=200, unshifted":              {want: Pass},
	"large n=200, unshifted":                      {want: Pass},
	"large n=200, canary +5%":                     {want: High},
	"large n=200, canary -5%":                     {want: Low},
	"large n=200, canary +0.5 (small shift)":      {want: Pass},
	"large n=200 against n=150":                   {want: Pass},
	// Significant (p = 0.006), but the interval's lower end 0.31 is under
	// 0.25 × the estimate 1.99.
	"n=1000 with spikes, canary +2%": {want: Pass},
	// Higher, but the mean ratio of negative means is below 1.
	"negative values": {want: Pass},
	"decimal fractions (root-finding tolerance shows)":         {want: Pass},
	"small values (error ratios)":                              {want: High},
	"conf.level 0.95, n=200 canary +0.5":                       {want: Pass},
	"conf.level 0.80 (central qnorm branch), tiny overlapping": {want: Pass},
	"conf.level 0.80, n=200 canary +0.5":                       {want: Pass},
	// R fails on the rest.
	// One value everywhere: Pass without a test, as no shift at all.
	"all tied: both samples the same constant": {want: Pass, p: 1, estimate: 0, lower: 0, upper: 0},
	// Each constant: the limit of Kayenta's tie-breaking noise, the
	// difference 5 − 1; R's p-value.
	"all tied: both constant, different values": {want: High, p: 1.0827834312358088e-27, estimate: 4, lower: 4, upper: 4},
	// One point each: the same rule (Kayenta gives Error).
	"all tied: one point each": {want: High, p: 1, estimate: 2, lower: 2, upper: 2},
	// ±Inf: Error, with R's p-value; no estimate or interval.
	"infinite value in the canary": {want: Error, p: 1, estimate: math.NaN(), lower: math.NaN(), upper: math.NaN()},
}

func TestClassifyGolden(t *testing.T) {
	g := loadGolden(t)
	if len(goldenVerdicts) != len(g.Cases) {
		t.Errorf("goldenVerdicts has %d rows for %d golden cases", len(goldenVerdicts), len(g.Cases))
	}
	for _, tc := range g.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			want, ok := goldenVerdicts[tc.Name]
			if !ok {
				t.Fatalf("no verdict for golden case %q", tc.Name)
			}
			got := Classify(floats(tc.X), floats(tc.Y), Config{ConfidenceLevel: tc.ConfLevel})
			if got.Classification != want.want {
				t.Errorf("Classify = %s (%q); want %s", got.Classification, got.Reason, want.want)
			}
			p, est, lo, hi := want.p, want.estimate, want.lower, want.upper
			if tc.Error == nil {
				p, est, lo, hi = float64(tc.PValue), float64(*tc.Estimate), float64(tc.ConfInt[0]), float64(tc.ConfInt[1])
			}
			if !agrees(got.PValue, p) || !agrees(got.Estimate, est) ||
				!agrees(got.ConfidenceInterval[0], lo) || !agrees(got.ConfidenceInterval[1], hi) {
				t.Errorf("p %.17g, estimate %.17g, interval %v; want %.17g, %.17g, [%.17g, %.17g]",
					got.PValue, got.Estimate, got.ConfidenceInterval, p, est, lo, hi)
			}
		})
	}
}
