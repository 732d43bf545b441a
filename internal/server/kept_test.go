package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/store"
)

// listed reads a page of the list.
func listed(t *testing.T, s *testServer, query string, headers ...string) server.AnalysisList {
	t.Helper()
	resp := s.do(http.MethodGet, "/v1/analyses"+query, "", "", headers...)
	if resp.status != http.StatusOK {
		t.Fatalf("GET /v1/analyses%s: %d %s", query, resp.status, resp.body)
	}
	var list server.AnalysisList
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatalf("GET /v1/analyses%s: %v", query, err)
	}
	return list
}

// roundAt evaluates a round of the named template and returns it and the
// path its Location names ("" without one).
func roundAt(t *testing.T, s *testServer, path, body string, headers ...string) (api.Analysis, string) {
	t.Helper()
	resp := s.do(http.MethodPost, path, jsonType, body, headers...)
	if resp.status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.status, resp.body)
	}
	location := ""
	if l := resp.header.Get("Location"); l != "" {
		u, err := url.Parse(l)
		if err != nil {
			t.Fatalf("Location %q: %v", l, err)
		}
		location = u.Path
	}
	return resp.analysis(t), location
}

// TestRoundsAreKept: every round is readable at the id it answers with,
// as JSON and as its report, listed as a round of its series; the rounds of
// one call share a series, and another argument, template or caller makes
// another.
func TestRoundsAreKept(t *testing.T) {
	prom := promtest.Start(t)
	dir := templatesDir(t, nil)
	s := start(t, options{prometheus: []string{prom.URL}, templates: dir, tokens: []string{"argo-token", "ci-token"}})
	argo := []string{"Authorization", "Bearer argo-token"}

	const path = "/v1/templates/success-rate/evaluate"
	first, location := roundAt(t, s, path, `{"args": {"namespace": "echo-good"}}`, argo...)
	if location != "/v1/analyses/"+first.ID {
		t.Fatalf("Location %q, want /v1/analyses/%s", location, first.ID)
	}
	if first.Kind != api.KindRound || len(first.Series) != 20 {
		t.Errorf("the round's kind %q, series %q; want round and a series key", first.Kind, first.Series)
	}
	got := s.do(http.MethodGet, location, "", "", argo...)
	if got.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", location, got.status, got.body)
	}
	if a := got.analysis(t); a.ID != first.ID || a.Phase != api.PhaseSuccessful || a.CompletedAt == nil || a.Series != first.Series ||
		a.Kind != api.KindRound || len(a.MetricResults) != 1 || len(a.MetricResults[0].Measurements) != 1 ||
		a.MetricResults[0].Measurements[0].Value != first.MetricResults[0].Measurements[0].Value {
		t.Errorf("GET of the round: %s, want the round answered:\n%+v", got.body, first)
	}
	report := s.do(http.MethodGet, location, "", "", append([]string{"Accept", "text/html"}, argo...)...)
	if report.status != http.StatusOK || !strings.HasPrefix(report.header.Get("Content-Type"), "text/html") || !strings.Contains(string(report.body), first.ID) {
		t.Errorf("the round's report: %d %s", report.status, report.header.Get("Content-Type"))
	}

	// The same call again, and others.
	second, _ := roundAt(t, s, path, `{"args": {"namespace": "echo-good"}}`, argo...)
	other, _ := roundAt(t, s, path, `{"args": {"namespace": "echo-bad"}}`, argo...)
	fromCI, _ := roundAt(t, s, path, `{"args": {"namespace": "echo-good"}}`, "Authorization", "Bearer ci-token")
	inQuery, _ := roundAt(t, s, path+"?arg.namespace=echo-good", "", argo...)
	if second.Series != first.Series || inQuery.Series != first.Series {
		t.Errorf("the same call's series: %s, %s, %s; want one", first.Series, second.Series, inQuery.Series)
	}
	if other.Series == first.Series || fromCI.Series == first.Series {
		t.Errorf("another argument's series %s, another caller's %s: want other than %s", other.Series, fromCI.Series, first.Series)
	}

	// The series, newest first, a page at a time.
	list := listed(t, s, "?series="+first.Series+"&limit=2", argo...)
	if len(list.Analyses) != 2 || list.Analyses[0].ID != inQuery.ID || list.Analyses[1].ID != second.ID || list.Next == "" {
		t.Fatalf("?series=&limit=2: %+v, want the last two rounds and a next page", list)
	}
	rest := listed(t, s, "?series="+first.Series+"&limit=2&cursor="+list.Next, argo...)
	if len(rest.Analyses) != 1 || rest.Analyses[0].ID != first.ID || rest.Next != "" {
		t.Errorf("the next page: %+v, want the first round alone", rest)
	}
	if all := listed(t, s, "", argo...); len(all.Analyses) != 5 {
		t.Errorf("the whole list holds %d analyses, want the 5 rounds", len(all.Analyses))
	}
	bad := s.do(http.MethodGet, "/v1/analyses?series=nope", "", "", argo...)
	if bad.status != http.StatusBadRequest || len(bad.problem(t).Errors) != 1 || bad.problem(t).Errors[0].Field != "series" {
		t.Errorf("?series=nope: %d %s, want a 400 on series", bad.status, bad.body)
	}
	// The first caller again, after another caller of the same call.
	if again, _ := roundAt(t, s, path, `{"args": {"namespace": "echo-good"}}`, argo...); again.Series != first.Series {
		t.Errorf("the first caller's series after another caller's: %s, want %s", again.Series, first.Series)
	}
}

