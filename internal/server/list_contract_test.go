package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/store"
)

// The list's contract holds on both stores: every filter selects the same
// analyses, the cursor pages through them, and a bad or unknown parameter
// is a 400 naming it, whether the analyses live in this replica's memory
// (memory:) or in a store every replica shares.

// TestListFilters: ?arg=, ?startedAfter=, ?startedBefore=, ?phase=,
// ?template= and the cursor, on memory: and on PostgreSQL (two replicas,
// each listing the other's analyses too).
func TestListFilters(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		prom := promtest.Start(t)
		s := start(t, options{prometheus: []string{prom.URL}})
		testListFilters(t, s, s)
	})
	t.Run("postgres", func(t *testing.T) {
		prom := promtest.Start(t)
		st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{})
		a := start(t, options{prometheus: []string{prom.URL}, store: st})
		b := start(t, options{prometheus: []string{prom.URL}, store: st})
		testListFilters(t, a, b)
	})
}

// testListFilters starts three analyses, the second on b, and lists them
// through b with every filter.
func testListFilters(t *testing.T, a, b *testServer) {

	before := time.Now()
	ids := map[string]string{}
	for i, ns := range []string{"echo-good", "echo-bad", "echo-good"} {
		s := a
		if i == 1 {
			s = b
		}
		resp := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace="+ns, yamlType, seed(t))
		if resp.status != http.StatusOK {
			t.Fatalf("start: %d %s", resp.status, resp.body)
		}
		ids[resp.analysis(t).ID] = ns
	}
	list := func(s *testServer, query string) server.AnalysisList {
		t.Helper()
		resp := s.do(http.MethodGet, "/v1/analyses?"+query, "", "")
		if resp.status != http.StatusOK {
			t.Fatalf("list ?%s: %d %s", query, resp.status, resp.body)
		}
		var l server.AnalysisList
		if err := json.Unmarshal(resp.body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(a, ""); len(l.Analyses) != 3 {
		t.Errorf("list: %d analyses, want the 3 of both replicas", len(l.Analyses))
	}
	waitFor(t, "the Failed analysis", func() bool { return len(list(b, "phase=Failed").Analyses) == 1 })
	if l := list(b, "arg=namespace=echo-bad"); len(l.Analyses) != 1 || ids[l.Analyses[0].ID] != "echo-bad" || l.Analyses[0].Phase != api.PhaseFailed {
		t.Errorf("?arg=namespace=echo-bad: %+v", l.Analyses)
	}
	// The final state is written just after the waits are answered.
	waitFor(t, "two Successful analyses of the template", func() bool {
		return len(list(b, "phase=Successful&template=success-rate-args").Analyses) == 2
	})
	if l := list(b, "template=another"); len(l.Analyses) != 0 {
		t.Errorf("?template=another: %d analyses, want none", len(l.Analyses))
	}
	after := url.QueryEscape(before.Add(-time.Second).Format(time.RFC3339Nano))
	if l := list(b, "startedAfter="+after+"&startedBefore="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(l.Analyses) != 3 {
		t.Errorf("?startedAfter&startedBefore around the test: %d analyses, want 3", len(l.Analyses))
	}
	if l := list(b, "startedBefore="+after); len(l.Analyses) != 0 {
		t.Errorf("?startedBefore before the test: %d analyses, want none", len(l.Analyses))
	}
	// Pages of one, through the cursor: every analysis once.
	seen := map[string]bool{}
	cursor := ""
	for range 4 {
		l := list(b, "limit=1&cursor="+url.QueryEscape(cursor))
		for _, x := range l.Analyses {
			if seen[x.ID] {
				t.Errorf("%s listed twice", x.ID)
			}
			seen[x.ID] = true
		}
		if cursor = l.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 3 || cursor != "" {
		t.Errorf("paged: %d analyses seen, next %q; want 3 and the end", len(seen), cursor)
	}
	// A round kept is filtered as the analyses are (an Error round, 503:
	// the namespace has no data).
	if resp := a.do(http.MethodPost, "/v1/evaluate?arg.namespace=echo-round", yamlType, seed(t)); resp.analysis(t).Kind != api.KindRound {
		t.Fatalf("evaluate: %d %s", resp.status, resp.body)
	}
	waitFor(t, "the round kept, found by its argument", func() bool { return len(list(b, "arg=namespace=echo-round").Analyses) == 1 })
	for _, q := range []string{"arg=namespace", "startedAfter=yesterday", "cursor=garbage", "template=", "state=Failed", "startedafter=2026-01-01T00:00:00Z"} {
		resp := b.do(http.MethodGet, "/v1/analyses?"+q, "", "")
		field, _, _ := strings.Cut(q, "=")
		if resp.status != http.StatusBadRequest || resp.problem(t).Errors[0].Field != field {
			t.Errorf("?%s: %d %s, want 400 naming %s", q, resp.status, resp.body, field)
		}
	}
}
