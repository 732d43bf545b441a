package canarybench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/canaryd/canaryd/internal/judge"
)

const published = "../../testdata/benchmark/cases.ndjson"

// TestPublishedSet holds testdata/benchmark/cases.ndjson to the generator:
// the published set is Generate(Seed, 1), byte for byte, so that anyone can
// make it again, and it has the cases docs/judge.md promises.
func TestPublishedSet(t *testing.T) {
	b, err := os.ReadFile(published)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteCases(&want, Generate(Seed, 1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("%s is not Generate(Seed, 1): run go run ./internal/canarybench/judgebench -scale 1 -write testdata/benchmark/cases.ndjson", published)
	}
	cases, err := ReadCases(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	families := map[string]int{}
	aa, cells := 0, map[[2]float64]int{}
	for _, c := range cases {
		if ids[c.ID] {
			t.Errorf("%s: a second case with that id", c.ID)
		}
		ids[c.ID] = true
		families[c.Family]++
		if !c.Labels.Regression {
			aa++
		}
		if c.Family == "ratio" {
			cells[[2]float64{c.Labels.Ratio, c.Labels.Share}]++
		}
		// Every case is input that the count judge takes.
		ct, err := judge.NewCountTest(judge.CountConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range c.Looks {
			if _, err := ct.Observe(l); err != nil {
				t.Fatalf("%s look %d: %v", c.ID, i+1, err)
			}
		}
	}
	if len(cases) < 300 || aa < 100 {
		t.Errorf("%d cases, %d A/A: want at least 300 and 100", len(cases), aa)
	}
	for _, f := range Families {
		if families[f] == 0 {
			t.Errorf("no case of family %s", f)
		}
	}
	for _, r := range Ratios {
		for _, s := range Shares {
			if cells[[2]float64{r, s}] == 0 {
				t.Errorf("no case of ratio %g at share %g", r, s)
			}
		}
	}
}

// looksSHA256 is the sha256 of the published set as it was before its
// cases had a history: the same cases with their history left out.
const looksSHA256 = "1e49a80668440a30365459701ac22fa71929b01e08ce05a894765cc9e9ee7065"

// TestLooksUnchanged holds that each case's history is drawn from a stream
// of its own: without their history, the published set's cases are those
// published before it, byte for byte, looks and labels alike.
func TestLooksUnchanged(t *testing.T) {
	cases := Generate(Seed, 1)
	for i := range cases {
		cases[i].History, cases[i].HistoryStepSeconds = nil, 0
	}
	var b bytes.Buffer
	if err := WriteCases(&b, cases); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	if got := hex.EncodeToString(sum[:]); got != looksSHA256 {
		t.Errorf("the cases without their history hash to %s, not %s: a case's looks or labels changed", got, looksSHA256)
	}
}

// TestHistory holds each case's history of the baseline to what
// docs/judge.md says of it: a day of five-minute intervals, cumulative;
// over the set, the service's whole traffic and bad events at the
// baseline's rate; and bad events per interval as dispersed as the case's
// own (Pearson's statistic per degree of freedom near 1 + dispersion,
// near 1 for independent events); for daily traffic, the day's cycle
// continued back from the analysis' (a day earlier, the history's first
// eight hours served what the analysis' eight hours of looks did).
func TestHistory(t *testing.T) {
	type sums struct {
		bad, want, total, wantTotal float64
		pearson                     float64 // Pearson's statistic per degree of freedom, summed over cases
		n                           int
	}
	by := map[float64]*sums{}
	for _, c := range Generate(Seed, 1) {
		if len(c.History) != HistorySteps || c.HistoryStepSeconds != HistoryStepSeconds {
			t.Fatalf("%s: %d points %d s apart, want %d of %d s", c.ID, len(c.History), c.HistoryStepSeconds, HistorySteps, HistoryStepSeconds)
		}
		if err := (judge.CountConfig{History: c.History}).WithDefaults().Validate(); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		d := c.Labels.Dispersion
		s := by[d]
		if s == nil {
			s = &sums{}
			by[d] = s
		}
		last := c.History[len(c.History)-1]
		rate := last.Bad / last.Total
		s.bad += last.Bad
		s.want += c.Labels.BaselineRate * last.Total
		s.total += last.Total
		s.wantTotal += c.Labels.RequestsPerSecond * HistorySteps * HistoryStepSeconds
		var x2 float64
		var prev judge.Counts
		for _, h := range c.History {
			e := rate * (h.Total - prev.Total)
			x2 += (h.Bad - prev.Bad - e) * (h.Bad - prev.Bad - e) / e
			prev = h
		}
		s.pearson += x2 / (HistorySteps - 1)
		s.n++
		if c.Labels.Traffic == "daily" {
			l := c.Looks[len(c.Looks)-1]
			served := l.Canary.Total + l.Baseline.Total
			if r := c.History[len(c.Looks)-1].Total / served; math.Abs(r-1) > 0.03 {
				t.Errorf("%s: the history's first %d intervals served %.3f times the analysis' looks, a day later", c.ID, len(c.Looks), r)
			}
		}
	}
	if len(by) != 3 {
		t.Fatalf("dispersions %v, want 0, 1 and 3", by)
	}
	for d, s := range by {
		pearson := s.pearson / float64(s.n)
		t.Logf("dispersion %g: %d cases, bad events %.4f of the baseline's rate, requests %.4f of the service's, Pearson/df %.3f",
			d, s.n, s.bad/s.want, s.total/s.wantTotal, pearson)
		if r := s.bad / s.want; math.Abs(r-1) > 0.05 {
			t.Errorf("dispersion %g: the history's bad events are %.3f times the baseline's rate", d, r)
		}
		if r := s.total / s.wantTotal; math.Abs(r-1) > 0.01 {
			t.Errorf("dispersion %g: the history's requests are %.3f times the service's traffic", d, r)
		}
		if lo, hi := 1+0.8*d-0.1, 1+1.2*d+0.1; pearson < lo || pearson > hi {
			t.Errorf("dispersion %g: Pearson's statistic per degree of freedom %.3f, want it in [%.2f, %.2f]", d, pearson, lo, hi)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := WriteCases(&a, Generate(7, 1)); err != nil {
		t.Fatal(err)
	}
	if err := WriteCases(&b, Generate(7, 1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the same seed made different cases")
	}
	var c bytes.Buffer
	if err := WriteCases(&c, Generate(8, 1)); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("another seed made the same cases")
	}
}

// TestGenerateLabels checks that the cases' counts follow their labels:
// summed over a family's cases, the canary's rate of bad events over the
// baseline's is near the labelled ratio, and its share of the traffic near
// the labelled share.
func TestGenerateLabels(t *testing.T) {
	type sums struct{ cb, ct, bb, bt float64 }
	by := map[string]*sums{}
	want := map[string][2]float64{}
	for _, c := range Generate(Seed, 4) {
		if c.Labels.ShiftLook > 0 || c.Labels.Metric != "errors" {
			continue
		}
		k := groupName(&c)
		s := by[k]
		if s == nil {
			s = &sums{}
			by[k] = s
		}
		l := c.Looks[len(c.Looks)-1]
		s.cb += l.Canary.Bad
		s.ct += l.Canary.Total
		s.bb += l.Baseline.Bad
		s.bt += l.Baseline.Total
		want[k] = [2]float64{c.Labels.Ratio, c.Labels.Share}
	}
	for k, s := range by {
		ratio := (s.cb / s.ct) / (s.bb / s.bt)
		share := s.ct / (s.ct + s.bt)
		w := want[k]
		if ratio < w[0]*0.8 || ratio > w[0]*1.25 {
			t.Errorf("%s: rate ratio %.3f, labelled %g", k, ratio, w[0])
		}
		if share < w[1]*0.9 || share > w[1]*1.1 {
			t.Errorf("%s: share %.4f, labelled %g", k, share, w[1])
		}
	}
}

// TestEvents checks that splitting an interval into a look per bad event
// keeps every look valid input and ends at the interval's look.
func TestEvents(t *testing.T) {
	c := Generate(Seed, 1)[0]
	for _, cs := range Generate(Seed, 1) {
		if cs.Family == "aa-bursty" {
			c = cs
			break
		}
	}
	ct, _ := judge.NewCountTest(judge.CountConfig{})
	var prev judge.CountLook
	r := newRand(c.ID)
	n := 0
	for i, l := range c.Looks {
		evs := Events(r, prev, l)
		if evs[len(evs)-1] != l {
			t.Fatalf("look %d: the events end at %+v, not %+v", i+1, evs[len(evs)-1], l)
		}
		for _, ev := range evs {
			if _, err := ct.Observe(ev); err != nil {
				t.Fatalf("look %d: %v", i+1, err)
			}
			n++
		}
		prev = l
	}
	last := c.Looks[len(c.Looks)-1]
	if events := int(last.Canary.Bad + last.Baseline.Bad); n < events {
		t.Errorf("%d looks for %d events", n, events)
	}
}

// TestRun scores the published set. The numbers are docs/judge.md's at
// scale 1; the test holds the claims that do not depend on the scale: the
// count judge keeps its false alarms under alpha read at every interval,
// the share of a declared share breaks on a changing share, and the
// threshold template raises more false alarms than either judge.
func TestRun(t *testing.T) {
	cases := Generate(Seed, 1)
	methods := Methods()
	res := Run(cases, methods)
	get := func(method, group string) Row {
		for _, r := range res[method] {
			if r.Group == group {
				return r
			}
		}
		t.Fatalf("%s: no row %q", method, group)
		return Row{}
	}
	if r := get("count judge", "A/A, all"); r.Failed > Alpha {
		t.Errorf("count judge: %.1f%% false alarms on %d A/A cases", 100*r.Failed, r.Cases)
	}
	if r := get("count judge", "ratio, ratio 5, share 50%"); r.Failed != 1 {
		t.Errorf("count judge: a fivefold rise at 50%% detected in %.0f%% of cases", 100*r.Failed)
	}
	if r := get("Dirichlet-multinomial at a declared share", "aa-shift, share 5%→25%"); r.Failed < 0.5 {
		t.Errorf("a declared share that the traffic leaves should fail most A/A cases, not %.0f%%", 100*r.Failed)
	}
	if th, cj := get("threshold template", "A/A, all"), get("count judge", "A/A, all"); th.Failed <= cj.Failed {
		t.Errorf("threshold template %.1f%% false alarms, count judge %.1f%%", 100*th.Failed, 100*cj.Failed)
	}
	var buf bytes.Buffer
	WriteTables(&buf, methods, res)
	for _, m := range methods {
		if !bytes.Contains(buf.Bytes(), []byte("### "+m.Name)) {
			t.Errorf("no table for %s", m.Name)
		}
	}
}

// TestFixedDispersion holds what docs/judge.md says the dispersion's
// estimate is for: on the published set's bursty A/A cases, read after
// every event, the count judge with its dispersion fixed at 1 (bad events
// taken as independent) raises more false alarms than with it estimated
// (from the case's history of the baseline and its looks, as Methods run
// it), and more than alpha.
func TestFixedDispersion(t *testing.T) {
	var bursty []Case
	for _, c := range Generate(Seed, 1) {
		if c.Family == "aa-bursty" {
			bursty = append(bursty, c)
		}
	}
	falseAlarms := func(dispersion float64) float64 {
		rows := Run(bursty, CountMethods(dispersion, true)[1:])
		for _, rs := range rows {
			return rs[0].Failed // A/A, all
		}
		return 0
	}
	fixed, estimated := falseAlarms(1), falseAlarms(0)
	if fixed <= Alpha || fixed <= estimated {
		t.Errorf("bursty A/A read after every event: %.1f%% false alarms with the dispersion fixed at 1, %.1f%% estimated", 100*fixed, 100*estimated)
	}
	t.Logf("bursty A/A read after every event: %.1f%% false alarms with the dispersion fixed at 1, %.1f%% estimated", 100*fixed, 100*estimated)
}

// TestCalmHistory holds what docs/judge.md says the history assumes: that
// the baseline's past is as bursty as both sides during the analysis. The
// bursty A/A cases (scale 2 unless CANARYBENCH_SCALE says), each given
// instead a calm day (the same traffic and rate, bad events independent),
// are read after every event: the count judge then takes the analysis'
// bursts for evidence and fails more than alpha of them, and more than
// with each case's own history.
func TestCalmHistory(t *testing.T) {
	seed := envUint(t, "CANARYBENCH_SEED", Seed)
	var own, calm []Case
	for _, c := range Generate(seed, int(envUint(t, "CANARYBENCH_SCALE", 2))) {
		if c.Family != "aa-bursty" {
			continue
		}
		own = append(own, c)
		c.History = cell{traffic: c.Labels.Traffic}.history(rand.New(rand.NewPCG(^seed, hash(c.ID))), DefaultHistory, c.Labels, 0)
		calm = append(calm, c)
	}
	falseAlarms := func(cases []Case) Row {
		return Run(cases, CountMethods(0, true)[1:])["count judge, read after every event"][0] // A/A, all
	}
	o, c := falseAlarms(own), falseAlarms(calm)
	t.Logf("bursty A/A read after every event: %.1f%% false alarms with a calm day's history, %.1f%% with their own (%d cases)", 100*c.Failed, 100*o.Failed, o.Cases)
	if c.Failed <= Alpha || c.Failed <= o.Failed {
		t.Errorf("bursty A/A read after every event: %.1f%% false alarms with a calm day's history, %.1f%% with their own", 100*c.Failed, 100*o.Failed)
	}
}
