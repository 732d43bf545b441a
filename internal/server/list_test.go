package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/server"
)

// pages reads the whole list a page at a time, following next.
func (s *testServer) pages(query string) (ids []string, pages int) {
	s.t.Helper()
	cursor := ""
	for {
		q := query
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var list server.AnalysisList
		mustJSON(s.t, s.do(http.MethodGet, "/v1/analyses?"+q, "", "").body, &list)
		pages++
		for _, a := range list.Analyses {
			ids = append(ids, a.ID)
		}
		if list.Next == "" {
			return ids, pages
		}
		if pages > 100 {
			s.t.Fatal("more than 100 pages")
		}
		cursor = list.Next
	}
}

// TestListPages checks the list's pages: ?limit= analyses a page, newest
// first, each page's next the cursor of the one after it, no analysis
// twice or missed, measurements left out unless asked for, and every
// out-of-bound value a 400 naming its parameter.
func TestListPages(t *testing.T) {
	fake := clock.NewFake(time.Now())
	s := start(t, options{sources: instantSources, clock: fake})
	var started []string
	for i := range 7 {
		a := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good")).analysis(t)
		started = append(started, a.ID)
		if i%3 != 2 { // some start at the same instant: the id orders them
			fake.Advance(time.Second)
		}
	}
	all, pages := s.pages("limit=1000")
	if pages != 1 || len(all) != 7 {
		t.Fatalf("one page of up to 1000: %d pages, %d analyses; want 1 page of 7", pages, len(all))
	}
	for _, limit := range []string{"1", "2", "3", "6", "7"} {
		ids, _ := s.pages("limit=" + limit)
		if !slices.Equal(ids, all) {
			t.Errorf("pages of %s: %v, want the list %v", limit, ids, all)
		}
	}
	slices.Sort(started)
	sorted := slices.Sorted(slices.Values(all))
	if !slices.Equal(sorted, started) {
		t.Errorf("listed %v, want every analysis started, %v", sorted, started)
	}

	// An analysis started between two pages comes before the cursor: the
	// pages after it are unchanged.
	var first server.AnalysisList
	mustJSON(t, s.do(http.MethodGet, "/v1/analyses?limit=3", "", "").body, &first)
	fake.Advance(time.Second)
	s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType, once("echo-good"))
	var second server.AnalysisList
	mustJSON(t, s.do(http.MethodGet, "/v1/analyses?limit=3&cursor="+first.Next, "", "").body, &second)
	if len(second.Analyses) != 3 || second.Analyses[0].ID != all[3] {
		t.Errorf("the second page after a new analysis starts with %v, want %s", second.Analyses, all[3])
	}

	// Measurements are left out unless asked for.
	var bare, full server.AnalysisList
	mustJSON(t, s.do(http.MethodGet, "/v1/analyses?limit=1", "", "").body, &bare)
	mustJSON(t, s.do(http.MethodGet, "/v1/analyses?limit=1&measurements=true", "", "").body, &full)
	if m := bare.Analyses[0].MetricResults[0]; len(m.Measurements) != 0 || m.Count != 1 {
		t.Errorf("without ?measurements: %d measurements, count %d; want none, count 1", len(m.Measurements), m.Count)
	}
	if m := full.Analyses[0].MetricResults[0]; len(m.Measurements) != 1 || m.Measurements[0].Phase != api.PhaseSuccessful {
		t.Errorf("with ?measurements=true: %+v, want the measurement", m.Measurements)
	}

	for _, tc := range []struct{ query, field string }{
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=ten", "limit"},
		{"limit=1&limit=2", "limit"},
		{"cursor=nope", "cursor"},
		{"cursor=" + strings.Repeat("a", 300), "cursor"},
		{"measurements=maybe", "measurements"},
	} {
		resp := s.do(http.MethodGet, "/v1/analyses?"+tc.query, "", "")
		if resp.status != http.StatusBadRequest {
			t.Errorf("?%s: status %d, want 400", tc.query, resp.status)
			continue
		}
		if p := resp.problem(t); len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
			t.Errorf("?%s: errors %+v, want one on %s", tc.query, p.Errors, tc.field)
		}
	}
}
