package canarybench

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/internal/judge"
)

// Alpha is the level every method is run at.
const Alpha = 0.05

// Outcome is what a method made of one case.
type Outcome struct {
	// Look is the 1-based look of the first Failed, 0 if none.
	Look int
	// End is how the method ended: Failed, Successful (early, before the
	// last look), Successful, or Inconclusive.
	End string
	// Events, when not 0, is the bad events by the verdict, for a method
	// that reads within a look.
	Events float64
}

// Method judges cases.
type Method struct {
	Name string
	// How says, in a sentence, how the method was run.
	How   string
	Judge func(Case) Outcome
}

// The end states of Outcome.End besides Failed.
const (
	EndEarly        = "Successful early"
	EndSuccessful   = "Successful"
	EndInconclusive = "Inconclusive"
)

// Methods are the methods the benchmark scores, the count judge first.
func Methods() []Method {
	return append(CountMethods(0, true),
		Method{"sample judge, judged again at every interval", "`provider.judge` with `canary`/`baseline` queries of each side's bad/total ratio per interval, lookback 30 intervals, step one interval, direction increase, Kayenta's defaults; judged at every look from the 5th, Failed at the first High.", sampleJudge},
		Method{"threshold template", "the seed's template: `result[0] >= 0.99` on the whole service's success rate over each interval, failureLimit 1.", threshold},
		Method{"Dirichlet-multinomial at a declared share", "Lindon & Malek's test (savvi's default, k = 100) of the canary's share of bad events against the canary's traffic share at the start, as a user would declare it; Failed when 1/alpha is reached with the canary's share above it.", dirichlet},
	)
}

// CountMethods are the count judge's two readings: at every look, and
// after every event. A dispersion of 0 is the judge's own estimate; any
// other value fixes it (judge.CountConfig.Dispersion), to measure what the
// estimate costs and what it protects. With history, the judge is given
// each case's history of the baseline (judge.CountConfig.History), which
// sets the prior of its estimate; without, it starts from its default
// prior, as it does for a caller that gives none. A fixed dispersion
// ignores the history.
func CountMethods(dispersion float64, history bool) []Method {
	name, how := "count judge", ""
	switch {
	case dispersion != 0:
		name = fmt.Sprintf("count judge, dispersion fixed at %g", dispersion)
		how = fmt.Sprintf(" The dispersion is fixed at %g instead of estimated.", dispersion)
	case history:
		how = " The judge is given the case's history of the baseline (a day of five-minute intervals before the analysis), which sets the prior of its dispersion."
	default:
		name = "count judge, without the baseline's history"
		how = " The judge is given no history of the baseline: its dispersion starts from the default prior."
	}
	base := judge.CountConfig{Alpha: Alpha, Dispersion: dispersion}
	cfg := func(c Case) judge.CountConfig {
		cfg := base
		if history && dispersion == 0 {
			cfg.History = c.History
		}
		return cfg
	}
	return []Method{
		{name, "`provider.judge.counts` (internal/judge.CountTest), alpha 0.05, tolerance 1, read at every look." + how,
			func(c Case) Outcome { return countJudge(cfg(c), c) }},
		{name + ", read after every event", "the same test fed a look after every bad event: each interval's bad events in a random order, the totals interpolated over the interval. Events to Failed are then counted without the rounding up to a whole interval." + how,
			func(c Case) Outcome { return countJudgeEvents(cfg(c), c) }},
	}
}

func countJudge(cfg judge.CountConfig, c Case) Outcome {
	ct, err := judge.NewCountTest(cfg)
	if err != nil {
		panic(err)
	}
	for i, l := range c.Looks {
		r, err := ct.Observe(l)
		if err != nil {
			panic(fmt.Sprintf("%s look %d: %v", c.ID, i+1, err))
		}
		switch r.Decision {
		case judge.DecisionFailed:
			return Outcome{Look: i + 1, End: judge.DecisionFailed}
		case judge.DecisionSuccessful:
			return Outcome{End: EndEarly}
		}
	}
	return Outcome{End: ct.Conclude().Decision}
}

func countJudgeEvents(cfg judge.CountConfig, c Case) Outcome {
	ct, err := judge.NewCountTest(cfg)
	if err != nil {
		panic(err)
	}
	r := newRand(c.ID)
	var prev judge.CountLook
	for i, l := range c.Looks {
		for _, ev := range Events(r, prev, l) {
			res, err := ct.Observe(ev)
			if err != nil {
				panic(fmt.Sprintf("%s look %d: %v", c.ID, i+1, err))
			}
			switch res.Decision {
			case judge.DecisionFailed:
				return Outcome{Look: i + 1, End: judge.DecisionFailed, Events: res.Canary.Bad + res.Baseline.Bad}
			case judge.DecisionSuccessful:
				return Outcome{End: EndEarly}
			}
		}
		prev = l
	}
	return Outcome{End: ct.Conclude().Decision}
}

