package canarybench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/canaryd/canaryd/internal/judge"
)

// Case is one labelled canary: a canary and a baseline observed at
// IntervalSeconds apart, with the truth of whether the canary regressed.
type Case struct {
	// ID names the case; it is unique in a set.
	ID string `json:"id"`
	// Family is the kind of case (see Families).
	Family string `json:"family"`
	Labels Labels `json:"labels"`
	// IntervalSeconds is the time between looks.
	IntervalSeconds int `json:"intervalSeconds"`
	// Looks are both sides' cumulative counts since the start, one per
	// interval: the input of `canaryd judge`, line for line.
	Looks []judge.CountLook `json:"looks"`
	// HistoryStepSeconds is the time between the points of History.
	HistoryStepSeconds int `json:"historyStepSeconds,omitempty"`
	// History is the baseline's cumulative counts at the end of each of
	// the HistorySteps intervals before the analysis started, oldest
	// first, counted from the start of the first: the baseline's past,
	// when it served all the service's traffic, from which a method may
	// learn its noise (judge.CountConfig.History). A case made elsewhere
	// may have none.
	History []judge.Counts `json:"history,omitempty"`
}

// Labels are the truth of a case and the parameters it was made with.
type Labels struct {
	// Regression is true when the canary's rate of bad events is higher
	// than the baseline's (Ratio > 1).
	Regression bool `json:"regression"`
	// Ratio is the true rate ratio of bad events, canary/baseline.
	Ratio float64 `json:"ratio"`
	// Share is the canary's share of the traffic from the start;
	// ShareAfter its share from look ShiftLook (1-based) on, when it
	// changes.
	Share      float64 `json:"share"`
	ShareAfter float64 `json:"shareAfter,omitempty"`
	ShiftLook  int     `json:"shiftLook,omitempty"`
	// Dispersion is that of the bad events of each side at each look:
	// negative binomial with variance mean·(1 + Dispersion); 0 is Poisson.
	Dispersion float64 `json:"dispersion"`
	// Traffic is flat, or daily: the requests follow a day's cycle, ±60%
	// around their mean, from a random hour.
	Traffic string `json:"traffic"`
	// Metric is errors (bad = an error response) or latency (bad = a
	// request slower than LatencyLE seconds, as a histogram's
	// count − bucket{le} counts them).
	Metric string `json:"metric"`
	// BaselineRate is the baseline's probability that a request is bad.
	BaselineRate float64 `json:"baselineRate"`
	// RequestsPerSecond is the service's mean traffic, both sides.
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	// For latency: the latencies are log-normal with median 100 ms and
	// log-sd 0.5; the canary's are LatencyShift times slower; bad is
	// slower than LatencyLE.
	LatencyShift float64 `json:"latencyShift,omitempty"`
	LatencyLE    float64 `json:"latencyLE,omitempty"`
}

// cell is a group of cases made alike.
type cell struct {
	family     string
	n          int // cases at scale 1
	ratio      float64
	share      float64
	shareAfter float64
	dispersion float64
	traffic    string
	shift      float64 // latency shift, for the latency family
	looks      int
	interval   int
}

// Families are the case families, in the order of the set.
var Families = []string{"aa", "aa-daily", "aa-shift", "aa-bursty", "aa-latency", "ratio", "ratio-daily", "ratio-shift", "ratio-bursty", "latency"}

// Every case's history is a day of five-minute intervals.
const (
	HistorySteps       = 288
	HistoryStepSeconds = 300
)

// The latency model of the latency family.
const (
	latencyMedian = 0.1
	latencySigma  = 0.5
	latencyLE     = 0.25
)

// Shares are the canary shares of the main grid; Ratios its rate ratios.
var (
	Shares = []float64{0.01, 0.05, 0.1, 0.5}
	Ratios = []float64{1.25, 1.5, 2, 5}
)

