package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestUIListRows opens the list at 1280 and 390 px: each row is a link
// (a real one, reached by Tab and followed by Enter) stretched over the
// row, so that a click anywhere on the row opens the analysis, or the
// series of a round; each row says its report's sentence beneath a dot
// per measurement coloured by phase; its start reads how long ago it was,
// the time itself in its title, said again as time passes without the
// list being read again; every label is at least 10 px; no console error.
func TestUIListRows(t *testing.T) {
	prom := promtest.Start(t)
	s := startUI(t, prom, nil)
	const path = "/v1/templates/success-rate/evaluate"
	var rounds []api.Analysis
	for range 2 {
		a, _ := roundAt(t, s.testServer, path, `{"args": {"namespace": "echo"}}`)
		rounds = append(rounds, a)
	}

	// Twelve measurements, the newest ten kept: ten dots and "+2".
	twelve := s.do(http.MethodPost, "/v1/analyses?wait=true", yamlType,
		strings.NewReplacer("interval: 300ms", "interval: 20ms", "count: 10", "count: 12").Replace(uiSpecRunning())).analysis(t)
	if twelve.Phase != api.PhaseSuccessful {
		t.Fatalf("twelve measurements: %s", twelve.Phase)
	}

	for _, width := range []int{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b := browsertest.Start(t, browsertest.Options{Width: width, Height: 900, Timeout: 2 * time.Minute, Exact: true})
			b.Navigate(s.url + "/ui/")
			waitJS(t, b, "three analyses and a series", `document.querySelectorAll('tr.row[data-id]').length === 3 && document.querySelectorAll('tr.row[data-series]').length === 1`)
			noOverflow(t, b, "the list")
			failedRow := `tr[data-id="` + s.failed.ID + `"]`

			// The sentence of the failed analysis' report, beneath its
			// dots: one a measurement, both Failed.
			reason := b.Text(failedRow + " .list-reason")
			for _, want := range []string{"Failed: metric", "where successCondition", "failed (2) > failureLimit (1)"} {
				if !strings.Contains(reason, want) {
					t.Errorf("the failed analysis' reason %q does not say %q", reason, want)
				}
			}
			ms := s.failed.MetricResults[0].Measurements
			if got := b.Count(failedRow + " .list-dot.p-Failed"); got != len(ms) || got == 0 {
				t.Errorf("%d Failed dots, want one per measurement: %d", got, len(ms))
			}
			var label string
			b.Eval(`document.querySelector('`+failedRow+` .metric-dots').getAttribute('aria-label')`, &label)
			if !strings.Contains(label, fmt.Sprintf("%d Failed", len(ms))) {
				t.Errorf("the dots are labelled %q, want them counted", label)
			}
			if got := b.Count(`tr[data-id="` + s.passed.ID + `"] .list-dot.p-Successful`); got != 1 {
				t.Errorf("the passed analysis has %d Successful dots, want 1", got)
			}
			if r := b.Text(`tr[data-id="` + s.passed.ID + `"] .list-reason`); !strings.HasPrefix(r, "Successful: its one metric passed (1 measurement)") {
				t.Errorf("the passed analysis' reason %q", r)
			}

			twelveRow := `tr[data-id="` + twelve.ID + `"]`
			if n, more := b.Count(twelveRow+" .list-dot.p-Successful"), b.Text(twelveRow+" .list-more"); n != 10 || more != "+2" {
				t.Errorf("twelve measurements, ten kept, show %d dots after %q; want 10 after +2", n, more)
			}

			// Started: how long ago, the time itself in the title.
			var rel struct{ Text, Title, Datetime string }
			b.Eval(`(t => ({text: t.textContent, title: t.title, datetime: t.getAttribute('datetime')}))(document.querySelector('`+failedRow+` time.rel'))`, &rel)
			if want := s.failed.StartedAt.UTC().Format("2006-01-02 15:04:05"); !strings.HasPrefix(rel.Title, want) {
				t.Errorf("the start's title %q, want the time %s", rel.Title, want)
			}
			if rel.Text != "just now" && !strings.HasSuffix(rel.Text, " s ago") {
				t.Errorf("the start reads %q, want how long ago (seconds)", rel.Text)
			}

			// Every label at least 10 px.
			var small []string
			b.Eval(`Array.from(document.querySelectorAll('table.list tr.row *')).filter(e =>
				!e.closest('.skip-text') && Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()) &&
				e.getClientRects().length && parseFloat(getComputedStyle(e).fontSize) < 10
			).map(e => e.className + ': ' + e.textContent + ' ' + getComputedStyle(e).fontSize)`, &small)
			if len(small) > 0 {
				t.Errorf("labels under 10 px: %q", small)
			}
			b.Screenshot(fmt.Sprintf("ui-list-%d.png", width))
			if width == 1280 {
				// The list alone: docs/images/page-list.png.
				png, err := chromedp.Run(b.Context(), chromedp.Screenshot(chromedp.CSS("main#view")))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(browsertest.ArtifactDir(t), "page-list.png")
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", path)
			}

			// The row is one link: a click on its reason, away from the
			// link's own text, follows it.
			var hit string
			b.Eval(`(r => { r.scrollIntoView({block: 'center'}); const c = r.getBoundingClientRect(); const e = document.elementFromPoint(c.left + c.width * 0.8, c.top + c.height / 2); return e && e.closest('a') ? e.closest('a').getAttribute('href') : (e ? e.tagName : ''); })(document.querySelector('`+failedRow+` td.reason-cell'))`, &hit)
			if hit != "#/analyses/"+s.failed.ID {
				t.Errorf("the point clicked in the row's reason is %q, want the row's link", hit)
			}
			var box []float64
			b.Eval(`(r => { r.scrollIntoView({block: 'center'}); const c = r.getBoundingClientRect(); return [c.left + c.width * 0.8, c.top + c.height / 2]; })(document.querySelector('`+failedRow+` td.reason-cell'))`, &box)
			if err := chromedp.Do(b.Context(), chromedp.MouseClickXY(box[0], box[1])); err != nil {
				t.Fatal(err)
			}
			waitJS(t, b, "the analysis opened by a click on its row", `location.hash === '#/analyses/`+s.failed.ID+`' && document.querySelector('#report #verdict')`)

			// A series' row opens the series; its rounds' ticks, within
			// the row, still open each round.
			goTo(b, "#/")
			seriesRow := `tr[data-series="` + rounds[0].Series + `"]`
			waitJS(t, b, "the list again", `document.querySelector('`+seriesRow+`')`)
			b.Eval(`(r => { r.scrollIntoView({block: 'center'}); const c = r.getBoundingClientRect(); return [c.left + c.width * 0.8, c.top + c.height / 2]; })(document.querySelector('`+seriesRow+` td[data-label="Arguments"]'))`, &box)
			if err := chromedp.Do(b.Context(), chromedp.MouseClickXY(box[0], box[1])); err != nil {
				t.Fatal(err)
			}
			waitJS(t, b, "the series opened by a click on its row", `location.hash === '#/series/`+rounds[0].Series+`' && document.querySelectorAll('#series tr.row[data-id]').length === 2`)
			goTo(b, "#/")
			waitJS(t, b, "the list again", `document.querySelector('`+seriesRow+` .calls a.tick')`)
			b.Eval(`(a => { a.scrollIntoView({block: 'center'}); const c = a.getBoundingClientRect(); return [c.left + c.width / 2, c.top + c.height / 2]; })(document.querySelector('`+seriesRow+` .calls a.tick'))`, &box)
			if err := chromedp.Do(b.Context(), chromedp.MouseClickXY(box[0], box[1])); err != nil {
				t.Fatal(err)
			}
			waitJS(t, b, "a round opened by its tick", `location.hash === '#/analyses/`+rounds[0].ID+`'`)

			// By keyboard: Tab reaches the row's link, Enter follows it.
			goTo(b, "#/")
			waitJS(t, b, "the list again", `document.querySelector('`+failedRow+`')`)
			focus(t, b, failedRow+" a.row-link")
			press(t, b, kb.Enter)
			waitJS(t, b, "the analysis opened by Enter", `location.hash === '#/analyses/`+s.failed.ID+`'`)

			if width == 1280 {
				// The start is said again as time passes, with the list
				// not read again (as while the tab is hidden): a start an
				// hour earlier reads "1 h ago" within the tick.
				goTo(b, "#/")
				waitJS(t, b, "the list again", `document.querySelector('`+failedRow+` time.rel')`)
				var ignored any
				b.Eval(`Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true}), 0`, &ignored)
				time.Sleep(500 * time.Millisecond) // a read under way ends
				before := len(b.Requests())
				hourAgo := time.Now().Add(-time.Hour - time.Minute).UTC().Format(time.RFC3339)
				b.Eval(`document.querySelector('`+failedRow+` time.rel').setAttribute('datetime', '`+hourAgo+`'), 0`, &ignored)
				deadline := time.Now().Add(15 * time.Second)
				for b.Text(failedRow+" time.rel") != "1 h ago" {
					if time.Now().After(deadline) {
						t.Fatalf("the start reads %q 15 s later, want 1 h ago", b.Text(failedRow+" time.rel"))
					}
					time.Sleep(200 * time.Millisecond)
				}
				if after := b.Requests()[before:]; len(after) > 0 {
					t.Errorf("requests while the times were said again: %q", after)
				}
			}
			clean(t, b, s.url)
		})
	}
}

// startedTitle is the title of the start of the list's row at selector:
// the time itself, which the row says as how long ago it was.
func startedTitle(b *browsertest.Browser, selector string) string {
	var title string
	b.Eval(fmt.Sprintf(`(t => t ? t.title : "")(document.querySelector(%q))`, selector+" time.rel"), &title)
	return title
}
