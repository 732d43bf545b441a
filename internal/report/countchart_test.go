package report_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/series"
)

// counterAt is a cumulative counter whose value at t is f(t), answering
// range queries as Prometheus does, one point a step.
type counterAt func(t time.Time) float64

func (c counterAt) Measure(context.Context, time.Time) analysis.Observation {
	return analysis.Observation{Err: errors.New("not an instant query")}
}

func (c counterAt) QuerySeries(_ context.Context, q series.Query) (series.Set, error) {
	var s series.Series
	for t := q.Start; !t.After(q.End); t = t.Add(q.Step) {
		s.Points = append(s.Points, series.Point{T: t, V: c(t)})
	}
	return series.Set{Series: []series.Series{s}}, nil
}

// perMinute counts about n events a minute from the analysis' start,
// whole events, some minutes more and some fewer.
func perMinute(n float64) counterAt {
	return func(t time.Time) float64 {
		m := t.Sub(start).Minutes()
		return math.Floor(n*m + 0.4*n*math.Sin(1.3*m))
	}
}

// countsLooks is how many looks the counts analysis takes, one a minute.
const countsLooks = 12

// countsAnalysis is a Failed analysis of a counts metric, measured by the
// judge provider's own CountSource: the baseline serves about 2,000
// requests a minute with 0.5% errors, the canary 200 with 1.5%, three
// times the rate; each measurement's phase as the default conditions give it, and
// the metric Failed at its fourth Failed (failureLimit 3), so that the
// looks go on past the decision.
func countsAnalysis(t *testing.T) api.Analysis {
	t.Helper()
	src := judge.NewCountSource(judge.CountOptions{
		CanaryBad: perMinute(3), CanaryTotal: perMinute(200),
		BaselineBad: perMinute(10), BaselineTotal: perMinute(2000),
	})
	res := api.MetricResult{Name: "errors", Phase: api.PhaseRunning}
	for k := 1; k <= countsLooks; k++ {
		at := start.Add(time.Duration(k) * time.Minute)
		ctx := analysis.WithSchedule(context.Background(), analysis.Schedule{Start: start, Interval: time.Minute, Last: k == countsLooks})
		obs := src.Measure(ctx, at)
		if obs.Err != nil {
			t.Fatal(obs.Err)
		}
		phase := api.PhaseSuccessful
		switch obs.Metadata[judge.MetadataDecision] {
		case "Failed":
			phase = api.PhaseFailed
			res.Failed++
		case "Inconclusive":
			phase = api.PhaseInconclusive
			res.Inconclusive++
		default:
			res.Successful++
		}
		res.Count++
		began, done := at, at.Add(120*time.Millisecond)
		res.Measurements = append(res.Measurements, api.Measurement{Phase: phase, StartedAt: &began, FinishedAt: &done, Value: obs.Display, Metadata: obs.Metadata})
		if res.Failed > 3 {
			res.Phase = api.PhaseFailed
			res.Message = "failed (4) > failureLimit (3)"
			break
		}
	}
	end := *res.Measurements[len(res.Measurements)-1].FinishedAt
	a := api.Analysis{ID: "counts", Phase: res.Phase, Message: `Metric "errors" assessed Failed due to failed (4) > failureLimit (3)`,
		StartedAt: &start, CompletedAt: &end, MetricResults: []api.MetricResult{res}}
	return a
}

// TestCountsAnalysisFixture keeps testdata/counts-analysis.json, the
// analysis the page's browser test (internal/ui) shows, the provider's
// own measurements.
func TestCountsAnalysisFixture(t *testing.T) {
	a := countsAnalysis(t)
	if a.Phase != api.PhaseFailed {
		t.Fatalf("the counts analysis is %s, want Failed", a.Phase)
	}
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "counts-analysis.json", string(data)+"\n")
}