// TestGatesAreASeries: a gate is listed as one, of the series of its call.
func TestGatesAreASeries(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, templates: templatesDir(t, nil)})
	var series []string
	for range 2 {
		resp := s.do(http.MethodPost, "/v1/gates/success-rate", jsonType, `{"args": {"namespace": "echo-good"}}`)
		if resp.status != http.StatusOK {
			t.Fatalf("gate: %d %s", resp.status, resp.body)
		}
		a := resp.analysis(t)
		if a.Kind != api.KindGate {
			t.Errorf("gate's kind %q", a.Kind)
		}
		series = append(series, a.Series)
	}
	round, _ := roundAt(t, s, "/v1/templates/success-rate/evaluate", `{"args": {"namespace": "echo-good"}}`)
	if series[0] == "" || series[0] != series[1] || round.Series == series[0] {
		t.Errorf("two gates' series %v, a round of the same call's %s: want the gates' alike, the round's another", series, round.Series)
	}
	if list := listed(t, s, "?series="+series[0]); len(list.Analyses) != 2 {
		t.Errorf("the gates' series lists %d analyses, want 2", len(list.Analyses))
	}
}

// TestRoundsKeepTheBounds: a round counts against --max-finished as any
// analysis does; when nothing held may be evicted for it, it is answered
// all the same, without a Location, and not kept.
func TestRoundsKeepTheBounds(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, maxFinished: 2, minRetention: time.Hour})
	body := once("echo-good")
	var kept []string
	for range 2 {
		a, location := roundAt(t, s, "/v1/evaluate", body)
		if location == "" {
			t.Fatal("a round within the bounds has no Location")
		}
		kept = append(kept, a.ID)
	}
	a, location := roundAt(t, s, "/v1/evaluate", body)
	if location != "" || a.Phase != api.PhaseSuccessful {
		t.Errorf("a round beyond --max-finished: phase %s, Location %q; want its verdict and no Location", a.Phase, location)
	}
	if got := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", ""); got.status != http.StatusNotFound {
		t.Errorf("GET of the round not kept: %d", got.status)
	}
	for _, id := range kept {
		if got := s.do(http.MethodGet, "/v1/analyses/"+id, "", ""); got.status != http.StatusOK {
			t.Errorf("GET of a round kept, younger than --min-retention: %d", got.status)
		}
	}
	if n := counterValue(t, s, "canaryd_rounds_not_kept_total"); n != 1 {
		t.Errorf("canaryd_rounds_not_kept_total = %v, want 1", n)
	}
	// A new analysis is refused as before: the rounds are as young.
	if resp := s.do(http.MethodPost, "/v1/analyses", jsonType, body); resp.status != http.StatusTooManyRequests {
		t.Errorf("an analysis beyond --max-finished: %d", resp.status)
	}
}