// Events splits the interval from look prev to look l into one look per bad
// event, the events of both sides in a random order, each side's total
// interpolated over the interval (and never below its bad events), ending
// at l.
func Events(r *rand.Rand, prev, l judge.CountLook) []judge.CountLook {
	ec := int(l.Canary.Bad - prev.Canary.Bad)
	eb := int(l.Baseline.Bad - prev.Baseline.Bad)
	n := ec + eb
	if n <= 1 {
		return []judge.CountLook{l}
	}
	sides := make([]bool, n) // true: the canary's
	for i := range ec {
		sides[i] = true
	}
	r.Shuffle(n, func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
	out := make([]judge.CountLook, 0, n)
	cur := prev
	for i, canary := range sides {
		if canary {
			cur.Canary.Bad++
		} else {
			cur.Baseline.Bad++
		}
		f := float64(i+1) / float64(n)
		cur.Canary.Total = math.Max(cur.Canary.Bad, prev.Canary.Total+f*(l.Canary.Total-prev.Canary.Total))
		cur.Baseline.Total = math.Max(cur.Baseline.Bad, prev.Baseline.Total+f*(l.Baseline.Total-prev.Baseline.Total))
		out = append(out, cur)
	}
	out[n-1] = l
	return out
}

// newRand is a case's own stream of randomness for splitting its looks.
func newRand(id string) *rand.Rand { return rand.New(rand.NewPCG(Seed, hash(id))) }

// hash is FNV-1a of s.
func hash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// The sample judge's window and first look.
const (
	sampleLookback  = 30
	sampleFirstLook = 5
)

func sampleJudge(c Case) Outcome {
	cfg := judge.Config{Direction: judge.DirectionIncrease}.WithDefaults()
	var canary, baseline []float64
	prev := judge.CountLook{}
	for i, l := range c.Looks {
		canary = append(canary, ratio(l.Canary.Bad-prev.Canary.Bad, l.Canary.Total-prev.Canary.Total))
		baseline = append(baseline, ratio(l.Baseline.Bad-prev.Baseline.Bad, l.Baseline.Total-prev.Baseline.Total))
		prev = l
		if i+1 < sampleFirstLook {
			continue
		}
		from := max(0, len(canary)-sampleLookback)
		if judge.Classify(canary[from:], baseline[from:], cfg).Classification == judge.High {
			return Outcome{Look: i + 1, End: judge.DecisionFailed}
		}
	}
	return Outcome{End: EndSuccessful}
}

func ratio(bad, total float64) float64 {
	if total == 0 {
		return math.NaN()
	}
	return bad / total
}

func threshold(c Case) Outcome {
	failures := 0
	prev := judge.CountLook{}
	for i, l := range c.Looks {
		bad := l.Canary.Bad - prev.Canary.Bad + l.Baseline.Bad - prev.Baseline.Bad
		total := l.Canary.Total - prev.Canary.Total + l.Baseline.Total - prev.Baseline.Total
		prev = l
		if total == 0 {
			continue // no data: an Error measurement, not a failure
		}
		if 1-bad/total < 0.99 {
			failures++
		}
		if failures > 1 {
			return Outcome{Look: i + 1, End: judge.DecisionFailed}
		}
	}
	return Outcome{End: EndSuccessful}
}

func dirichlet(c Case) Outcome {
	w := c.Labels.Share
	theta := []float64{w, 1 - w}
	logThreshold := math.Log(1 / Alpha)
	for i, l := range c.Looks {
		counts := []float64{l.Canary.Bad, l.Baseline.Bad}
		if l.Canary.Bad+l.Baseline.Bad == 0 {
			continue
		}
		above := l.Canary.Bad/(l.Canary.Bad+l.Baseline.Bad) > w
		if above && judge.DirichletMultinomialLogBF(counts, theta, 100) >= logThreshold {
			return Outcome{Look: i + 1, End: judge.DecisionFailed}
		}
	}
	return Outcome{End: EndSuccessful}
}

// Result is one method's outcome on one case.
type Result struct {
	Case    *Case
	Outcome Outcome
}

// Events is the bad events of both sides by the look of the verdict.
func (r Result) Events() float64 {
	if r.Outcome.Events > 0 {
		return r.Outcome.Events
	}
	l := r.Case.Looks[r.Outcome.Look-1]
	return l.Canary.Bad + l.Baseline.Bad
}

// Minutes is the time to the verdict.
func (r Result) Minutes() float64 {
	return float64(r.Outcome.Look*r.Case.IntervalSeconds) / 60
}

// CanaryRequests is the canary's traffic by the verdict.
func (r Result) CanaryRequests() float64 {
	return r.Case.Looks[r.Outcome.Look-1].Canary.Total
}

// Row is one line of a method's table: a group of cases and how the method
// fared on them.
type Row struct {
	Group      string
	Cases      int
	Regression bool
	// Failed is the share of the cases Failed at any look: false alarms
	// for A/A groups, detections for regressions.
	Failed float64
	// Of the Failed cases: median and p90 of the events, minutes and
	// canary requests to the verdict.
	Events, Minutes, Canary [2]float64
	// Ends counts how the cases ended.
	Ends map[string]int
}

// Run scores every method on cases and returns each method's rows: all A/A
// cases, each family's, and each regression cell's.
func Run(cases []Case, methods []Method) map[string][]Row {
	out := map[string][]Row{}
	for _, m := range methods {
		results := make([]Result, len(cases))
		for i := range cases {
			results[i] = Result{&cases[i], m.Judge(cases[i])}
		}
		out[m.Name] = rows(results)
	}
	return out
}

func rows(results []Result) []Row {
	groups := map[string][]Result{}
	var order []string
	add := func(g string, r Result) {
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r)
	}
	for _, r := range results {
		if !r.Case.Labels.Regression {
			add("A/A, all", r)
		}
	}
	for _, r := range results {
		add(groupName(r.Case), r)
	}
	var out []Row
	for _, g := range order {
		out = append(out, row(g, groups[g]))
	}
	return out
}

