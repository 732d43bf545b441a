package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/ui"
)

// countsSite serves the page and, at /v1/analyses/counts, what the API
// answers a page that asks for the analysis as text/html: its report,
// here of the counts analysis the report's tests keep (measured by the
// judge provider's own CountSource). Every other path of the API is a
// 404 problem, as for an analysis that is not there.
func countsSite(t *testing.T) *httptest.Server {
	t.Helper()
	data, err := os.ReadFile("../report/testdata/counts-analysis.json")
	if err != nil {
		t.Fatal(err)
	}
	var a api.Analysis
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"title":"Not Found","status":404}`)
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler(notFound))
	mux.HandleFunc("GET /v1/analyses/counts", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text/html") {
			notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", report.ContentSecurityPolicy)
		if err := report.NewFromAnalysis(a).HTML(w); err != nil {
			t.Error(err)
		}
	})
	mux.Handle("/", notFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestCountsCharts opens a counts analysis on the page at 1280 and 390 px:
// both charts are drawn, the e-value's with 1/alpha labelled and the
// ratio's with its band and the tolerance labelled, the decisive look
// marked in each; every label of theirs is at least 10 px as shown; they
// fit the window; and the page logged no error.
func TestCountsCharts(t *testing.T) {
	srv := countsSite(t)
	for _, width := range []int{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b := browsertest.Start(t, browsertest.Options{Width: width, Height: 1400, Timeout: time.Minute, Exact: true})
			b.Navigate(srv.URL + "/ui/#/analyses/counts")
			var inner int
			b.Eval("window.innerWidth", &inner)
			if inner != width {
				t.Fatalf("the window is %d px wide, want %d", inner, width)
			}
			deadline := time.Now().Add(20 * time.Second)
			for b.Count("#report .count-charts figure svg") < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("the counts charts are not drawn; the page reads:\n%s", b.Text("body"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			for sel, want := range map[string]int{
				"#report .count-e line.threshold":     1,
				"#report .count-ratio path.cs-band":   1,
				"#report .count-ratio line.tolerance": 1,
				"#report .decisive-look":              2,
			} {
				if got := b.Count(sel); got != want {
					t.Errorf("%d of %s, want %d", got, sel, want)
				}
			}
			for sel, want := range map[string]string{
				"#report .threshold-label":         "fails at 20 = 1/α",
				"#report .tolerance-label":         "tolerance 1",
				"#report .count-e .decisive-label": "Failed at look 5",
			} {
				var got string
				b.Eval(fmt.Sprintf(`(e => e ? e.textContent : "")(document.querySelector(%q))`, sel), &got)
				if got != want {
					t.Errorf("%s reads %q, want %q", sel, got, want)
				}
			}

			// Each label's size as shown: its font size scaled as its
			// chart is, from the viewBox to the chart's width on screen.
			var labels []struct {
				Text string  `json:"text"`
				Px   float64 `json:"px"`
			}
			b.Eval(`Array.from(document.querySelectorAll('#report .count-charts svg text')).map(t => {
				const svg = t.ownerSVGElement;
				return {text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width};
			})`, &labels)
			if len(labels) < 10 {
				t.Fatalf("%d labels in the counts charts", len(labels))
			}
			for _, l := range labels {
				if l.Px < 10 {
					t.Errorf("label %q is %.1f px high at %d px, under 10", l.Text, l.Px, width)
				}
			}
			// The charts fit the window, side by side when it is wide.
			var boxes [][4]float64
			b.Eval(`Array.from(document.querySelectorAll('#report figure.count-chart')).map(f => { const r = f.getBoundingClientRect(); return [r.left, r.top, r.right, window.innerWidth]; })`, &boxes)
			if len(boxes) != 2 {
				t.Fatalf("%d counts figures", len(boxes))
			}
			for _, r := range boxes {
				if r[0] < 0 || r[2] > r[3] {
					t.Errorf("a chart spans %g to %g px in a window of %g", r[0], r[2], r[3])
				}
			}
			if side := boxes[0][1] == boxes[1][1]; side != (width > 800) {
				t.Errorf("at %d px the charts are side by side: %v", width, side)
			}
			b.Screenshot(fmt.Sprintf("ui-counts-%d.png", width))
			if width == 1280 {
				// The two charts alone: docs/images/report-counts.png.
				png, err := chromedp.Run(b.Context(), chromedp.Screenshot(chromedp.CSS("#report .count-charts")))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(browsertest.ArtifactDir(t), "counts-charts.png")
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", path)
			}
			if errs := b.Errors(); len(errs) > 0 {
				t.Errorf("console errors: %q", errs)
			}
			if out := browsertest.NotLocal(b.Requests()); len(out) > 0 {
				t.Errorf("requests leaving the machine: %q", out)
			}
		})
	}
}