// TestCountsSVG draws a counts metric over its looks: the e-value on a
// log scale with 1/alpha drawn and labelled and the decisive look marked,
// and the rate ratio inside its confidence sequence, which narrows,
// against the tolerance.
func TestCountsSVG(t *testing.T) {
	a := countsAnalysis(t)
	r := report.NewFromAnalysis(a)
	svg, err := r.CountsSVG("errors")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "counts.svg", string(svg))
	s := html.UnescapeString(string(svg))
	ms := a.MetricResults[0].Measurements
	decided := 0
	for i, m := range ms {
		if m.Metadata[judge.MetadataDecision] == "Failed" {
			decided = i + 1
			break
		}
	}
	if decided < 2 || decided == len(ms) {
		t.Fatalf("the test decided at look %d of %d: the fixture should decide between its first and last", decided, len(ms))
	}
	floatOf := func(what, re string) float64 {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("no %s (%s) in\n%s", what, re, s)
		}
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	// The e-value chart: 1/alpha as a line and its label; a point a look,
	// under the line before the decision and at or above it there.
	thY := floatOf("the threshold line", `<line class="threshold" x1="46" x2="348" y1="([\d.]+)"`)
	if !strings.Contains(s, `>fails at 20 = 1/α</text>`) {
		t.Error("the threshold's label is not drawn")
	}
	points := regexp.MustCompile(`<figure class="count-chart count-e">[\s\S]*?</figure>`).FindString(s)
	ys := regexp.MustCompile(`class="count-pt pt-\w+" cx="[\d.]+" cy="([\d.]+)" r="3" data-look="(\d+)"`).FindAllStringSubmatch(points, -1)
	if len(ys) != len(ms) {
		t.Fatalf("%d e-value points for %d looks", len(ys), len(ms))
	}
	for _, p := range ys {
		y, _ := strconv.ParseFloat(p[1], 64)
		look, _ := strconv.Atoi(p[2])
		if look < decided && y <= thY || look == decided && y > thY {
			t.Errorf("look %d's e-value is drawn at y %g, the threshold at %g (the test decided at look %d)", look, y, thY, decided)
		}
	}
	// The decisive look, marked in both charts and named.
	if n := strings.Count(s, `<g class="decisive-look">`); n != 2 {
		t.Errorf("%d decisive marks, want one a chart", n)
	}
	if want := "Failed at look " + strconv.Itoa(decided) + "</text>"; strings.Count(s, want) != 2 {
		t.Errorf("the decisive look's label %q is not in both charts", want)
	}
	if !strings.Contains(s, `data-decisive="`+strconv.Itoa(decided)+`"`) {
		t.Error("the charts do not name the decisive look")
	}

	// The ratio chart: the band, and the tolerance line labelled.
	band := regexp.MustCompile(`<path class="cs-band" d="(M[^"]+Z)"`).FindStringSubmatch(s)
	if band == nil {
		t.Fatal("no confidence band")
	}
	// The band is the uppers left to right, then the lowers back: its
	// height at the last look is less than at the second (the first has
	// no upper bound yet).
	xy := regexp.MustCompile(`[ML]([\d.]+),([\d.]+)`).FindAllStringSubmatch(band[1], -1)
	if len(xy) != 2*len(ms) {
		t.Fatalf("the band has %d points for %d looks", len(xy), len(ms))
	}
	height := func(k int) float64 {
		up, _ := strconv.ParseFloat(xy[k][2], 64)
		lo, _ := strconv.ParseFloat(xy[len(xy)-1-k][2], 64)
		return lo - up
	}
	if first, last := height(1), height(len(ms)-1); !(last < first*0.7) || last <= 0 {
		t.Errorf("the band is %g high at look 2 and %g at the last: it does not narrow", first, last)
	}
	floatOf("the tolerance line", `<line class="tolerance" x1="46" x2="348" y1="([\d.]+)"`)
	if !strings.Contains(s, `>tolerance 1</text>`) {
		t.Error("the tolerance's label is not drawn")
	}

	// Numbers for people: every label of an axis is short.
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(s, -1) {
		if l := m[1]; regexp.MustCompile(`\d\.\d{3,}|\[`).MatchString(l) {
			t.Errorf("label %q is not written for a person", l)
		}
	}
	for _, want := range []string{"the test fails when it reaches 20 = 1/α (α = 0.05)", "at 95% confidence over all looks"} {
		if !strings.Contains(s, want) {
			t.Errorf("the captions do not say %q", want)
		}
	}

	// A metric of another kind has no counts charts.
	other := report.NewFromAnalysis(api.Analysis{Phase: api.PhaseSuccessful, MetricResults: []api.MetricResult{{Name: "rate", Phase: api.PhaseSuccessful,
		Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, Value: "0.99"}}}}})
	if svg, err := other.CountsSVG("rate"); err != nil || svg != "" {
		t.Errorf("a Prometheus metric's counts charts: %q, %v", svg, err)
	}
}

// TestCountsSVGEdges draws what a counts metric can show at its edges: a
// single look (a band of its own width), a sequence that the counts do
// not bound yet (drawn to the chart's edge), and e-values far apart.
func TestCountsSVGEdges(t *testing.T) {
	md := func(look int, e, ratio string) map[string]string {
		return map[string]string{judge.MetadataLooks: strconv.Itoa(look), judge.MetadataEValue: e, judge.MetadataDecision: "continue",
			judge.MetadataThreshold: "20", judge.MetadataRatio: ratio, judge.MetadataTolerance: "1.5", judge.MetadataDirection: "decrease"}
	}
	tests := []struct {
		name string
		ms   []api.Measurement
		want []string
	}{
		{"one look, unbounded", []api.Measurement{{Phase: api.PhaseSuccessful, Metadata: md(1, "0.5", "NaN,0,+Inf")}},
			[]string{`class="cs-band"`, "tolerance 1.5", "fails at 20 = 1/α", "not yet bounded, are drawn at the edge", "below 1.5 times the baseline's"}},
		{"e-values far apart", []api.Measurement{
			{Phase: api.PhaseSuccessful, Metadata: md(1, "1e-30", "0.5,0.01,100")},
			{Phase: api.PhaseSuccessful, Metadata: md(2, "3e+40", "0.5,0.2,1")},
			{Phase: api.PhaseError},
			{Phase: api.PhaseSuccessful, Metadata: md(0, "1", "NaN,0,+Inf")},
		}, []string{"10⁴⁰", "10³⁰", `>1</text>`, `data-look="2"`}},
	}
	for _, tt := range tests {
		r := report.NewFromAnalysis(api.Analysis{Phase: api.PhaseRunning, MetricResults: []api.MetricResult{{Name: "m", Phase: api.PhaseRunning, Measurements: tt.ms}}})
		svg, err := r.CountsSVG("m")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		s := html.UnescapeString(string(svg))
		for _, want := range tt.want {
			if !strings.Contains(s, want) {
				t.Errorf("%s: the charts lack %q:\n%s", tt.name, want, s)
			}
		}
		if strings.Contains(s, "decisive-look") {
			t.Errorf("%s: a decisive look is marked before the test decided", tt.name)
		}
		if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("%s: a number that is not finite reached the drawing:\n%s", tt.name, s)
		}
	}
}
