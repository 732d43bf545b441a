package report_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/series"
)

// countingJudge counts the evaluations of the conditions it wraps, and
// the waits on the measurements' pool of evaluators (JudgeContext, the
// only way into condition's pool): a report must never take one.
type countingJudge struct {
	inner   analysis.Judge
	judged  *atomic.Int64
	pooled  *atomic.Int64
	started chan<- struct{} // told of each evaluation, when set
	release <-chan struct{} // waited for by each evaluation, when set
}

func (j countingJudge) Judge(v any) (api.Phase, error) {
	j.judged.Add(1)
	if j.started != nil {
		select {
		case j.started <- struct{}{}:
		default:
		}
	}
	if j.release != nil {
		<-j.release
	}
	return j.inner.Judge(v)
}

func (j countingJudge) JudgeContext(ctx context.Context, v any) (api.Phase, error) {
	j.pooled.Add(1)
	return j.inner.(analysis.ContextJudge).JudgeContext(ctx, v)
}

// counted are the metrics of c with their judges counted.
func counted(metrics []analysis.Metric) ([]analysis.Metric, *atomic.Int64, *atomic.Int64) {
	var judged, pooled atomic.Int64
	out := append([]analysis.Metric(nil), metrics...)
	for i := range out {
		out[i].Judge = countingJudge{inner: out[i].Judge, judged: &judged, pooled: &pooled}
	}
	return out, &judged, &pooled
}

// TestShadingNotOnMeasurementPool checks that the shaded bands are found
// by evaluating the conditions on the report's own pool, never by waiting
// on the measurements' (analysis.ContextJudge, condition's evaluators).
func TestShadingNotOnMeasurementPool(t *testing.T) {
	c := cases(t)["failed"]
	metrics, judged, pooled := counted(c.metrics)
	doc := writeHTML(t, report.New(c.a, metrics))
	if !strings.Contains(doc, `class="region `) {
		t.Fatal("no bands drawn")
	}
	if judged.Load() == 0 || pooled.Load() != 0 {
		t.Errorf("%d evaluations, %d of them on the measurements' pool of evaluators: want some, none", judged.Load()+pooled.Load(), pooled.Load())
	}
}

// TestShadingPool checks that at most MaxShading reports of one Renderer
// evaluate conditions at once: one more, finding no place, evaluates none
// and is drawn without bands, saying why.
func TestShadingPool(t *testing.T) {
	c := cases(t)["failed"]
	rd := report.NewRenderer(report.RendererOptions{})
	rd.SetShadeWait(10 * time.Millisecond)
	started, release := make(chan struct{}, report.MaxShading), make(chan struct{})
	var judged, pooled atomic.Int64
	held := append([]analysis.Metric(nil), c.metrics...)
	for i := range held {
		held[i].Judge = countingJudge{inner: held[i].Judge, judged: &judged, pooled: &pooled, started: started, release: release}
	}
	var wg sync.WaitGroup
	for k := range report.MaxShading {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := report.New(c.a, held)
			r.Renderer, r.Key = rd, fmt.Sprint("held-", k)
			_ = r.HTML(new(strings.Builder))
		}()
	}
	for range report.MaxShading {
		<-started
	}
	more, judgedMore, _ := counted(c.metrics)
	r := report.New(c.a, more)
	r.Renderer, r.Key = rd, "more"
	doc := writeHTML(t, r)
	close(release)
	wg.Wait()
	if strings.Contains(doc, `class="region `) || judgedMore.Load() != 0 {
		t.Errorf("beyond MaxShading reports: bands drawn, %d evaluations", judgedMore.Load())
	}
	if n := strings.Count(doc, "Not shaded: other reports were evaluating"); n != len(more) {
		t.Errorf("%d charts say why they are not shaded, want %d", n, len(more))
	}
	// With the place free again, it is shaded.
	r = report.New(c.a, more)
	r.Renderer, r.Key = rd, "more"
	if doc := writeHTML(t, r); !strings.Contains(doc, `class="region `) {
		t.Error("no bands once there is room")
	}
}

// TestShadingCached checks that a report drawn again with the same key
// evaluates no condition again: the bands of the same values are the
// same.
func TestShadingCached(t *testing.T) {
	c := cases(t)["failed"]
	metrics, judged, _ := counted(c.metrics)
	rd := report.NewRenderer(report.RendererOptions{})
	draw := func() string {
		r := report.New(c.a, metrics)
		r.Renderer, r.Key = rd, c.a.ID
		return writeHTML(t, r)
	}
	// The footer says when the report was made, to the second.
	made := regexp.MustCompile(`made [0-9TZ:-]+\.`)
	first := made.ReplaceAllString(draw(), "made T.")
	once := judged.Load()
	for range 3 {
		if again := made.ReplaceAllString(draw(), "made T."); again != first {
			t.Error("drawn again, the report differs")
		}
	}
	if once == 0 || judged.Load() != once {
		t.Errorf("%d evaluations the first time, %d after drawing it 3 times more: want as many", once, judged.Load())
	}
	// Another analysis is not drawn from the first one's bands.
	r := report.New(c.a, metrics)
	r.Renderer, r.Key = rd, "another"
	writeHTML(t, r)
	if judged.Load() != 2*once {
		t.Errorf("%d evaluations for another key, want %d", judged.Load()-once, once)
	}
}

