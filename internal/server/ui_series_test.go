package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/browsertest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestUIRoundSeries opens the page on the rounds of two series and an
// analysis: each series is one row, its rounds' phases beside it, that
// opens the series' rounds over time, each opening its report.
func TestUIRoundSeries(t *testing.T) {
	prom := promtest.Start(t)
	s := startUI(t, prom, nil)
	const path = "/v1/templates/success-rate/evaluate"
	var good []api.Analysis
	for range 3 {
		a, _ := roundAt(t, s.testServer, path, `{"args": {"namespace": "echo"}}`)
		good = append(good, a)
	}
	bad, _ := roundAt(t, s.testServer, path, `{"args": {"namespace": "echo-bad"}}`)
	if good[0].Series != good[2].Series || bad.Series == good[0].Series || bad.Phase != api.PhaseFailed {
		t.Fatalf("rounds: %+v %+v", good, bad)
	}

	b := browsertest.Start(t, browsertest.Options{Width: 1280, Height: 900, Timeout: 2 * time.Minute})
	b.Navigate(s.url + "/ui")
	waitJS(t, b, "two analyses and two series", `document.querySelectorAll('tr[data-id]').length === 2 && document.querySelectorAll('tr[data-series]').length === 2`)
	row := b.Text(`tr[data-series="` + good[0].Series + `"]`)
	for _, want := range []string{"Successful", "success-rate", "3 rounds", "namespace=echo"} {
		if !strings.Contains(row, want) {
			t.Errorf("the series' row does not say %q: %q", want, row)
		}
	}
	if title, want := startedTitle(b, `tr[data-series="`+good[0].Series+`"]`), good[0].StartedAt.UTC().Format("2006-01-02 15:04:05"); !strings.HasPrefix(title, want) {
		t.Errorf("the series' start is titled %q, want its first round's, %s", title, want)
	}
	if n := b.Count(`tr[data-series="` + good[0].Series + `"] .calls a.tick.p-Successful`); n != 3 {
		t.Errorf("the series' row shows %d rounds, want 3", n)
	}
	if n := b.Count(`tr[data-series="` + bad.Series + `"] .calls a.tick.p-Failed`); n != 1 {
		t.Errorf("the other series' row shows %d Failed rounds, want 1", n)
	}
	b.Screenshot("ui-series-list.png")

	goTo(b, "#/series/"+good[0].Series)
	waitJS(t, b, "the series' rounds", `document.querySelectorAll('#series tr[data-id]').length === 3`)
	var ids []string
	b.Eval(`Array.from(document.querySelectorAll('#series tr[data-id]')).map(tr => tr.dataset.id)`, &ids)
	if strings.Join(ids, ",") != good[2].ID+","+good[1].ID+","+good[0].ID {
		t.Errorf("the series lists %v, want its rounds newest first", ids)
	}
	title := b.Text("h1")
	if !strings.Contains(title, "success-rate") || !strings.Contains(title, "3 rounds") {
		t.Errorf("the series' title %q", title)
	}
	if text := b.Text(`#series tr[data-id="` + good[0].ID + `"]`); !strings.Contains(text, "non-5xx-rate") {
		t.Errorf("a round's row does not say what it measured: %q", text)
	}
	b.Screenshot("ui-series.png")
	goTo(b, "#/analyses/"+good[1].ID)
	waitJS(t, b, "a round's report", `document.querySelector('#report #verdict') && document.querySelector('#report #verdict').innerText === 'Successful'`)
	clean(t, b, s.url)

	// The list's JSON is as it was for an analysis that is no round.
	resp := s.do(http.MethodGet, "/v1/analyses/"+s.passed.ID, "", "")
	if a := resp.analysis(t); a.Kind != "" || a.Series != "" {
		t.Errorf("an analysis has kind %q, series %q", a.Kind, a.Series)
	}
}