// TestRoundsKeptInTheStore: with a store, a round is written there, and
// every replica answers for it and lists its series; on a memory store
// shared by the replicas of one process and on postgres alike.
func TestRoundsKeptInTheStore(t *testing.T) {
	prom := promtest.Start(t)
	for _, tc := range []struct {
		name string
		st   func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return store.NewMemory(store.Options{Shared: true}) }},
		{"postgres", func(t *testing.T) store.Store { return openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st(t)
			dir := templatesDir(t, nil)
			a := start(t, options{prometheus: []string{prom.URL}, store: st, templates: dir})
			b := start(t, options{prometheus: []string{prom.URL}, store: st, templates: dir})
			var ids []string
			var series string
			for _, ns := range []string{"echo-good", "echo-bad"} {
				round, location := roundAt(t, a, "/v1/templates/success-rate/evaluate", `{"args": {"namespace": "`+ns+`"}}`)
				if location == "" {
					t.Fatal("no Location")
				}
				ids, series = append(ids, round.ID), round.Series
			}
			again, _ := roundAt(t, a, "/v1/templates/success-rate/evaluate", `{"args": {"namespace": "echo-bad"}}`)
			ids = append(ids, again.ID)
			for _, id := range ids {
				waitFor(t, "the round in the store", func() bool {
					_, err := st.Get(context.Background(), id)
					return err == nil
				})
			}
			got := b.do(http.MethodGet, "/v1/analyses/"+ids[1], "", "")
			if r := got.analysis(t); got.status != http.StatusOK || r.Phase != api.PhaseFailed || r.Kind != api.KindRound || r.Series != series ||
				len(r.MetricResults) != 1 || len(r.MetricResults[0].Measurements) != 1 {
				t.Errorf("GET on the other replica: %d %s", got.status, got.body)
			}
			report := b.do(http.MethodGet, "/v1/analyses/"+ids[1], "", "", "Accept", "text/html")
			if report.status != http.StatusOK || !strings.HasPrefix(report.header.Get("Content-Type"), "text/html") {
				t.Errorf("the report on the other replica: %d %s", report.status, report.header.Get("Content-Type"))
			}
			list := listed(t, b, "?series="+series)
			if len(list.Analyses) != 2 || list.Analyses[0].ID != ids[2] || list.Analyses[1].ID != ids[1] {
				t.Errorf("?series= on the other replica: %+v, want the two echo-bad rounds, newest first", list.Analyses)
			}
			// A stream of a round is its measurements and its end.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, resp := b.openStream(ctx, http.MethodGet, "/v1/analyses/"+ids[0], "", "", "application/x-ndjson")
			defer resp.Body.Close()
			events := newEventReader(t, resp).all()
			if n := len(events); n != 2 || events[n-1].Type != api.EventCompleted {
				t.Errorf("the stream of a round: %d events, want a measurement and the end", n)
			}
		})
	}
}

// counterValue is the value of the counter name in s' registry.
func counterValue(t *testing.T, s *testServer, name string) float64 {
	t.Helper()
	return onlyMetric(t, s, name).GetCounter().GetValue()
}

// onlyMetric is the one series of the metric name in s' registry.
func onlyMetric(t *testing.T, s *testServer, name string) *dto.Metric {
	t.Helper()
	families, err := s.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("no metric %s with one series", name)
	return nil
}