func cells() []cell {
	var cs []cell
	const looks, interval = 90, 60
	for _, s := range Shares {
		cs = append(cs, cell{family: "aa", n: 25, ratio: 1, share: s, traffic: "flat", looks: looks, interval: interval})
	}
	cs = append(cs,
		cell{family: "aa-daily", n: 20, ratio: 1, share: 0.1, traffic: "daily", looks: 96, interval: 300},
		cell{family: "aa-shift", n: 10, ratio: 1, share: 0.05, shareAfter: 0.25, traffic: "flat", looks: looks, interval: interval},
		cell{family: "aa-shift", n: 10, ratio: 1, share: 0.1, shareAfter: 0.5, traffic: "flat", looks: looks, interval: interval},
		cell{family: "aa-bursty", n: 10, ratio: 1, share: 0.1, dispersion: 1, traffic: "flat", looks: looks, interval: interval},
		cell{family: "aa-bursty", n: 10, ratio: 1, share: 0.1, dispersion: 3, traffic: "flat", looks: looks, interval: interval},
		cell{family: "aa-bursty", n: 10, ratio: 1, share: 0.5, dispersion: 3, traffic: "flat", looks: looks, interval: interval},
		cell{family: "aa-latency", n: 10, shift: 1, share: 0.1, traffic: "flat", looks: looks, interval: interval},
	)
	for _, r := range Ratios {
		for _, s := range Shares {
			cs = append(cs, cell{family: "ratio", n: 10, ratio: r, share: s, traffic: "flat", looks: looks, interval: interval})
		}
	}
	cs = append(cs,
		cell{family: "ratio-daily", n: 10, ratio: 2, share: 0.1, traffic: "daily", looks: 96, interval: 300},
		cell{family: "ratio-shift", n: 10, ratio: 2, share: 0.05, shareAfter: 0.25, traffic: "flat", looks: looks, interval: interval},
		cell{family: "ratio-bursty", n: 10, ratio: 2, share: 0.1, dispersion: 1, traffic: "flat", looks: looks, interval: interval},
		cell{family: "ratio-bursty", n: 10, ratio: 5, share: 0.1, dispersion: 3, traffic: "flat", looks: looks, interval: interval},
		cell{family: "latency", n: 10, shift: 1.1, share: 0.1, traffic: "flat", looks: looks, interval: interval},
		cell{family: "latency", n: 10, shift: 1.25, share: 0.1, traffic: "flat", looks: looks, interval: interval},
	)
	return cs
}

// Generate makes the benchmark's cases: scale copies of every cell's
// cases (scale 1 is the published set, testdata/benchmark/cases.ndjson),
// each from its own seed, so that a case depends only on its cell, its
// index and seed. A case's history is drawn from a second stream of its
// own (historyStream), so that adding it left every case's looks as they
// were.
func Generate(seed uint64, scale int) []Case {
	return GenerateWith(seed, scale, DefaultHistory)
}

// HistoryShape is how long a case's history is: Steps intervals of
// StepSeconds.
type HistoryShape struct{ Steps, StepSeconds int }

// DefaultHistory is the published set's: a day of five-minute intervals.
var DefaultHistory = HistoryShape{HistorySteps, HistoryStepSeconds}

// GenerateWith makes the cases as Generate does, each with a history of
// the given shape; every case's looks are the same whatever the shape.
// A longer history, or a finer one, tells the baseline's dispersion more
// precisely (judgebench -history-steps, -history-step).
func GenerateWith(seed uint64, scale int, hist HistoryShape) []Case {
	var out []Case
	for ci, c := range cells() {
		for i := range c.n * scale {
			key := uint64(ci)<<32 | uint64(i)
			r := rand.New(rand.NewPCG(seed, key))
			h := rand.New(rand.NewPCG(seed, key|historyStream))
			out = append(out, c.make(r, h, hist, fmt.Sprintf("%s-%03d-%04d", c.family, ci, i)))
		}
	}
	return out
}

// historyStream marks the second word of the seed of a case's history's
// stream; a cell's index stays far below 2³¹, so no case's looks share it.
const historyStream = 1 << 63

// The baseline's bad-event probabilities and the expected bad events per
// look (on the service's scale) that a case draws from.
var (
	baselineRates = []float64{0.002, 0.005, 0.008}
	eventsPerLook = []float64{3, 8}
)

func (c cell) make(r, h *rand.Rand, hist HistoryShape, id string) Case {
	lab := Labels{
		Ratio: c.ratio, Share: c.share, Dispersion: c.dispersion, Traffic: c.traffic, Metric: "errors",
	}
	p := baselineRates[r.IntN(len(baselineRates))]
	if c.family == "aa-latency" || c.family == "latency" {
		lab.Metric = "latency"
		lab.LatencyShift, lab.LatencyLE = c.shift, latencyLE
		p = slower(1)
		lab.Ratio = slower(c.shift) / p
	}
	lab.Regression = lab.Ratio > 1
	lab.BaselineRate = p
	lab.RequestsPerSecond = eventsPerLook[r.IntN(len(eventsPerLook))] / (p * float64(c.interval))
	if c.shareAfter > 0 {
		lab.ShareAfter, lab.ShiftLook = c.shareAfter, c.looks/2+1
	}
	phase := r.Float64() * 2 * math.Pi
	cs := Case{ID: id, Family: c.family, Labels: lab, IntervalSeconds: c.interval}
	var l judge.CountLook
	for k := range c.looks {
		rps := lab.RequestsPerSecond
		if c.traffic == "daily" {
			rps *= 1 + 0.6*math.Sin(phase+2*math.Pi*float64(k*c.interval)/86400)
		}
		share := c.share
		if lab.ShiftLook > 0 && k+1 >= lab.ShiftLook {
			share = lab.ShareAfter
		}
		n := poisson(r, rps*float64(c.interval))
		nc := binomial(r, n, share)
		nb := n - nc
		pc := math.Min(1, p*lab.Ratio)
		l.Canary.Total += nc
		l.Baseline.Total += nb
		l.Canary.Bad += bad(r, nc, pc, c.dispersion)
		l.Baseline.Bad += bad(r, nb, p, c.dispersion)
		cs.Looks = append(cs.Looks, l)
	}
	cs.HistoryStepSeconds = hist.StepSeconds
	cs.History = c.history(h, hist, lab, phase)
	return cs
}