func groupName(c *Case) string {
	l := c.Labels
	var b strings.Builder
	b.WriteString(c.Family)
	if l.Metric == "latency" {
		fmt.Fprintf(&b, ", latency ×%g (rate ratio %.2f)", l.LatencyShift, l.Ratio)
	} else if l.Regression {
		fmt.Fprintf(&b, ", ratio %g", l.Ratio)
	}
	fmt.Fprintf(&b, ", share %g%%", l.Share*100)
	if l.ShiftLook > 0 {
		fmt.Fprintf(&b, "→%g%%", l.ShareAfter*100)
	}
	if l.Dispersion > 0 {
		fmt.Fprintf(&b, ", dispersion %g", l.Dispersion)
	}
	return b.String()
}

func row(group string, rs []Result) Row {
	r := Row{Group: group, Cases: len(rs), Regression: rs[0].Case.Labels.Regression, Ends: map[string]int{}}
	var ev, mins, can []float64
	for _, x := range rs {
		r.Ends[x.Outcome.End]++
		if x.Outcome.Look > 0 {
			ev = append(ev, x.Events())
			mins = append(mins, x.Minutes())
			can = append(can, x.CanaryRequests())
		}
	}
	r.Failed = float64(len(ev)) / float64(len(rs))
	r.Events, r.Minutes, r.Canary = quantiles(ev), quantiles(mins), quantiles(can)
	return r
}

// quantiles are the median and the 90th percentile (nearest rank), NaN of
// nothing.
func quantiles(v []float64) [2]float64 {
	if len(v) == 0 {
		return [2]float64{math.NaN(), math.NaN()}
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[int(math.Ceil(q*float64(len(v))))-1] }
	return [2]float64{at(0.5), at(0.9)}
}

// WriteTables writes one markdown table per method.
func WriteTables(w io.Writer, methods []Method, res map[string][]Row) {
	for _, m := range methods {
		fmt.Fprintf(w, "### %s\n\n%s\n\n", m.Name, m.How)
		fmt.Fprintln(w, "| cases | n | Failed at any look | events to Failed, median / p90 | minutes, median / p90 | canary requests, median | ends: Failed / Successful early / Successful / Inconclusive |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
		for _, r := range res[m.Name] {
			what := "false alarms"
			if r.Regression {
				what = "detected"
			}
			fmt.Fprintf(w, "| %s | %d | %s %.1f%% | %s / %s | %s / %s | %s | %d / %d / %d / %d |\n",
				r.Group, r.Cases, what, 100*r.Failed,
				num(r.Events[0]), num(r.Events[1]), num(r.Minutes[0]), num(r.Minutes[1]), num(r.Canary[0]),
				r.Ends[judge.DecisionFailed], r.Ends[EndEarly], r.Ends[EndSuccessful], r.Ends[EndInconclusive])
		}
		fmt.Fprintln(w)
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}
