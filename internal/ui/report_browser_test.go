package ui_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/ui"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// minuteMetric is a metric measured every minute from t0, its value in
// minute i values[i] (no data for NaN: an empty vector), its condition
// compiled as a spec's is.
func minuteMetric(t *testing.T, name, success string, count int32, values ...float64) analysis.Metric {
	t.Helper()
	conds, problems := condition.Compile(success, "")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return analysis.Metric{Name: name, Interval: time.Minute, Count: &count, ConsecutiveErrorLimit: 4,
		SuccessCondition: success, Judge: conds,
		Source: analysis.SourceFunc(func(_ context.Context, at time.Time) analysis.Observation {
			v := values[min(max(int(at.Sub(t0)/time.Minute), 0), len(values)-1)]
			if math.IsNaN(v) {
				return analysis.Observation{Value: []float64{}, Display: "[]"}
			}
			return analysis.Observation{Value: []float64{v}, Display: fmt.Sprintf("[%g]", v)}
		})}
}

// reportSite serves the page and, as the API answers it, the report of an
// analysis of two metrics (GET /v1/analyses/two) and a template whose
// backtest over the last 6 h could not be measured for its first hour and
// fired three times later (POST /v1/templates/demo/backtests).
func reportSite(t *testing.T) *httptest.Server {
	t.Helper()
	success := minuteMetric(t, "success-rate", "result[0] >= 0.99", 4, 0.995, 0.993, 0.95, 0.97)
	latency := minuteMetric(t, "p99-latency", "result[0] < 0.5", 4, 0.21, 0.25, 0.24, 0.3)
	plan := &analysis.Plan{Metrics: []analysis.Metric{success, latency}}
	two := analysis.Backtest(context.Background(), plan, t0, t0.Add(time.Hour), analysis.Options{ID: "two", Template: "checkout"})

	values := make([]float64, 400)
	for i := range values {
		switch {
		case i < 60:
			values[i] = math.NaN()
		case i >= 200 && i < 225:
			values[i] = 0.95
		default:
			values[i] = 0.997
		}
	}
	series := &analysis.Plan{Metrics: []analysis.Metric{minuteMetric(t, "success-rate", "result[0] >= 0.99", 3, values...)}}
	results := analysis.BacktestSeries(context.Background(), series, t0, t0.Add(6*time.Hour), 10*time.Minute, analysis.Options{ID: "b"})

	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"title":"Not Found","status":404}`)
	})
	writeReport := func(w http.ResponseWriter, r *report.Report) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", report.ContentSecurityPolicy)
		if err := r.HTML(w); err != nil {
			t.Error(err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler(notFound))
	mux.HandleFunc("GET /v1/analyses/two", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text/html") {
			notFound(w, r)
			return
		}
		writeReport(w, report.New(two, plan.Metrics))
	})
	mux.HandleFunc("GET /v1/templates/demo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"demo","kind":"AnalysisTemplate","file":"demo.yaml","status":"ok","args":[],"spec":{}}`)
	})
	mux.HandleFunc("POST /v1/templates/demo/backtests", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeReport(w, report.NewSeries(results, series.Metrics))
	})
	mux.Handle("/", notFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// labelSizes checks that every label of the report's charts under root is
// at least 10 px as shown (its font size scaled as its chart is) and
// inside its chart, none cut off at an edge.
func labelSizes(t *testing.T, b *browsertest.Browser, root string, width int) {
	t.Helper()
	var labels []struct {
		Text        string  `json:"text"`
		Px          float64 `json:"px"`
		Left, Right float64
		SvgL, SvgR  float64
	}
	b.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).filter(t => t.getClientRects().length).map(t => {
		const svg = t.ownerSVGElement, s = svg.getBoundingClientRect(), r = t.getBoundingClientRect();
		return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * s.width / svg.viewBox.baseVal.width,
			Left: r.left, Right: r.right, SvgL: s.left, SvgR: s.right};
	})`, root+" figure svg text"), &labels)
	if len(labels) < 5 {
		t.Fatalf("%d labels in the charts of %s", len(labels), root)
	}
	for _, l := range labels {
		if l.Px < 10 {
			t.Errorf("label %q is %.1f px high at %d px, under 10", l.Text, l.Px, width)
		}
		if l.Left < l.SvgL-0.5 || l.Right > l.SvgR+0.5 {
			t.Errorf("label %q spans %.0f to %.0f px, its chart %.0f to %.0f: cut off at %d px", l.Text, l.Left, l.Right, l.SvgL, l.SvgR, width)
		}
	}
}

func waitFor(t *testing.T, b *browsertest.Browser, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		b.Eval(expr, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not shown; the page reads:\n%s", what, b.Text("body"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReportCharts opens an analysis of two metrics and a template's
// backtest on the page, at 1280 and 390 px: the analysis opens with a
// tile per metric, each opening its metric's section; the success rate's
// chart draws its threshold labelled "success ≥ 0.99" and explains the
// decisive marker; every chart label is at least 10 px and inside its
// chart; the backtest leads with the first analysis that would have
// failed and counts those that could not be measured apart; a strip cell
// opens its analysis without leaving the page's route; no console error.
func TestReportCharts(t *testing.T) {
	srv := reportSite(t)
	for _, width := range []int{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b := browsertest.Start(t, browsertest.Options{Width: width, Height: 1400, Timeout: time.Minute, Exact: true})
			b.Navigate(srv.URL + "/ui/#/analyses/two")
			waitFor(t, b, "the report", `document.querySelectorAll('#report figure.chart svg').length === 2`)
			if got := b.Count("#report .tiles a.tile"); got != 2 {
				t.Errorf("%d tiles, want 2", got)
			}
			if got := b.Text(`#report .tiles a[data-metric="success-rate"]`); !strings.Contains(got, "Failed") || !strings.Contains(got, "0.950") || !strings.Contains(got, "success ≥ 0.99") {
				t.Errorf("the success rate's tile reads %q", got)
			}
			for sel, want := range map[string]string{
				`#report section[data-metric="success-rate"] .cond-threshold text`: "success ≥ 0.99",
				`#report section[data-metric="p99-latency"] .cond-threshold text`:  "success < 0.5",
			} {
				var got string
				b.Eval(fmt.Sprintf(`(e => e ? e.textContent : "")(document.querySelector(%q))`, sel), &got)
				if got != want {
					t.Errorf("%s reads %q, want %q", sel, got, want)
				}
			}
			if got := b.Text(`#report section[data-metric="success-rate"] .decisive-key`); !strings.Contains(got, "decisive: #3") {
				t.Errorf("the legend explains the decisive marker as %q", got)
			}
			labelSizes(t, b, "#report", width)
			var clicked bool
			// A tile opens its metric's section, on the same route.
			b.Eval(`document.querySelector('#report a.tile[data-metric="p99-latency"]').click(), true`, &clicked)
			var hash string
			b.Eval(`location.hash`, &hash)
			if hash != "#/analyses/two" {
				t.Errorf("a tile took the page to %q", hash)
			}
			b.Screenshot(fmt.Sprintf("ui-report-%d.png", width))
			if width == 1280 {
				png, err := chromedp.Run(b.Context(), chromedp.Screenshot(chromedp.CSS(`#report section[data-metric="success-rate"] figure.chart`)))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(browsertest.ArtifactDir(t), "report-chart.png")
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", path)
			}

			// The template's backtest over the last 6 h.
			b.Navigate(srv.URL + "/ui/#/templates/demo")
			waitFor(t, b, "the template", `!!document.querySelector('button[data-window="-6h"]')`)
			b.Eval(`document.querySelector('button[data-window="-6h"]').click(), true`, &clicked)
			waitFor(t, b, "the backtest's strip", `document.querySelectorAll('#backtest rect.cell').length > 0`)
			reason := b.Text("#backtest #reason")
			if !strings.Contains(reason, "3 would have failed, first the one started") || !strings.Contains(reason, "could not be measured (Error)") ||
				!strings.Contains(reason, ": Failed: metric") {
				t.Errorf("the backtest's reason: %q", reason)
			}
			if b.Count("#backtest rect.cell.c-Error") == 0 || b.Count("#backtest rect.cell.c-Failed.lead") != 1 {
				t.Error("the strip does not show the Error analyses apart, or not the Failed one reported")
			}
			b.Eval(`document.querySelector('#backtest rect.cell.c-Error').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true})), true`, &clicked)
			waitFor(t, b, "the analysis the cell opens", `!!document.querySelector('#backtest .run.shown')`)
			if got := b.Text("#backtest .run.shown .run-reason"); !strings.HasPrefix(got, "Error: metric \"success-rate\"") {
				t.Errorf("the cell opened %q", got)
			}
			b.Eval(`location.hash`, &hash)
			if hash != "#/templates/demo" {
				t.Errorf("a strip cell took the page to %q", hash)
			}
			b.Screenshot(fmt.Sprintf("ui-backtest-%d.png", width))
			if errs := b.Errors(); len(errs) > 0 {
				t.Errorf("console errors: %q", errs)
			}
			if out := browsertest.NotLocal(b.Requests()); len(out) > 0 {
				t.Errorf("requests leaving the machine: %q", out)
			}
		})
	}
}
