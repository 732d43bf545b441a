package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// python is Debian's Python, which has python3-scipy (make test installs
// it).
const python = "/usr/bin/python3"

func mustCountTest(t *testing.T, cfg CountConfig) *CountTest {
	t.Helper()
	ct, err := NewCountTest(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

func TestCountConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg   CountConfig
		field string
	}{
		{CountConfig{}, ""},
		{CountConfig{Alpha: 0.5}, ""},
		{CountConfig{Alpha: 0.51}, "alpha"},
		{CountConfig{Alpha: -0.1}, "alpha"},
		{CountConfig{Alpha: math.NaN()}, "alpha"},
		{CountConfig{Tolerance: -1}, "tolerance"},
		{CountConfig{Tolerance: math.Inf(1)}, "tolerance"},
		{CountConfig{Tolerance: math.NaN()}, "tolerance"},
		{CountConfig{Direction: "either"}, "direction"},
		{CountConfig{Direction: DirectionDecrease, Tolerance: 0.8}, ""},
		{CountConfig{Dispersion: 1}, ""},
		{CountConfig{Dispersion: 2.5}, ""},
		{CountConfig{Dispersion: 0.9}, "dispersion"},
		{CountConfig{Dispersion: -1}, "dispersion"},
		{CountConfig{Dispersion: math.Inf(1)}, "dispersion"},
		{CountConfig{Dispersion: math.NaN()}, "dispersion"},
	} {
		_, err := NewCountTest(tc.cfg)
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: got %v, want a problem with %s", tc.cfg, err, tc.field)
		}
	}
}

func look(cb, ct, bb, bt float64) CountLook {
	return CountLook{Canary: Counts{cb, ct}, Baseline: Counts{bb, bt}}
}

func TestCountBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		looks []CountLook
		field string
	}{
		{"negative", []CountLook{look(-1, 10, 0, 10)}, "canary.bad"},
		{"NaN", []CountLook{look(0, 10, math.NaN(), 10)}, "baseline.bad"},
		{"Inf", []CountLook{look(0, math.Inf(1), 0, 10)}, "canary.total"},
		{"more bad than total", []CountLook{look(0, 10, 11, 10)}, "baseline.bad"},
		{"decreasing total", []CountLook{look(1, 10, 1, 100), look(1, 9, 1, 100)}, "canary.total"},
		{"decreasing bad", []CountLook{look(1, 10, 5, 100), look(1, 20, 4, 200)}, "baseline.bad"},
	} {
		ct := mustCountTest(t, CountConfig{})
		var err error
		var before CountResult
		for i, l := range tc.looks {
			var r CountResult
			r, err = ct.Observe(l)
			if err != nil {
				break
			}
			if i == len(tc.looks)-2 {
				before = r
			}
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a problem with %s", tc.name, err, tc.field)
			continue
		}
		// A refused look leaves the test as it was.
		if len(tc.looks) > 1 {
			after := ct.Conclude()
			if after.Look != before.Look || after.Canary != before.Canary {
				t.Errorf("%s: the refused look changed the test: %+v after %+v", tc.name, after, before)
			}
		}
	}
}

