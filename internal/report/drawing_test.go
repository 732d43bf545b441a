package report_test

import (
	"context"
	"html"
	"math"
	"os"
	"path/filepath"
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

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

// TestSeriesSVG draws a metric's series from a source that answers a
// fixed set: each series a path through its points (a gap where a value
// is NaN), its labels in the legend, the measurements' times as ticks, the
// series beyond those drawn named.
func TestSeriesSVG(t *testing.T) {
	c := cases(t)["failed"]
	metrics := append([]analysis.Metric(nil), c.metrics...)
	from, to := *c.a.StartedAt, *c.a.CompletedAt
	step := series.StepFor(from, to, 5)
	var set series.Set
	for k, labels := range []string{`{code="200"}`, `{code="500"}`} {
		s := series.Series{Labels: labels}
		for i := range 5 {
			v := float64(k) + float64(i)/10
			if k == 1 && i == 2 {
				v = math.NaN()
			}
			s.Points = append(s.Points, series.Point{T: from.Add(time.Duration(i) * step), V: v})
		}
		set.Series = append(set.Series, s)
	}
	set.More, set.Step = 3, step
	metrics[0].Source = staticSeries{Source: metrics[0].Source, set: set}
	r := report.New(c.a, metrics)
	r.FetchSeries(context.Background())
	svg, err := r.SeriesSVG("error-rate")
	if err != nil {
		t.Fatal(err)
	}
	// An analysis of two minutes is drawn over the MinSeriesWindow up to
	// its end.
	if d, _ := r.SeriesOf("error-rate"); !d.To.Equal(to) || d.To.Sub(d.From) != report.MinSeriesWindow {
		t.Errorf("the series of an analysis from %s to %s are drawn from %s to %s", from, to, d.From, d.To)
	}
	golden(t, "series.svg", string(svg))
	paths := regexp.MustCompile(`<path class="sl (s\d)" d="([^"]*)" data-side="" data-points="(\d+)"`).FindAllStringSubmatch(string(svg), -1)
	if len(paths) != 2 || paths[0][3] != "5" || paths[1][3] != "4" || strings.Count(paths[1][2], "M") != 2 || paths[0][1] == paths[1][1] {
		t.Errorf("paths %q", paths)
	}
	for _, want := range []string{`{code=&#34;500&#34;}`, "3 more series not drawn", `class="mk mk-Failed"`} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if n := strings.Count(string(svg), `<line class="mk `); n != len(c.a.MetricResults[0].Measurements) {
		t.Errorf("%d ticks for %d measurements", n, len(c.a.MetricResults[0].Measurements))
	}
	if svg, _ := r.SeriesSVG("latency-p99"); svg != "" {
		t.Error("a metric whose source runs no range query has a series chart")
	}
}

// TestJudgeSVG draws a judge measurement's comparison: both
// distributions, each a step function that rises to 1 at its greatest
// value, and the estimate of the shift inside its interval.
func TestJudgeSVG(t *testing.T) {
	at := start.Add(time.Minute)
	md := map[string]string{analysis.MetadataClassification: "High", judge.MetadataReason: "canary is higher",
		judge.MetadataCanarySample: "120,125,130,131,140", judge.MetadataCanarySampleN: "5",
		judge.MetadataBaselineSample: "90,95,100,104", judge.MetadataBaselineSampleN: "400",
		judge.MetadataEstimate: "29.5", judge.MetadataInterval: "21.25,36", judge.MetadataConfidenceLevel: "0.98", judge.MetadataPValue: "3.1e-21"}
	a := api.Analysis{ID: "j", Phase: api.PhaseFailed, MetricResults: []api.MetricResult{{
		Name: "latency", Phase: api.PhaseFailed, Count: 1, Failed: 1,
		Measurements: []api.Measurement{{Phase: api.PhaseFailed, StartedAt: &at, FinishedAt: &at, Value: "High (p=3.1e-21, shift=+29.5, ratio=1.30)", Metadata: md}},
	}}}
	r := report.New(a, []analysis.Metric{{Name: "latency", Compared: true}})
	svg, err := r.JudgeSVG("latency")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "judge.svg", string(svg))
	s := string(svg)
	num := func(re string) float64 {
		m := regexp.MustCompile(re).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("no %s in\n%s", re, s)
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	ciX, ciW, hl := num(`class="ci" x="([\d.]+)"`), num(`class="ci" x="[\d.]+" y="\d+" width="([\d.]+)"`), num(`class="hl" cx="([\d.]+)"`)
	if hl < ciX || hl > ciX+ciW {
		t.Errorf("the estimate at %g is outside its interval %g to %g", hl, ciX, ciX+ciW)
	}
	zero := num(`class="zero" x1="([\d.]+)"`)
	if zero >= ciX {
		t.Errorf("0 is drawn at %g, inside or right of the interval from %g", zero, ciX)
	}
	for _, side := range []string{"canary", "baseline"} {
		d := regexp.MustCompile(`class="ecdf side-` + side + `" d="([^"]*)"`).FindStringSubmatch(s)
		if d == nil || !strings.Contains(d[1], " V10.0") {
			t.Errorf("the %s's distribution does not reach 1: %q", side, d)
		}
	}
	for _, want := range []string{"classified High", "p = 3.1e-21", "+29.5 (Hodges-Lehmann), 98% interval +21.25 to +36", "baseline n = 400", "evenly spaced in order"} {
		if !strings.Contains(html.UnescapeString(s), want) {
			t.Errorf("the chart does not say %q", want)
		}
	}

	// A judge measurement that kept no sample has no chart; nor has a
	// metric of another kind.
	delete(md, judge.MetadataCanarySample)
	if svg, _ := report.New(a, []analysis.Metric{{Name: "latency"}}).JudgeSVG("latency"); svg != "" {
		t.Error("a chart without the canary's sample")
	}
}

// recordingSeries is a source that records the range queries asked of it.
type recordingSeries struct {
	analysis.Source
	asked *[]series.Query
}

func (s recordingSeries) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	*s.asked = append(*s.asked, q)
	if err := ctx.Err(); err != nil {
		return series.Set{}, err
	}
	return series.Set{Step: q.Step}, nil
}