// TestShadingTooLongCached checks that a finished analysis whose
// conditions take longer than RegionBudget costs that budget once: drawn
// again, its chart says so at once.
func TestShadingTooLongCached(t *testing.T) {
	c := cases(t)["failed"]
	metrics := append([]analysis.Metric(nil), c.metrics[:1]...)
	var judged, pooled atomic.Int64
	metrics[0].Judge = countingJudge{inner: newStuckJudge(t), judged: &judged, pooled: &pooled}
	rd := report.NewRenderer(report.RendererOptions{})
	for range 2 {
		r := report.New(c.a, metrics)
		r.Renderer, r.Key = rd, c.a.ID
		if doc := writeHTML(t, r); !strings.Contains(doc, "took too long to evaluate") {
			t.Error("the chart does not say its conditions took too long")
		}
	}
	if judged.Load() != 1 {
		t.Errorf("%d evaluations, want the one left behind", judged.Load())
	}
}

// outcomes counts what a Renderer is told of each range query.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) count(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[outcome]++
}

func (o *outcomes) get(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[outcome]
}

// TestSeriesCached checks that a finished analysis' range queries are
// sent once however often its report is drawn, and a running one's at
// most once every SeriesFreshness.
func TestSeriesCached(t *testing.T) {
	c := cases(t)["failed"]
	var asked []series.Query
	metrics := append([]analysis.Metric(nil), c.metrics...)
	metrics[0].Source = recordingSeries{Source: metrics[0].Source, asked: &asked}
	var o outcomes
	rd := report.NewRenderer(report.RendererOptions{Counted: o.count})
	now := time.Now()
	rd.SetNow(func() time.Time { return now })
	fetch := func(a api.Analysis) *report.Report {
		r := report.New(a, metrics)
		r.Renderer, r.Key = rd, a.ID
		r.FetchSeries(context.Background())
		return r
	}
	for range 5 {
		if d, ok := fetch(c.a).SeriesOf("error-rate"); !ok || d.Err != nil {
			t.Fatalf("series %+v %v", d, ok)
		}
	}
	if len(asked) != 1 || o.get(report.QueryAnswered) != 1 || o.get(report.QueryCached) != 4 {
		t.Errorf("a finished analysis drawn 5 times: %d range queries sent, outcomes %v; want 1, and 4 cached", len(asked), o.n)
	}

	running := c.a
	running.ID, running.Phase, running.CompletedAt = "running", api.PhaseRunning, nil
	asked = nil
	for range 3 {
		fetch(running)
	}
	if len(asked) != 1 {
		t.Errorf("a running analysis drawn 3 times within SeriesFreshness: %d range queries, want 1", len(asked))
	}
	now = now.Add(report.SeriesFreshness)
	fetch(running)
	if len(asked) != 2 {
		t.Errorf("drawn again SeriesFreshness later: %d range queries, want 2", len(asked))
	}
}

// TestSeriesRate checks that beyond QueryBurst range queries, at the
// Renderer's rate, a report's query is not sent: its chart says why, and
// the outcome is counted.
func TestSeriesRate(t *testing.T) {
	c := cases(t)["failed"]
	var asked []series.Query
	metrics := append([]analysis.Metric(nil), c.metrics...)
	metrics[0].Source = recordingSeries{Source: metrics[0].Source, asked: &asked}
	var o outcomes
	// One query a day: none comes back within a report's budget.
	rd := report.NewRenderer(report.RendererOptions{QueryRate: 1.0 / (24 * 60 * 60), Counted: o.count})
	var last *report.Report
	for range report.QueryBurst + 1 {
		// No key: nothing is cached, every report queries.
		last = report.New(c.a, metrics)
		last.Renderer = rd
		last.FetchSeries(context.Background())
	}
	if len(asked) != report.QueryBurst || o.get(report.QueryLimited) != 1 || o.get(report.QueryAnswered) != report.QueryBurst {
		t.Errorf("%d reports: %d range queries sent, outcomes %v; want %d sent and 1 rate_limited", report.QueryBurst+1, len(asked), o.n, report.QueryBurst)
	}
	if d, _ := last.SeriesOf("error-rate"); d.Err == nil || !strings.Contains(d.Err.Error(), "at their rate") {
		t.Errorf("the report beyond the rate: %v", d.Err)
	}
}
