package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/ui"
)

// The page's tests drive it in Debian's chromium (internal/browsertest)
// against the real server, a real Prometheus and analyses that ran or
// run on it.

// lineOf is the 1-based line of text that holds needle (0 when none does).
func lineOf(text, needle string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			return i + 1
		}
	}
	return 0
}

// waitJS polls a JavaScript expression in the page until it is true.
func waitJS(t *testing.T, b *browsertest.Browser, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		b.Eval("!!("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			b.Eval("document.body.innerText.slice(0, 2000)", &text)
			t.Fatalf("timed out waiting for %s (%s); the page reads:\n%s", what, expr, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goTo opens a route of the page, without reloading it.
func goTo(b *browsertest.Browser, hash string) {
	var ignored any
	b.Eval("location.hash = "+strconv.Quote(hash)+", 0", &ignored)
}

// press sends keys to the page: kb.Tab, kb.Enter, text.
func press(t *testing.T, b *browsertest.Browser, keys string) {
	t.Helper()
	if err := chromedp.Do(b.Context(), chromedp.KeyEvent(keys)); err != nil {
		t.Fatalf("pressing %q: %v", keys, err)
	}
}

// focus moves the keyboard's focus to the element.
func focus(t *testing.T, b *browsertest.Browser, selector string) {
	t.Helper()
	var ok bool
	b.Eval(fmt.Sprintf(`(e => e ? (e.focus(), document.activeElement === e) : false)(document.querySelector(%q))`, selector), &ok)
	if !ok {
		t.Fatalf("cannot focus %s", selector)
	}
}

// typeInto focuses the element and types text into it.
func typeInto(t *testing.T, b *browsertest.Browser, selector, text string) {
	t.Helper()
	focus(t, b, selector)
	press(t, b, text)
}

// clean fails the test if the page logged an error or made a request
// that leaves the machine, or one that is not the service's. The browser
// logs every 4xx answer as an error: the answers the page expects (a 400
// of validate, a 401 before the token) are given as "STATUS PATH".
func clean(t *testing.T, b *browsertest.Browser, base string, expected ...string) {
	t.Helper()
	const failed = "log: Failed to load resource: the server responded with a status of "
	var errs []string
	for _, e := range b.Errors() {
		ok := false
		if rest, found := strings.CutPrefix(e, failed); found {
			status, _, _ := strings.Cut(rest, " ")
			_, url, _ := strings.Cut(rest, ") ")
			for _, x := range expected {
				st, path, _ := strings.Cut(x, " ")
				ok = ok || (st == status && strings.HasPrefix(url, base+path))
			}
		}
		if !ok {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
	if out := browsertest.NotLocal(b.Requests()); len(out) > 0 {
		t.Errorf("requests leaving the machine: %q", out)
	}
	for _, u := range browsertest.Outside(b.Requests()) {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("a request to another service: %s", u)
		}
	}
}

// noOverflow fails the test if the page is wider than the window.
func noOverflow(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	var widths []int
	b.Eval("[document.documentElement.scrollWidth, window.innerWidth]", &widths)
	if len(widths) != 2 || widths[0] > widths[1] {
		t.Errorf("%s: the page is %d px wide in a window of %d px", page, widths[0], widths[1])
	}
}

// uiServer is a server with the seed template served, and two analyses:
// one Failed (seed, echo-bad) and one Successful (once, without a
// template).
type uiServer struct {
	*testServer
	failed, passed api.Analysis
}

// uiSpecRunning measures echo every 300 ms, 10 times (all of them kept).
func uiSpecRunning() string {
	return fmt.Sprintf(`metrics:
- name: live-rate
  interval: 300ms
  count: 10
  successCondition: result[0] >= 0.99
  provider:
    prometheus:
      query: %q
`, promtest.SeedQuery("echo"))
}

func startUI(t *testing.T, prom *promtest.Server, tokens []string) *uiServer {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/templates/success-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "success-rate.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &uiServer{testServer: start(t, options{prometheus: []string{prom.URL}, templates: dir, tokens: tokens})}
	var auth []string
	if len(tokens) > 0 {
		auth = []string{"Authorization", "Bearer " + tokens[0]}
	}
	s.failed = s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, seed(t), auth...).analysis(t)
	s.passed = s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo"), auth...).analysis(t)
	if s.failed.Phase != api.PhaseFailed || s.passed.Phase != api.PhaseSuccessful {
		t.Fatalf("the analyses are %s and %s, want Failed and Successful", s.failed.Phase, s.passed.Phase)
	}
	return s
}

// TestUIPage opens each page of /ui/ in a browser at 1280 px: the list,
// filtered; one analysis, its chart checked against its measurements and
// its condition, and another measuring live; the templates and a
// backtest; a template tried, its problems at their lines, then
// backtested. Every step by keyboard where a person would use it.
func TestUIPage(t *testing.T) {
	prom := promtest.Start(t)
	s := startUI(t, prom, nil)
	b := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 900, Timeout: 2 * time.Minute})
	b.Navigate(s.url + "/ui")

	t.Run("list", func(t *testing.T) {
		waitJS(t, b, "the two analyses", `document.querySelectorAll('tr[data-id]').length === 2`)
		row := b.Text(`tr[data-id="` + s.failed.ID + `"]`)
		for _, want := range []string{"Failed", "success-rate-args", "namespace=echo-bad", "failed (2) > failureLimit (1)"} {
			if !strings.Contains(row, want) {
				t.Errorf("the failed analysis' row does not say %q: %q", want, row)
			}
		}
		if title, want := startedTitle(b, `tr[data-id="`+s.failed.ID+`"]`), s.failed.StartedAt.UTC().Format("2006-01-02 15:04:05"); !strings.HasPrefix(title, want) {
			t.Errorf("the failed analysis' start is titled %q, want %s", title, want)
		}
		var heads []string
		b.Eval(`Array.from(document.querySelectorAll('table.list th')).map(th => th.innerText)`, &heads)
		if strings.Join(heads, ",") != "Phase,Template,Arguments,Started,Duration,Reason" {
			t.Errorf("columns %q", heads)
		}
		b.Screenshot("ui-analyses.png")

		// Filter by template, typed, and Enter.
		typeInto(t, b, "#filter-template", "success-rate-args"+kb.Enter)
		waitJS(t, b, "the list of the template", `location.hash.includes('template=success-rate-args') && document.querySelectorAll('tr[data-id]').length === 1`)
		if b.Count(`tr[data-id="`+s.failed.ID+`"]`) != 1 {
			t.Error("the template's analysis is not the one listed")
		}
		// And by phase.
		goTo(b, "#/?phase=Successful")
		waitJS(t, b, "the Successful analyses", `location.hash.includes('phase=Successful') && document.querySelectorAll('tr[data-id]').length === 1 && document.querySelector('tr[data-id="`+s.passed.ID+`"]')`)
		goTo(b, "#/?phase=Inconclusive")
		waitJS(t, b, "no Inconclusive analysis", `document.body.innerText.includes('No analysis here with these filters')`)

		// By keyboard: Tab to the failed analysis' link, Enter opens it.
		goTo(b, "#/")
		waitJS(t, b, "the list again", `document.querySelectorAll('tr[data-id]').length === 2`)
		var ignored any
		b.Eval(`document.activeElement && document.activeElement.blur(), 0`, &ignored)
		found := false
		for range 40 {
			press(t, b, kb.Tab)
			var href string
			b.Eval(`document.activeElement ? (document.activeElement.getAttribute('href') || '') : ''`, &href)
			if href == "#/analyses/"+s.failed.ID {
				found = true
				break
			}
		}
		if !found {
			t.Fatal("Tab never reached the failed analysis' link")
		}
		press(t, b, kb.Enter)
		waitJS(t, b, "the analysis opened by Enter", `location.hash === '#/analyses/`+s.failed.ID+`' && document.querySelector('#report #verdict')`)
	})

	t.Run("analysis", func(t *testing.T) {
		goTo(b, "#/analyses/"+s.failed.ID)
		waitJS(t, b, "the failed analysis' report", `document.querySelector('#report #verdict') && document.querySelector('#report #verdict').innerText === 'Failed'`)
		ms := s.failed.MetricResults[0].Measurements
		if got := b.Count(`#report section[data-metric="non-5xx-rate"] circle.pt`); got != len(ms) || got == 0 {
			t.Errorf("%d points for %d measurements", got, len(ms))
		}
		var phases []string
		b.Eval(`Array.from(document.querySelectorAll('#report circle.pt')).map(c => c.dataset.phase)`, &phases)
		for i := range ms {
			if i < len(phases) && phases[i] != string(ms[i].Phase) {
				t.Errorf("point %d is %s, its measurement %s", i+1, phases[i], ms[i].Phase)
			}
		}
		// The shaded regions are the condition's outcomes: checked at
		// the middle and near both ends of each.
		var regions []struct {
			Outcome  string `json:"outcome"`
			From, To string
		}
		b.Eval(`Array.from(document.querySelectorAll('#report rect.region')).map(r => ({outcome: r.dataset.outcome, from: r.dataset.from, to: r.dataset.to}))`, &regions)
		if len(regions) < 2 {
			t.Fatalf("%d shaded regions, want the passing and the failing one", len(regions))
		}
		conds, problems := condition.Compile("result[0] >= 0.99", "")
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		for _, r := range regions {
			from, err1 := strconv.ParseFloat(r.From, 64)
			to, err2 := strconv.ParseFloat(r.To, 64)
			if err1 != nil || err2 != nil || to <= from {
				t.Fatalf("region %+v", r)
			}
			for _, f := range []float64{0.02, 0.5, 0.98} {
				v := from + f*(to-from)
				if got, _ := conds.Judge([]float64{v}); string(got) != r.Outcome {
					t.Errorf("the region from %g to %g is shaded %s; the condition gives %s at %g", from, to, r.Outcome, got, v)
				}
			}
		}
		// The reason names the decisive measurement: the second failure,
		// its value and time, and the condition it missed.
		decisive := ms[len(ms)-1]
		reason := b.Text("#report #reason")
		for _, want := range []string{`metric "non-5xx-rate" measured ` + decisive.Value + " at " + decisive.FinishedAt.UTC().Format(time.RFC3339), "result[0] >= 0.99", "failed (2) > failureLimit (1)"} {
			if !strings.Contains(reason, want) {
				t.Errorf("the reason does not say %q: %q", want, reason)
			}
		}
		if b.Count("#report rect.decisive") != 1 {
			t.Error("the decisive measurement is not marked")
		}
		if b.Text("#live") != "" {
			t.Error("a finished analysis is shown as live")
		}
		b.Screenshot("ui-analysis.png")
	})

	t.Run("live", func(t *testing.T) {
		running := s.do(http.MethodPost, "/v1/analyses", yamlType, uiSpecRunning()).analysis(t)
		goTo(b, "#/analyses/"+running.ID)
		waitJS(t, b, "the running analysis' report", `document.querySelector('#report #verdict') && document.querySelector('#live').innerText.includes('live')`)
		var ignored any
		b.Eval(`window.notReloaded = true, 0`, &ignored)
		first := b.Count("#report circle.pt")
		// The stream brings each new measurement: at 300 ms, several
		// within seconds, without a reload; and the end.
		waitJS(t, b, "new measurements drawn", fmt.Sprintf(`document.querySelectorAll('#report circle.pt').length >= %d`, first+3))
		waitJS(t, b, "the verdict", `document.querySelector('#report #verdict').innerText === 'Successful' && document.querySelector('#live').innerText === ''`)
		var kept bool
		b.Eval(`window.notReloaded === true`, &kept)
		if !kept {
			t.Error("the page was reloaded")
		}
		// One point per measurement, all ten.
		a := s.do(http.MethodGet, "/v1/analyses/"+running.ID, "", "").analysis(t)
		if drawn := b.Count("#report circle.pt"); drawn != len(a.MetricResults[0].Measurements) || drawn != 10 {
			t.Errorf("%d points drawn, the analysis has %d measurements", drawn, len(a.MetricResults[0].Measurements))
		}
		b.Screenshot("ui-analysis-live.png")
	})

	t.Run("templates", func(t *testing.T) {
		goTo(b, "#/templates")
		waitJS(t, b, "the templates", `document.querySelector('a[href="#/templates/success-rate"]')`)
		focus(t, b, `a[href="#/templates/success-rate"]`)
		press(t, b, kb.Enter)
		waitJS(t, b, "the template's page", `document.querySelector('#arg-namespace')`)
		typeInto(t, b, "#arg-namespace", promtest.IncidentNamespace)
		// Tab from the argument to the first backtest button, Enter.
		press(t, b, kb.Tab)
		var window string
		b.Eval(`document.activeElement.dataset.window || ''`, &window)
		if window != "-6h" {
			t.Fatalf("Tab from the argument reached %q, not the 6 h backtest", window)
		}
		press(t, b, kb.Enter)
		waitJS(t, b, "the backtest's strip", `document.querySelectorAll('#backtest rect.cell').length > 0`)
		// Every 10 minutes over 6 hours; the incident, an hour and a half
		// ago, fired.
		if n := b.Count("#backtest rect.cell"); n < 36 || n > 37 {
			t.Errorf("%d cells for a backtest every 10 minutes over 6 hours", n)
		}
		if b.Count("#backtest rect.cell.c-Failed") == 0 {
			t.Error("the incident did not fire in the strip")
		}
		if !strings.Contains(b.Text("#backtest #reason"), "would have failed") {
			t.Errorf("the backtest's reason: %q", b.Text("#backtest #reason"))
		}
		b.Screenshot("ui-template-backtest.png")
	})

	t.Run("try", func(t *testing.T) {
		goTo(b, "#/try")
		waitJS(t, b, "the form", `document.querySelector('#try-yaml')`)
		bad := strings.Replace(seedSpec(t), "successCondition: result[0] >= 0.99", "successCondition: reslt[0] >= 0.99", 1)
		set, _ := json.Marshal(bad)
		var ignored any
		b.Eval(`document.querySelector('#try-yaml').value = `+string(set)+`, 0`, &ignored)
		typeInto(t, b, "#try-args", "namespace="+promtest.IncidentNamespace)
		focus(t, b, "#try-validate")
		press(t, b, kb.Enter)
		line := lineOf(bad, "successCondition:")
		waitJS(t, b, "the problem at its line", fmt.Sprintf(`document.querySelector('#annotated .msg[data-line="%d"]')`, line))
		if msg := b.Text(fmt.Sprintf(`#annotated .msg[data-line="%d"]`, line)); !strings.Contains(msg, "metrics[0].successCondition") || !strings.Contains(msg, "reslt") {
			t.Errorf("the problem at line %d says %q", line, msg)
		}
		if b.Count("#annotated .src.bad") != 1 {
			t.Errorf("%d lines marked, want 1", b.Count("#annotated .src.bad"))
		}
		b.Screenshot("ui-try-problems.png")
		// The line's button puts the caret on it.
		focus(t, b, "#annotated .goto")
		press(t, b, kb.Enter)
		var selected string
		b.Eval(`(t => document.activeElement === t ? t.value.slice(t.selectionStart, t.selectionEnd) : '')(document.querySelector('#try-yaml'))`, &selected)
		if !strings.Contains(selected, "reslt[0]") {
			t.Errorf("the line's button selected %q", selected)
		}

		// Fixed, then backtested at once.
		good, _ := json.Marshal(seedSpec(t))
		b.Eval(`document.querySelector('#try-yaml').value = `+string(good)+`, 0`, &ignored)
		b.Eval(`document.querySelector('#try-yaml').closest('form').querySelector('button[data-window="-24h"]').focus(), 0`, &ignored)
		press(t, b, kb.Enter)
		waitJS(t, b, "valid, and the backtest's strip", `document.querySelector('#valid') && document.querySelectorAll('#backtest rect.cell').length > 0`)
		if b.Count("#backtest rect.cell.c-Failed") == 0 {
			t.Error("the incident did not fire in the tried template's backtest")
		}
		b.Screenshot("ui-try-backtest.png")
	})

	clean(t, b, s.url, "400 /v1/validate?")
}

// TestUINarrow opens every page at 390 px wide (a phone): nothing is
// wider than the window.
func TestUINarrow(t *testing.T) {
	prom := promtest.Start(t)
	s := startUI(t, prom, nil)
	b := browsertest.Start(t, browsertest.Options{Width: 390, Height: 844, Timeout: 2 * time.Minute})
	b.Navigate(s.url + "/ui/")
	waitJS(t, b, "the list", `document.querySelectorAll('tr[data-id]').length === 2`)
	noOverflow(t, b, "the list")
	b.Screenshot("ui-analyses-390.png")

	goTo(b, "#/analyses/"+s.failed.ID)
	waitJS(t, b, "the report", `document.querySelector('#report #verdict')`)
	noOverflow(t, b, "an analysis")
	b.Screenshot("ui-analysis-390.png")

	goTo(b, "#/templates/success-rate")
	waitJS(t, b, "the template", `document.querySelector('#arg-namespace')`)
	typeInto(t, b, "#arg-namespace", promtest.IncidentNamespace)
	var ignored any
	b.Eval(`document.querySelector('button[data-window="-6h"]').click(), 0`, &ignored)
	waitJS(t, b, "the strip", `document.querySelectorAll('#backtest rect.cell').length > 0`)
	noOverflow(t, b, "a template's backtest")

	goTo(b, "#/try")
	waitJS(t, b, "the form", `document.querySelector('#try-yaml')`)
	set, _ := json.Marshal(strings.Replace(seedSpec(t), "count: 3", "count: -3", 1))
	b.Eval(`document.querySelector('#try-yaml').value = `+string(set)+`, document.querySelector('#try-validate').click(), 0`, &ignored)
	waitJS(t, b, "the problems", `document.querySelector('#annotated .msg')`)
	noOverflow(t, b, "a template tried")
	b.Screenshot("ui-try-390.png")
	clean(t, b, s.url, "400 /v1/validate?")
}

// TestUIToken checks that with --auth-token-file the page shows nothing
// until a token is given: a form asks for it, a wrong one is refused, the
// right one shows the analyses and is kept for the tab, and forgetting it
// asks again.
func TestUIToken(t *testing.T) {
	prom := promtest.Start(t)
	s := startUI(t, prom, []string{"s3cret"})

	// The shell is served without a token and holds nothing of the API.
	r, err := http.Get(s.url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	shell := string(readAll(t, r.Body))
	r.Body.Close()
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy || strings.Contains(shell, s.failed.ID) {
		t.Fatalf("the shell: %d %q", r.StatusCode, r.Header.Get("Content-Security-Policy"))
	}

	b := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 900, Timeout: 2 * time.Minute})
	b.Navigate(s.url + "/ui/")
	waitJS(t, b, "the token form", `!document.querySelector('#token-form').hidden && document.activeElement === document.querySelector('#token')`)
	var page string
	b.Eval(`document.body.innerText`, &page)
	for _, secret := range []string{s.failed.ID, s.passed.ID, "echo-bad", "non-5xx-rate"} {
		if strings.Contains(page, secret) {
			t.Errorf("before the token the page shows %q", secret)
		}
	}
	if b.Count("tr[data-id]") != 0 {
		t.Error("analyses listed before the token")
	}
	b.Screenshot("ui-token.png")

	// A wrong token, by keyboard: refused, asked again.
	typeInto(t, b, "#token", "wrong"+kb.Enter)
	waitJS(t, b, "the refusal", `document.querySelector('#token-error').innerText.includes('refused')`)
	if b.Count("tr[data-id]") != 0 {
		t.Error("analyses listed with a wrong token")
	}
	// The right one.
	typeInto(t, b, "#token", "s3cret"+kb.Enter)
	waitJS(t, b, "the analyses", `document.querySelector('#token-form').hidden && document.querySelectorAll('tr[data-id]').length === 2`)
	goTo(b, "#/analyses/"+s.failed.ID)
	waitJS(t, b, "the report, with the token", `document.querySelector('#report #verdict')`)

	// Kept for the tab: a reload needs no token again.
	b.Navigate(s.url + "/ui/")
	waitJS(t, b, "the analyses after a reload", `document.querySelectorAll('tr[data-id]').length === 2`)
	// Forgotten: asked again, nothing shown.
	var ignored any
	b.Eval(`document.querySelector('#forget').click(), 0`, &ignored)
	waitJS(t, b, "the token form again", `!document.querySelector('#token-form').hidden && document.querySelectorAll('tr[data-id]').length === 0`)
	var stored string
	b.Eval(`sessionStorage.getItem('canaryd.token') || ''`, &stored)
	if stored != "" {
		t.Errorf("the token is still kept: %q", stored)
	}
	clean(t, b, s.url, "401 /v1/")
}