// TestFetchSeriesBounds checks the range queries a report asks: a window
// of a thousand measurements a minute apart at a step that gives at most MaxChartPoints points,
// MaxSeriesDrawn series kept; and with its budget spent, none is sent and
// each metric says so.
func TestFetchSeriesBounds(t *testing.T) {
	const n = 1000
	values := make([]float64, n)
	for i := range values {
		values[i] = 0.01
	}
	m := metric(t, "long", "result[0] < 0.05", "", n, values...)
	m.Retention = n
	a := analysis.Backtest(context.Background(), &analysis.Plan{Metrics: []analysis.Metric{m}}, start, start.Add(n*time.Hour), analysis.Options{ID: "a"})
	var asked []series.Query
	m.Source = recordingSeries{Source: m.Source, asked: &asked}
	r := report.New(a, []analysis.Metric{m})
	r.FetchSeries(context.Background())
	if len(asked) != 1 {
		t.Fatalf("%d queries asked", len(asked))
	}
	q := asked[0]
	if err := q.Check(); err != nil || q.MaxPoints != report.MaxChartPoints || q.MaxSeries != report.MaxSeriesDrawn ||
		int(q.End.Sub(q.Start)/q.Step)+1 > report.MaxChartPoints || q.End.Sub(q.Start) < (n-1)*time.Minute {
		t.Errorf("query %+v: %v", q, err)
	}

	asked = nil
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = report.New(a, []analysis.Metric{m})
	r.FetchSeries(ctx)
	if len(asked) != 0 {
		t.Errorf("%d queries asked with the budget spent", len(asked))
	}
	if d, ok := r.SeriesOf("long"); !ok || d.Err == nil || !strings.Contains(d.Err.Error(), "was spent") {
		t.Errorf("with the budget spent: %+v", d)
	}
	if !strings.Contains(writeHTML(t, r), "could not be drawn: not run") {
		t.Error("the chart does not say its series were not fetched")
	}
}

// blockingSeries is a source whose range queries wait for release, having
// said they started.
type blockingSeries struct {
	analysis.Source
	started chan<- struct{}
	release <-chan struct{}
}

func (s blockingSeries) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	s.started <- struct{}{}
	<-s.release
	return series.Set{Step: q.Step}, nil
}

// TestFetchSeriesAtOnce checks that the range queries of at most
// MaxFetching reports of one Renderer are in flight at once: one more
// report, finding no room within its budget, sends none and says why.
func TestFetchSeriesAtOnce(t *testing.T) {
	c := cases(t)["failed"]
	started, release := make(chan struct{}), make(chan struct{})
	metrics := append([]analysis.Metric(nil), c.metrics...)
	metrics[0].Source = blockingSeries{Source: metrics[0].Source, started: started, release: release}
	done := make(chan struct{})
	rd := report.NewRenderer(report.RendererOptions{})
	for range report.MaxFetching {
		go func() {
			defer func() { done <- struct{}{} }()
			r := report.New(c.a, metrics)
			r.Renderer = rd
			r.FetchSeries(context.Background())
		}()
	}
	for range report.MaxFetching {
		<-started
	}
	var asked []series.Query
	more := append([]analysis.Metric(nil), c.metrics...)
	more[0].Source = recordingSeries{Source: more[0].Source, asked: &asked}
	r := report.New(c.a, more)
	r.Renderer = rd
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r.FetchSeries(ctx)
	close(release)
	for range report.MaxFetching {
		<-done
	}
	if d, _ := r.SeriesOf("error-rate"); len(asked) != 0 || d.Err == nil || !strings.Contains(d.Err.Error(), "other reports were running") {
		t.Errorf("%d queries sent beyond MaxFetching reports: %v", len(asked), d.Err)
	}
	// With room again, the queries go.
	r.FetchSeries(context.Background())
	if len(asked) != 1 {
		t.Errorf("%d queries once there is room", len(asked))
	}
}
