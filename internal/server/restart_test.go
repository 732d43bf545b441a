package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/store"
)

// TestRestartedReplicaAnswers410 checks that a canaryd on memory: answers
// 410 Gone, "this canaryd restarted after the analysis started", for an id
// its earlier run made, and still 404 for one it never made; and that on a
// store, where analyses outlive their run, the earlier run's analysis is
// answered and an unknown id is a 404, not a 410.
func TestRestartedReplicaAnswers410(t *testing.T) {
	// Nothing answers there, and the fake clocks never let the analyses
	// end: they are as good as any for ids.
	urls := []string{"http://127.0.0.1:1"}
	started := time.Now()
	before := start(t, options{prometheus: urls, clock: clock.NewFake(started)})
	old := before.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good")).analysis(t)

	// The same replica, restarted a second later: a new set of analyses.
	after := start(t, options{prometheus: urls, clock: clock.NewFake(started.Add(time.Second))})
	fresh := after.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good")).analysis(t)
	if fresh.ID[:9] == old.ID[:9] {
		t.Fatalf("ids %s and %s of two runs of a replica start with the same epoch", old.ID, fresh.ID)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		resp := after.do(method, "/v1/analyses/"+old.ID, "", "")
		if resp.status != http.StatusGone {
			t.Fatalf("%s of an analysis of the replica's earlier run: status %d, want 410: %s", method, resp.status, resp.body)
		}
		p := resp.problem(t)
		if p.Type != server.ProblemReplicaRestarted || !strings.Contains(p.Detail, "this canaryd restarted after the analysis started") {
			t.Errorf("%s: problem %+v, want replica-restarted saying the replica restarted", method, p)
		}
	}

	// An id of the current run that is not held, and ids of a later run
	// or of an earlier version (no epoch), are ones this replica never
	// made: 404.
	for _, id := range []string{
		fresh.ID[:9] + strings.Repeat("a", 26),
		"zzzzzzzzz" + fresh.ID[9:],
		fresh.ID[9:],
	} {
		if resp := after.do(http.MethodGet, "/v1/analyses/"+id, "", ""); resp.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", id, resp.status)
		}
	}
	// The earlier run still holds its own.
	if resp := before.do(http.MethodGet, "/v1/analyses/"+old.ID, "", ""); resp.status != http.StatusOK {
		t.Errorf("GET on the run that made it: status %d, want 200", resp.status)
	}
	// An id names no replica: the epoch and the random part alone.
	if strings.Contains(old.ID, ".") || len(old.ID) != 35 {
		t.Errorf("id %s: want 35 characters, no replica name", old.ID)
	}

	// On a shared store (a memory store here standing in for one), the
	// run after answers for the earlier run's analysis,
	// and an id of that run the store does not have is not there: 404.
	st := store.NewMemory(store.Options{Shared: true})
	stored := start(t, options{prometheus: urls, clock: clock.NewFake(started), store: st})
	kept := stored.do(http.MethodPost, "/v1/analyses", jsonType, once("echo-good")).analysis(t)
	later := start(t, options{prometheus: urls, clock: clock.NewFake(started.Add(time.Second)), store: st})
	if resp := later.do(http.MethodGet, "/v1/analyses/"+kept.ID, "", ""); resp.status != http.StatusOK {
		t.Errorf("GET on a store of an earlier run's analysis: status %d, want 200: %s", resp.status, resp.body)
	}
	unknown := kept.ID[:9] + strings.Repeat("b", 26)
	if resp := later.do(http.MethodGet, "/v1/analyses/"+unknown, "", ""); resp.status != http.StatusNotFound {
		t.Errorf("GET on a store of an earlier run's id it does not have: status %d, want 404: %s", resp.status, resp.body)
	}
}