// history draws the baseline's counts over the hist.Steps intervals before
// the analysis (a day, by default): with no canary yet, the baseline serves
// all the service's traffic, each interval Poisson requests (following the
// day, for daily traffic, on the cycle the analysis continues) and bad
// events drawn as the baseline's are during the analysis, at its rate and
// dispersion.
func (c cell) history(r *rand.Rand, hist HistoryShape, lab Labels, phase float64) []judge.Counts {
	out := make([]judge.Counts, hist.Steps)
	var cum judge.Counts
	for j := range out {
		rps := lab.RequestsPerSecond
		if c.traffic == "daily" {
			t := -float64((hist.Steps - j) * hist.StepSeconds)
			rps *= 1 + 0.6*math.Sin(phase+2*math.Pi*t/86400)
		}
		n := poisson(r, rps*float64(hist.StepSeconds))
		cum.Total += n
		cum.Bad += bad(r, n, lab.BaselineRate, c.dispersion)
		out[j] = cum
	}
	return out
}

// slower is the probability that a request of the latency model, shift
// times slower, takes longer than latencyLE.
func slower(shift float64) float64 {
	z := (math.Log(latencyLE) - math.Log(latencyMedian*shift)) / latencySigma
	return 0.5 * math.Erfc(z/math.Sqrt2)
}

// bad draws the bad events among n requests of probability p: binomial, or
// with dispersion d > 0 a beta-binomial of variance about n·p·(1 + d), the
// events of a look coming in bursts (retries, one failing client).
func bad(r *rand.Rand, n, p, d float64) float64 {
	if n == 0 || p == 0 {
		return 0
	}
	if d > 0 {
		// Beta(a, b) with mean p and a + b + 1 = (n − 1)/d + ... so that
		// the beta-binomial's variance n·p·(1−p)·(a+b+n)/(a+b+1) is about
		// n·p·(1+d).
		s := math.Max((n-1)/d-1, 1e-3)
		p = betaRand(r, p*s, (1-p)*s)
	}
	return binomial(r, n, p)
}

// binomial draws Binomial(n, p) for a float n of whole value: exactly up
// to 200 trials; beyond, Poisson for fewer than 30 expected events on
// either side, else a rounded normal of the binomial's mean and variance.
func binomial(r *rand.Rand, n, p float64) float64 {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	case n <= 200:
		k := 0.0
		for range int(n) {
			if r.Float64() < p {
				k++
			}
		}
		return k
	case n*p < 30:
		return math.Min(n, poisson(r, n*p))
	case n*(1-p) < 30:
		return math.Max(0, n-poisson(r, n*(1-p)))
	}
	m := n * p
	return math.Max(0, math.Min(n, math.Round(m+math.Sqrt(m*(1-p))*r.NormFloat64())))
}

// poisson draws Poisson(m): by inversion for small m, a rounded normal for
// large.
func poisson(r *rand.Rand, m float64) float64 {
	if m <= 0 {
		return 0
	}
	if m > 500 {
		return math.Max(0, math.Round(m+math.Sqrt(m)*r.NormFloat64()))
	}
	if m > 30 {
		// Sum of smaller draws keeps inversion exact and fast.
		h := m / 2
		return poisson(r, h) + poisson(r, m-h)
	}
	l := math.Exp(-m)
	k, prod := 0.0, r.Float64()
	for prod > l {
		k++
		prod *= r.Float64()
	}
	return k
}

// betaRand draws Beta(a, b) from two gamma draws.
func betaRand(r *rand.Rand, a, b float64) float64 {
	x := gammaRand(r, a)
	y := gammaRand(r, b)
	if x+y == 0 {
		return 0
	}
	return x / (x + y)
}

// gammaRand draws Gamma(a, 1) (Marsaglia and Tsang).
func gammaRand(r *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaRand(r, a+1) * math.Pow(r.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// Seed is the seed of the published set.
const Seed = 20261128

// WriteCases writes cases one JSON object a line.
func WriteCases(w io.Writer, cases []Case) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range cases {
		if err := enc.Encode(&cases[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadCases reads cases written by WriteCases, refusing unknown fields.
func ReadCases(r io.Reader) ([]Case, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []Case
	for {
		var c Case
		err := dec.Decode(&c)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("case %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
}