// stream feeds looks of a canary whose bad-event rate is ratio times the
// baseline's, with perLook bad events expected on the baseline's scale.
func stream(t *testing.T, ct *CountTest, seed uint64, looks int, share, ratio, perLook float64) []CountResult {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var l CountLook
	var out []CountResult
	for range looks {
		n := 10000.0
		nc := math.Round(n * share)
		p := perLook / n
		l.Canary.Total += nc
		l.Baseline.Total += n - nc
		l.Canary.Bad += float64(binomial(r, int(nc), math.Min(1, p*ratio)))
		l.Baseline.Bad += float64(binomial(r, int(n-nc), p))
		res, err := ct.Observe(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

func binomial(r *rand.Rand, n int, p float64) int {
	k := 0
	for range n {
		if r.Float64() < p {
			k++
		}
	}
	return k
}

func TestCountDecisions(t *testing.T) {
	// A fivefold rise at a 10% share fails, and stays Failed.
	res := stream(t, mustCountTest(t, CountConfig{}), 1, 60, 0.1, 5, 5)
	first := -1
	for i, r := range res {
		if r.Decision == DecisionFailed && first < 0 {
			first = i
		}
		if first >= 0 && r.Decision != DecisionFailed {
			t.Fatalf("look %d: %s after Failed at look %d", r.Look, r.Decision, first+1)
		}
	}
	if first < 0 {
		t.Fatalf("a fivefold rise was not detected in 60 looks: last %+v", res[len(res)-1])
	}
	if r := res[first]; r.EValue < r.Threshold || r.PValue > 0.05 || !(r.Ratio.Lower > 1) {
		t.Errorf("Failed without its evidence: %+v", r)
	}
	// The same rise, in a direction that fails decreases, never fails.
	for _, r := range stream(t, mustCountTest(t, CountConfig{Direction: DirectionDecrease}), 1, 60, 0.1, 5, 5) {
		if r.Decision == DecisionFailed {
			t.Fatalf("a rise failed a decrease test: %+v", r)
		}
	}
	// A canary as good as its baseline, with a tolerance of +50%, ends
	// Successful early once there is enough evidence.
	res = stream(t, mustCountTest(t, CountConfig{Tolerance: 1.5}), 2, 200, 0.5, 1, 20)
	if last := res[len(res)-1]; last.Decision != DecisionSuccessful || !(last.Ratio.Upper < 1.5) {
		t.Errorf("A/A with tolerance 1.5 did not end Successful with the sequence below it: %+v", last)
	}
}

func TestCountConfidenceSequenceCovers(t *testing.T) {
	// Over seeds, the sequence holds the true ratio at every look far more
	// often than 1 − alpha requires of it at all looks together.
	misses := 0
	const trials = 100
	for seed := range uint64(trials) {
		for _, r := range stream(t, mustCountTest(t, CountConfig{}), seed, 40, 0.2, 2, 10) {
			if r.Ratio.Lower > 2 || r.Ratio.Upper < 2 {
				misses++
				break
			}
		}
	}
	if misses > trials/10 {
		t.Errorf("the sequence missed a ratio of 2 in %d of %d runs", misses, trials)
	}
}

func TestCountConclude(t *testing.T) {
	ct := mustCountTest(t, CountConfig{})
	if r := ct.Conclude(); r.Decision != DecisionSuccessful || r.EValue != 1 {
		t.Errorf("no looks: %+v", r)
	}
	// Suggestive evidence short of 1/alpha: Inconclusive at the end.
	ct = mustCountTest(t, CountConfig{})
	var r CountResult
	for i := 1; i <= 100 && r.EValue < math.Sqrt(20); i++ {
		r, _ = ct.Observe(look(float64(2*i), float64(1000*i), float64(6*i), float64(9000*i)))
	}
	if r.Decision != DecisionContinue || r.EValue < math.Sqrt(20) {
		t.Fatalf("the stream did not reach suggestive evidence without a decision: %+v", r)
	}
	if c := ct.Conclude(); c.Decision != DecisionInconclusive {
		t.Errorf("suggestive evidence concluded %s", c.Decision)
	}
}

// TestCountOddsTermsReused: a look whose odds repeat the last look's
// reuses that look's logarithms; the results are those of a test that
// computes them again at every look, to the bit, with the window of the
// confidence sequence narrowing in between.
func TestCountOddsTermsReused(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dir := range []Direction{DirectionIncrease, DirectionDecrease} {
		reused := mustCountTest(t, CountConfig{Direction: dir, Tolerance: 1.2})
		fresh := mustCountTest(t, CountConfig{Direction: dir, Tolerance: 1.2})
		var l CountLook
		reuses := 0
		for k := range 400 {
			// Runs of looks with the same totals, then a change of share.
			nc, nb := 1000.0, 1000.0
			if k/25%2 == 1 {
				nc, nb = 300, 2000
			}
			l.Canary.Total += nc
			l.Baseline.Total += nb
			l.Canary.Bad += float64(binomial(r, int(nc), 0.02))
			l.Baseline.Bad += float64(binomial(r, int(nb), 0.01))
			if reused.haveTerms && reused.termsOdds == nc/nb {
				reuses++
			}
			fresh.haveTerms = false
			a, errA := reused.Observe(l)
			b, errB := fresh.Observe(l)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if a != b {
				t.Fatalf("%s look %d: reusing the terms gives %+v, computing them %+v", dir, k+1, a, b)
			}
		}
		if reuses < 300 || reused.lower == 0 {
			t.Errorf("%s: %d looks reused the terms, the sequence's lower index is %d: the stream does not exercise the reuse", dir, reuses, reused.lower)
		}
	}
}

// oracleCases are count streams with shares that change between looks,
// bursts, both directions and several tolerances.
func oracleCases() []map[string]any {
	r := rand.New(rand.NewPCG(20, 26))
	var cases []map[string]any
	for i := range 60 {
		dir := "increase"
		if i%5 == 4 {
			dir = "decrease"
		}
		tol := []float64{1, 1.2, 0.8, 2}[i%4]
		ratio := []float64{1, 1.5, 3, 0.5}[i%4]
		var cum [4]int
		var looks []CountLook
		for k := range 5 + r.IntN(40) {
			share := 0.02 + 0.5*r.Float64()
			n := 200 + r.IntN(5000)
			nc := int(float64(n) * share)
			p := 0.002 + 0.02*r.Float64()
			burst := 1
			if k%7 == 3 {
				burst = 1 + r.IntN(4)
			}
			cum[0] += min(nc, burst*binomial(r, nc, math.Min(1, p*ratio)))
			cum[1] += nc
			cum[2] += min(n-nc, burst*binomial(r, n-nc, p))
			cum[3] += n - nc
			looks = append(looks, look(float64(cum[0]), float64(cum[1]), float64(cum[2]), float64(cum[3])))
		}
		c := map[string]any{"alpha": 0.05, "tolerance": tol, "direction": dir, "looks": looks}
		if i%6 == 1 || i%6 == 2 {
			// The baseline's history before the start
			// (CountConfig.History), bursty in half of them.
			var h Counts
			var hist []Counts
			p := 0.002 + 0.02*r.Float64()
			for k := range 20 + r.IntN(300) {
				n := 50 + r.IntN(2000)
				burst := 1
				if i%6 == 2 && k%5 == 1 {
					burst = 1 + r.IntN(6)
				}
				h.Bad += float64(min(n, burst*binomial(r, n, p)))
				h.Total += float64(n)
				hist = append(hist, h)
			}
			c["history"] = hist
		}
		if i%6 == 5 {
			// A dispersion fixed rather than estimated (CountConfig.Dispersion).
			c["dispersion"] = []float64{1, 2.5}[i/6%2]
		}
		cases = append(cases, c)
	}
	return cases
}

// runOracle runs testdata/judge/counts_oracle.py on req.
func runOracle(t *testing.T, req any) map[string]json.RawMessage {
	t.Helper()
	if _, err := exec.Command(python, "-c", "import scipy").CombinedOutput(); err != nil {
		t.Fatalf("the oracle needs Debian's python3-scipy (%s): apt-get install -y python3-scipy: %v", python, err)
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "../../testdata/judge/counts_oracle.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v: %s", err, stderr.String())
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// TestCountOracle recomputes every look's e-value of 60 count streams with
// scipy (testdata/judge/counts_oracle.py) and wants them to 1e-9; 20 of
// them carry a history of the baseline, half of it bursty.
func TestCountOracle(t *testing.T) {
	cases := oracleCases()
	res := runOracle(t, map[string]any{"cases": cases})
	var want [][]float64
	if err := json.Unmarshal(res["evalues"], &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cases) {
		t.Fatalf("the oracle answered %d cases of %d", len(want), len(cases))
	}
	checked, decided := 0, 0
	for i, c := range cases {
		dir := Direction(c["direction"].(string))
		disp, _ := c["dispersion"].(float64)
		hist, _ := c["history"].([]Counts)
		ct := mustCountTest(t, CountConfig{Alpha: 0.05, Tolerance: c["tolerance"].(float64), Direction: dir, Dispersion: disp, History: hist})
		for k, l := range c["looks"].([]CountLook) {
			r, err := ct.Observe(l)
			if err != nil {
				t.Fatalf("case %d look %d: %v", i, k+1, err)
			}
			if d := relDiff(r.EValue, want[i][k]); d > 1e-9 || math.IsNaN(d) {
				t.Errorf("case %d look %d: e-value %.17g, scipy %.17g (relative %.2g)", i, k+1, r.EValue, want[i][k], d)
			}
			checked++
		}
		if ct.Conclude().Decision == DecisionFailed {
			decided++
		}
	}
	if decided == 0 || decided == len(cases) {
		t.Errorf("%d of %d cases failed: the cases should cover both outcomes", decided, len(cases))
	}
	t.Logf("%d looks of %d cases agree with scipy; %d cases failed", checked, len(cases), decided)
}

// TestDirichletOracle checks DirichletMultinomialLogBF against scipy's
// loggamma on 50 count vectors.
func TestDirichletOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var ds []map[string]any
	for i := range 50 {
		arms := 2 + i%3
		theta := make([]float64, arms)
		counts := make([]float64, arms)
		var sum float64
		for j := range theta {
			theta[j] = 0.05 + r.Float64()
			sum += theta[j]
			counts[j] = float64(r.IntN(400))
		}
		for j := range theta {
			theta[j] /= sum
		}
		ds = append(ds, map[string]any{"counts": counts, "theta0": theta, "k": []float64{1, 10, 100}[i%3]})
	}
	var want []float64
	if err := json.Unmarshal(runOracle(t, map[string]any{"dirichlet": ds})["dirichlet"], &want); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		got := DirichletMultinomialLogBF(d["counts"].([]float64), d["theta0"].([]float64), d["k"].(float64))
		// The Bayes factors themselves, not their logs, to 1e-9.
		if diff := math.Abs(got - want[i]); diff > 1e-9 {
			t.Errorf("vector %d: log BF %.17g, scipy %.17g", i, got, want[i])
		}
	}
}

// TestDirichletSavviExample reproduces savvi's InhomogeneousPoissonProcess
// example: the events of testdata/judge/savvi_ipp.py, tested after each
// one with p = min(p, 1/BF), stop at n = 210 with p = 0.045580.
func TestDirichletSavviExample(t *testing.T) {
	b, err := os.ReadFile("../../testdata/judge/savvi_ipp_seed1.txt")
	if err != nil {
		t.Fatal(err)
	}
	events := strings.TrimSpace(string(b))
	theta := []float64{0.8, 0.2}
	counts := []float64{0, 0}
	p := 1.0
	for i, ev := range events {
		counts[ev-'0']++
		p = math.Min(p, 1/math.Exp(DirichletMultinomialLogBF(counts, theta, 100)))
		if p <= 0.05 {
			if n := i + 1; n != 210 || math.Abs(p-0.045580) > 5e-7 {
				t.Fatalf("stopped at n = %d with p = %.6f, want n = 210, p = 0.045580", n, p)
			}
			return
		}
	}
	t.Fatalf("never stopped in %d events", len(events))
}

func BenchmarkCountObserve(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	looks := make([]CountLook, 4096)
	var l CountLook
	for i := range looks {
		l.Canary.Total += 1000
		l.Baseline.Total += 9000
		l.Canary.Bad += float64(r.IntN(3))
		l.Baseline.Bad += float64(r.IntN(20))
		looks[i] = l
	}
	b.ReportAllocs()
	ct, _ := NewCountTest(CountConfig{})
	for i := 0; b.Loop(); i++ {
		if i%len(looks) == 0 {
			ct, _ = NewCountTest(CountConfig{})
		}
		if _, err := ct.Observe(looks[i%len(looks)]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHistoryPrior: a baseline history without bursts lets the first looks
// be judged at a dispersion near 1, a bursty one tempers them from the
// first, and a history that tells nothing changes nothing.
func TestHistoryPrior(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	history := func(burst bool) []Counts {
		var h Counts
		var out []Counts
		for k := range 1440 {
			n := 900
			b := binomial(r, n, 0.005)
			if burst && k%3 == 0 {
				b *= 4
			}
			h.Bad += float64(b)
			h.Total += float64(n)
			out = append(out, h)
		}
		return out
	}
	first := look(2, 100, 5, 900)
	at := func(h []Counts) CountResult {
		t.Helper()
		res, err := mustCountTest(t, CountConfig{History: h}).Observe(first)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	none := at(nil)
	if none.Dispersion < 10 {
		t.Errorf("no history: the first look's dispersion is %g, want the default prior's strong tempering", none.Dispersion)
	}
	if d := at(history(false)).Dispersion; d > 1.15 {
		t.Errorf("a Poisson history: dispersion %g at the first look, want near 1", d)
	}
	if d := at(history(true)).Dispersion; d < 2 {
		t.Errorf("a bursty history: dispersion %g at the first look, want well above 1", d)
	}
	for name, h := range map[string][]Counts{
		"no bad events": {{0, 100}, {0, 200}, {0, 300}},
		"one block":     {{1, 100}, {6, 200}},
	} {
		if got := at(h); got.EValue != none.EValue || got.Dispersion != none.Dispersion {
			t.Errorf("%s: e-value %g, dispersion %g; want those without a history, %g and %g", name, got.EValue, got.Dispersion, none.EValue, none.Dispersion)
		}
	}
	// A fixed dispersion ignores the history.
	fixed, err := mustCountTest(t, CountConfig{Dispersion: 1, History: history(true)}).Observe(first)
	if err != nil || fixed.Dispersion != 1 {
		t.Errorf("dispersion fixed at 1 with a bursty history: %g, %v", fixed.Dispersion, err)
	}
}

func TestHistoryRefused(t *testing.T) {
	for _, tc := range []struct {
		h     []Counts
		field string
	}{
		{[]Counts{{1, 10}, {0, 20}}, "history[1].bad"},
		{[]Counts{{1, 10}, {2, 5}}, "history[1].total"},
		{[]Counts{{-1, 10}}, "history[0].bad"},
		{[]Counts{{5, 4}}, "history[0].bad"},
		{[]Counts{{1, 10}, {2, math.NaN()}}, "history[1].total"},
		{[]Counts{{math.Inf(1), 10}}, "history[0].bad"},
	} {
		_, err := NewCountTest(CountConfig{History: tc.h})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("history %v: %v, want a problem with %s", tc.h, err, tc.field)
		}
	}
}
