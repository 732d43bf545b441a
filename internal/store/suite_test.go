package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/store"
)

// What Create stores, Get gives back: the request, the state, the lease.
func TestCreateGet(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		doc := []byte("apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\n")
		state := running("a1", t0.Add(time.Second), "success-rate", "latency")
		state.Args = map[string]string{"namespace": "shop"}
		l := create(t, s, store.NewAnalysis{
			ID:       "a1",
			Document: doc,
			Args:     []store.Arg{{Name: "service", Value: "cart"}, {Name: "namespace", Value: "shop"}},
			Webhook:  &store.Webhook{URL: "https://hooks.example.com/ci", Events: []string{"completed"}},
			State:    state,
			Owner:    "replica-a",
		})
		if l.ID != "a1" || l.Owner != "replica-a" || l.Token < 1 || !l.ExpiresAt.Equal(t0.Add(ttl)) {
			t.Fatalf("lease %+v", l)
		}
		a := get(t, s, "a1")
		if string(a.Document) != string(doc) || a.DocumentSHA256 != sha(doc) {
			t.Errorf("document %q, sha256 %s", a.Document, a.DocumentSHA256)
		}
		wantArgs := []store.Arg{{Name: "namespace", Value: "shop"}, {Name: "service", Value: "cart"}}
		if !reflect.DeepEqual(a.Args, wantArgs) {
			t.Errorf("args %+v, want %+v", a.Args, wantArgs)
		}
		if a.Webhook == nil || a.Webhook.URL != "https://hooks.example.com/ci" || !slices.Equal(a.Webhook.Events, []string{"completed"}) {
			t.Errorf("webhook %+v", a.Webhook)
		}
		if a.Phase != api.PhaseRunning || !a.StartedAt.Equal(t0.Add(time.Second)) || a.CompletedAt != nil {
			t.Errorf("phase %s, started %v, completed %v", a.Phase, a.StartedAt, a.CompletedAt)
		}
		if !reflect.DeepEqual(a.State, state) {
			t.Errorf("state\n%+v\nwant\n%+v", a.State, state)
		}
		if a.Lease != l || a.CreatedAt.IsZero() || a.SealError != nil {
			t.Errorf("lease %+v (want %+v), created %v, seal error %v", a.Lease, l, a.CreatedAt, a.SealError)
		}
		if _, err := s.Create(ctx(t), store.NewAnalysis{ID: "a1", Owner: "b", State: state}); !errors.Is(err, store.ErrExists) {
			t.Errorf("second Create: %v, want ErrExists", err)
		}
		for _, id := range []string{"", strings.Repeat("x", store.MaxIDLength+1), "a b"} {
			if _, err := s.Create(ctx(t), store.NewAnalysis{ID: id, Owner: "b", State: state}); err == nil {
				t.Errorf("Create with the id %.20q: accepted", id)
			}
		}
		create(t, s, store.NewAnalysis{ID: strings.Repeat("x", store.MaxIDLength)})
		if _, err := s.Get(ctx(t), "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
		}

		// A template's analysis has no document.
		create(t, s, store.NewAnalysis{ID: "a2", Template: "error-rate"})
		if b := get(t, s, "a2"); b.Template != "error-rate" || b.Document != nil || b.DocumentSHA256 != "" || b.Webhook != nil {
			t.Errorf("template analysis %+v", b)
		}
	})
}

// SaveState replaces the state; a completed phase sets the completion.
func TestSaveState(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1"})
		v := get(t, s, "a1").Version
		state := running("a1", t0, "success-rate")
		state.MetricResults[0].Count, state.MetricResults[0].Successful, state.MetricResults[0].ConsecutiveSuccess = 3, 3, 3
		if err := s.SaveState(ctx(t), l, state); err != nil {
			t.Fatal(err)
		}
		a := get(t, s, "a1")
		if !reflect.DeepEqual(a.State, state) || a.Version <= v || a.CompletedAt != nil {
			t.Fatalf("after SaveState: version %d (was %d), state %+v", a.Version, v, a.State)
		}
		done := t0.Add(time.Minute)
		state.Phase, state.CompletedAt = api.PhaseSuccessful, &done
		if err := s.SaveState(ctx(t), l, state); err != nil {
			t.Fatal(err)
		}
		if a := get(t, s, "a1"); a.Phase != api.PhaseSuccessful || a.CompletedAt == nil || !a.CompletedAt.Equal(done) {
			t.Fatalf("completed: phase %s at %v", a.Phase, a.CompletedAt)
		}
	})
}

// List: every filter, the order, and the cursor through every page.
func TestList(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		// 25 analyses, a minute apart, some at the same instant to test
		// the order's tie-break.
		var ids []string
		for i := range 25 {
			id := fmt.Sprintf("an-%02d", i)
			ids = append(ids, id)
			at := t0.Add(time.Duration(i/2) * time.Minute)
			template := []string{"error-rate", "latency"}[i%2]
			ns := []string{"shop", "cart", "pay"}[i%3]
			l := create(t, s, store.NewAnalysis{ID: id, Template: template, State: running(id, at, "m"),
				Args: []store.Arg{{Name: "namespace", Value: ns}, {Name: "version", Value: fmt.Sprint(i % 2)}}})
			if i%4 == 0 {
				st := running(id, at, "m")
				st.Phase = api.PhaseFailed
				if err := s.SaveState(ctx(t), l, st); err != nil {
					t.Fatal(err)
				}
			}
		}
		list := func(f store.Filter) []string {
			t.Helper()
			var got []string
			for pages := 0; ; pages++ {
				p, err := s.List(ctx(t), f)
				if err != nil {
					t.Fatalf("List(%+v): %v", f, err)
				}
				if f.Limit > 0 && len(p.Analyses) > f.Limit {
					t.Fatalf("a page of %d, limit %d", len(p.Analyses), f.Limit)
				}
				for _, a := range p.Analyses {
					if a.Document != nil {
						t.Fatalf("List gave a document")
					}
					got = append(got, a.ID)
				}
				if p.Next == "" {
					return got
				}
				if pages > 100 {
					t.Fatal("the cursor does not end")
				}
				f.Cursor = p.Next
			}
		}
		want := func(keep func(i int) bool) []string {
			var out []string
			for i := range ids {
				if keep(i) {
					out = append(out, ids[i])
				}
			}
			// Newest first, ties by id.
			slices.SortStableFunc(out, func(x, y string) int {
				var a, b int
				fmt.Sscanf(x, "an-%d", &a)
				fmt.Sscanf(y, "an-%d", &b)
				if a/2 != b/2 {
					return b/2 - a/2
				}
				return a - b
			})
			return out
		}
		check := func(name string, f store.Filter, keep func(i int) bool) {
			t.Helper()
			if got, w := list(f), want(keep); !slices.Equal(got, w) {
				t.Errorf("%s:\n got %v\nwant %v", name, got, w)
			}
		}
		all := func(int) bool { return true }
		check("all", store.Filter{}, all)
		for _, limit := range []int{1, 2, 3, 7, 25, 100} {
			check(fmt.Sprintf("pages of %d", limit), store.Filter{Limit: limit}, all)
		}
		check("phase", store.Filter{Phases: []api.Phase{api.PhaseFailed}, Limit: 2}, func(i int) bool { return i%4 == 0 })
		check("phases", store.Filter{Phases: []api.Phase{api.PhaseFailed, api.PhaseRunning}}, all)
		check("template", store.Filter{Template: "latency", Limit: 4}, func(i int) bool { return i%2 == 1 })
		check("argument", store.Filter{Args: map[string]string{"namespace": "cart"}, Limit: 3}, func(i int) bool { return i%3 == 1 })
		check("arguments", store.Filter{Args: map[string]string{"namespace": "cart", "version": "0"}}, func(i int) bool { return i%3 == 1 && i%2 == 0 })
		check("no such argument", store.Filter{Args: map[string]string{"cluster": "a"}}, func(int) bool { return false })
		check("started after", store.Filter{StartedAfter: t0.Add(5 * time.Minute), Limit: 2}, func(i int) bool { return i/2 > 5 })
		check("started before", store.Filter{StartedBefore: t0.Add(5 * time.Minute)}, func(i int) bool { return i/2 < 5 })
		check("between", store.Filter{StartedAfter: t0.Add(2 * time.Minute), StartedBefore: t0.Add(9 * time.Minute), Template: "error-rate", Phases: []api.Phase{api.PhaseRunning}},
			func(i int) bool { return i/2 > 2 && i/2 < 9 && i%2 == 0 && i%4 != 0 })

		var fe *store.FilterError
		if _, err := s.List(ctx(t), store.Filter{Limit: store.MaxListLimit + 1}); !errors.As(err, &fe) || fe.Field != "limit" {
			t.Errorf("limit over the maximum: %v", err)
		}
		if _, err := s.List(ctx(t), store.Filter{Cursor: "not-a-cursor"}); !errors.As(err, &fe) || fe.Field != "cursor" {
			t.Errorf("a forged cursor: %v", err)
		}
		many := map[string]string{}
		for i := range store.MaxArgFilters + 1 {
			many[fmt.Sprint("a", i)] = "x"
		}
		if _, err := s.List(ctx(t), store.Filter{Args: many}); !errors.As(err, &fe) || fe.Field != "arg" {
			t.Errorf("too many argument filters: %v", err)
		}
	})
}

// Claim takes only analyses with work left whose lease has expired, and
// bumps their token.
func TestClaimOnlyExpired(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		la := create(t, s, store.NewAnalysis{ID: "a", Owner: "one"})
		clk.Advance(10 * time.Second)
		create(t, s, store.NewAnalysis{ID: "b", Owner: "one"})
		lc := create(t, s, store.NewAnalysis{ID: "c", Owner: "one"})
		done := running("c", t0)
		done.Phase = api.PhaseSuccessful
		if err := s.SaveState(ctx(t), lc, done); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Claim(ctx(t), "two", 10); err != nil || len(got) != 0 {
			t.Fatalf("Claim before any lease expired: %v, %v", got, err)
		}
		clk.Advance(ttl - 10*time.Second) // a's lease ends now; b's and c's in 10 s
		got, err := s.Claim(ctx(t), "two", 10)
		if err != nil || len(got) != 1 || got[0].ID != "a" || got[0].Owner != "two" || got[0].Token <= la.Token {
			t.Fatalf("Claim: %+v, %v; want a alone, its token above %d", got, err, la.Token)
		}
		clk.Advance(time.Hour)
		got, err = s.Claim(ctx(t), "three", 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Claim 1: %+v, %v", got, err)
		}
		if got[0].ID != "a" && got[0].ID != "b" {
			t.Fatalf("claimed %s, a completed analysis without deliveries owed", got[0].ID)
		}
		got2, err := s.Claim(ctx(t), "three", 10)
		if err != nil || len(got2) != 1 || got2[0].ID == got[0].ID || got2[0].ID == "c" {
			t.Fatalf("Claim the rest: %+v, %v", got2, err)
		}
	})
}

// Many replicas claiming at once never get the same analysis twice, and
// between them get every one.
func TestConcurrentClaimers(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		const analyses, claimers = 200, 16
		for i := range analyses {
			create(t, s, store.NewAnalysis{ID: fmt.Sprintf("an-%03d", i), Owner: "dead"})
		}
		clk.Advance(ttl)
		var cs []claimer
		for c := range claimers {
			cs = append(cs, claimer{s: s, owner: fmt.Sprint("replica-", c), n: 7})
		}
		owners := claimAll(t, cs)
		if len(owners) != analyses {
			t.Fatalf("%d analyses claimed, want %d", len(owners), analyses)
		}
		for id, l := range owners {
			if a := get(t, s, id); a.Lease.Owner != l.Owner {
				t.Fatalf("%s is stored as %s's, claimed by %s", id, a.Lease.Owner, l.Owner)
			}
		}
	})
}

// claimer is one replica claiming: its store, its name, and how many
// analyses it claims at a time.
type claimer struct {
	s     store.Store
	owner string
	n     int
}

// claimAll has every claimer claim expired analyses at once until none is
// left, and returns the lease each analysis was claimed with. Two claims
// of one analysis fail the test.
func claimAll(t *testing.T, claimers []claimer) map[string]store.Lease {
	t.Helper()
	var mu sync.Mutex
	owners := map[string]store.Lease{}
	var wg sync.WaitGroup
	errs := make(chan error, len(claimers))
	for _, c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := c.s.Claim(ctx(t), c.owner, c.n)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, l := range got {
					if prev, dup := owners[l.ID]; dup {
						errs <- fmt.Errorf("%s claimed by %s and %s", l.ID, prev.Owner, c.owner)
						mu.Unlock()
						return
					}
					owners[l.ID] = l
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return owners
}

// A stale lease's writes are refused with ErrLeaseLost and change nothing.
func TestFencing(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		stale := create(t, s, store.NewAnalysis{ID: "a1", Owner: "one"})
		if err := s.Enqueue(ctx(t), stale, store.Delivery{WebhookID: "a1.1", Seq: 1, Event: json.RawMessage(`{"type":"measurement"}`)}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ttl)
		got, err := s.Claim(ctx(t), "two", 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Claim: %v, %v", got, err)
		}
		fresh := got[0]
		before := get(t, s, "a1")
		state := running("a1", t0, "success-rate")
		state.Phase = api.PhaseFailed
		if err := s.SaveState(ctx(t), stale, state); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("stale SaveState: %v, want ErrLeaseLost", err)
		}
		m := store.Measurement{Metric: "success-rate", Index: 0, Measurement: api.Measurement{Phase: api.PhaseFailed, Value: "0.5"}}
		if added, err := s.AppendMeasurement(ctx(t), stale, m, &state); !errors.Is(err, store.ErrLeaseLost) || added {
			t.Errorf("stale AppendMeasurement: %v, %v, want ErrLeaseLost", added, err)
		}
		if err := s.MarkDelivered(ctx(t), stale, "a1.1"); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("stale MarkDelivered: %v, want ErrLeaseLost", err)
		}
		if err := s.Enqueue(ctx(t), stale, store.Delivery{WebhookID: "a1.2", Seq: 2, Event: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("stale Enqueue: %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx(t), stale); err != nil {
			t.Errorf("stale Release: %v", err)
		}
		after := get(t, s, "a1")
		if !reflect.DeepEqual(before, after) {
			t.Errorf("stale writes changed the analysis:\n%+v\n%+v", before, after)
		}
		if ms, err := s.Measurements(ctx(t), "a1", store.MeasurementRange{}); err != nil || len(ms) != 0 {
			t.Errorf("measurements after a stale append: %+v, %v", ms, err)
		}
		if owed, err := s.Owed(ctx(t), "a1"); err != nil || len(owed) != 1 || owed[0].WebhookID != "a1.1" {
			t.Errorf("owed after stale writes: %+v, %v", owed, err)
		}
		// The new owner writes.
		if err := s.SaveState(ctx(t), fresh, state); err != nil {
			t.Errorf("fresh SaveState: %v", err)
		}
		if err := s.SaveState(ctx(t), store.Lease{ID: "nope", Token: 1}, state); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SaveState of an unknown id: %v, want ErrNotFound", err)
		}
	})
}

// After its owner's lease expires, another replica adopts an analysis; the
// old owner learns it at its next renewal. A released lease is adopted at
// once.
func TestAdoption(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		create(t, s, store.NewAnalysis{ID: "a1", Owner: "one"})
		create(t, s, store.NewAnalysis{ID: "a2", Owner: "one"})
		clk.Advance(ttl / 2)
		held, err := s.Renew(ctx(t), "one")
		if err != nil || len(held) != 2 || !held[0].ExpiresAt.Equal(t0.Add(ttl/2+ttl)) {
			t.Fatalf("Renew: %+v, %v", held, err)
		}
		clk.Advance(ttl / 2)
		if got, _ := s.Claim(ctx(t), "two", 10); len(got) != 0 {
			t.Fatalf("renewed leases were claimed: %+v", got)
		}
		clk.Advance(ttl)
		got, err := s.Claim(ctx(t), "two", 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Claim after expiry: %+v, %v", got, err)
		}
		adopted := got[0].ID
		held, err = s.Renew(ctx(t), "one")
		if err != nil || len(held) != 1 || held[0].ID == adopted {
			t.Fatalf("the old owner renews %+v (%v); %s is no longer its", held, err, adopted)
		}
		// Handing over on SIGTERM: the lease expires now.
		if err := s.Release(ctx(t), held...); err != nil {
			t.Fatal(err)
		}
		got, err = s.Claim(ctx(t), "two", 10)
		if err != nil || len(got) != 1 || got[0].ID != held[0].ID {
			t.Fatalf("Claim after Release: %+v, %v", got, err)
		}
		if held, _ := s.Renew(ctx(t), "one"); len(held) != 0 {
			t.Fatalf("the old owner still holds %+v", held)
		}
		if held, _ := s.Renew(ctx(t), "two"); len(held) != 2 {
			t.Fatalf("the new owner holds %+v", held)
		}
	})
}

// A measurement taken again (same metric and index) is stored once, and
// its state with it.
func TestAppendMeasurementIdempotent(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1"})
		fin := t0.Add(time.Minute)
		m := store.Measurement{Metric: "success-rate", Index: 0, Measurement: api.Measurement{Phase: api.PhaseSuccessful, Value: "0.99", StartedAt: &t0, FinishedAt: &fin}}
		state := running("a1", t0, "success-rate")
		state.MetricResults[0].Count, state.MetricResults[0].Successful = 1, 1
		added, err := s.AppendMeasurement(ctx(t), l, m, &state)
		if err != nil || !added {
			t.Fatalf("first append: %v, %v", added, err)
		}
		v := get(t, s, "a1").Version
		again := state
		again.MetricResults = []api.MetricResult{state.MetricResults[0]}
		again.MetricResults[0].Count = 2 // a re-taken measurement counted twice: must not be stored
		m2 := m
		m2.Measurement.Value = "0.98"
		if added, err := s.AppendMeasurement(ctx(t), l, m2, &again); err != nil || added {
			t.Fatalf("second append of index 0: %v, %v", added, err)
		}
		a := get(t, s, "a1")
		if a.Version != v || a.State.MetricResults[0].Count != 1 {
			t.Fatalf("a duplicate changed the analysis: version %d (was %d), count %d", a.Version, v, a.State.MetricResults[0].Count)
		}
		m3 := m
		m3.Index = 1
		if added, err := s.AppendMeasurement(ctx(t), l, m3, nil); err != nil || !added {
			t.Fatalf("append of index 1: %v, %v", added, err)
		}
		ms, err := s.Measurements(ctx(t), "a1", store.MeasurementRange{})
		if err != nil || len(ms) != 2 || ms[0].Measurement.Value != "0.99" || ms[1].Index != 1 || !ms[0].Measurement.FinishedAt.Equal(fin) {
			t.Fatalf("measurements %+v, %v", ms, err)
		}
		if _, err := s.Measurements(ctx(t), "nope", store.MeasurementRange{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("measurements of an unknown id: %v", err)
		}
	})
}

// Deliveries: enqueued once per webhook id, owed in order until marked,
// and a completed analysis that owes some is claimed by a live replica.
func TestDeliveries(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1", Owner: "one", Webhook: &store.Webhook{URL: "https://hooks.example.com/ci", Events: []string{"measurement", "completed"}}})
		for _, seq := range []int64{2, 1, 3, 1} {
			d := store.Delivery{WebhookID: fmt.Sprint("a1.", seq), Seq: seq, Event: json.RawMessage(fmt.Sprintf(`{"type":"measurement","n":%d}`, seq))}
			if err := s.Enqueue(ctx(t), l, d); err != nil {
				t.Fatal(err)
			}
		}
		owed, err := s.Owed(ctx(t), "a1")
		if err != nil || len(owed) != 3 || owed[0].WebhookID != "a1.1" || owed[2].WebhookID != "a1.3" {
			t.Fatalf("owed %+v, %v", owed, err)
		}
		// The event is kept as it was sent, byte for byte: a receiver
		// that is sent it again (by the replica that adopts the
		// analysis) gets the body it was sent the first time, and the
		// same signature. Keys out of order, as canaryd's encoding
		// writes them, and no spaces.
		if got, want := string(owed[1].Event), `{"type":"measurement","n":2}`; got != want {
			t.Fatalf("event kept as %s, want %s as it was enqueued", got, want)
		}
		if err := s.MarkDelivered(ctx(t), l, "a1.1"); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkDelivered(ctx(t), l, "a1.1"); err != nil {
			t.Fatalf("marking twice: %v", err)
		}
		if err := s.MarkDelivered(ctx(t), l, "a1.9"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("marking a delivery never enqueued: %v", err)
		}
		done := running("a1", t0)
		done.Phase = api.PhaseSuccessful
		if err := s.SaveState(ctx(t), l, done); err != nil {
			t.Fatal(err)
		}
		if a := get(t, s, "a1"); a.DeliveriesOwed != 2 {
			t.Fatalf("%d deliveries owed, want 2", a.DeliveriesOwed)
		}
		// The owner dies: its completed analysis still owes two, and is
		// adopted for them; the webhook ids are the same.
		clk.Advance(ttl)
		got, err := s.Claim(ctx(t), "two", 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim of an analysis owing deliveries: %+v, %v", got, err)
		}
		owed, _ = s.Owed(ctx(t), "a1")
		if len(owed) != 2 || owed[0].WebhookID != "a1.2" {
			t.Fatalf("owed after adoption: %+v", owed)
		}
		for _, d := range owed {
			if err := s.MarkDelivered(ctx(t), got[0], d.WebhookID); err != nil {
				t.Fatal(err)
			}
		}
		if owed, err := s.Owed(ctx(t), "a1"); err != nil || len(owed) != 0 {
			t.Fatalf("owed after delivery: %+v, %v", owed, err)
		}
		clk.Advance(2 * ttl)
		if got, _ := s.Claim(ctx(t), "three", 10); len(got) != 0 {
			t.Fatalf("claimed an analysis with nothing left to do: %+v", got)
		}
	})
}

// Subscribers hear of every write of their analysis, coalesced, and
// nothing of others'.
func TestSubscribe(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1"})
		lo := create(t, s, store.NewAnalysis{ID: "other"})
		notes, cancel, err := s.Subscribe(ctx(t), "a1")
		if err != nil {
			t.Fatal(err)
		}
		state := running("a1", t0, "success-rate")
		if err := s.SaveState(ctx(t), lo, state); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveState(ctx(t), l, state); err != nil {
			t.Fatal(err)
		}
		want := get(t, s, "a1").Version
		wait := func() store.Notification {
			t.Helper()
			select {
			case n := <-notes:
				return n
			case <-time.After(20 * time.Second):
				t.Fatal("no notification")
			}
			return store.Notification{}
		}
		if n := wait(); n.ID != "a1" || n.Version != want {
			t.Fatalf("notification %+v, want a1 at version %d", n, want)
		}
		// Three writes the reader is slow to read: it gets the last one
		// (perhaps after an earlier).
		for range 3 {
			if err := s.SaveState(ctx(t), l, state); err != nil {
				t.Fatal(err)
			}
		}
		want = get(t, s, "a1").Version
		for n := wait(); n.Version != want; n = wait() {
			if n.ID != "a1" || n.Version > want {
				t.Fatalf("notification %+v", n)
			}
		}
		cancel()
		cancel()
		for range notes {
			// drained; closed by cancel
		}
	})
}

// The bound on subscriptions is kept.
func TestSubscribeBound(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.open(t, store.Options{MaxSubscribers: 3})
			var cancels []func()
			for i := range 3 {
				_, cancel, err := s.Subscribe(ctx(t), fmt.Sprint("a", i))
				if err != nil {
					t.Fatal(err)
				}
				cancels = append(cancels, cancel)
			}
			if _, _, err := s.Subscribe(ctx(t), "a9"); !errors.Is(err, store.ErrTooManySubscribers) {
				t.Fatalf("a fourth subscription: %v", err)
			}
			cancels[0]()
			_, cancel, err := s.Subscribe(ctx(t), "a9")
			if err != nil {
				t.Fatalf("after one ended: %v", err)
			}
			cancel()
		})
	}
}

// Retention deletes analyses completed before the time, with their
// measurements, and leaves the running ones.
func TestDeleteCompleted(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		for i := range 5 {
			id := fmt.Sprint("a", i)
			l := create(t, s, store.NewAnalysis{ID: id})
			if _, err := s.AppendMeasurement(ctx(t), l, store.Measurement{Metric: "m", Measurement: api.Measurement{Phase: api.PhaseSuccessful}}, nil); err != nil {
				t.Fatal(err)
			}
			if i < 4 {
				st := running(id, t0)
				done := t0.Add(time.Duration(i) * time.Hour)
				st.Phase, st.CompletedAt = api.PhaseSuccessful, &done
				if err := s.SaveState(ctx(t), l, st); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, err := s.DeleteCompleted(ctx(t), t0.Add(150*time.Minute))
		if err != nil || n != 3 {
			t.Fatalf("DeleteCompleted: %d, %v; want 3", n, err)
		}
		for i, gone := range []bool{true, true, true, false, false} {
			_, err := s.Get(ctx(t), fmt.Sprint("a", i))
			if gone != errors.Is(err, store.ErrNotFound) {
				t.Errorf("a%d: %v", i, err)
			}
		}
		if _, err := s.Measurements(ctx(t), "a0", store.MeasurementRange{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("measurements of a deleted analysis: %v", err)
		}
	})
}

// The memory store holds at most MaxAnalyses.
func TestMemoryBound(t *testing.T) {
	s := store.NewMemory(store.Options{MaxAnalyses: 2})
	defer s.Close()
	create(t, s, store.NewAnalysis{ID: "a"})
	create(t, s, store.NewAnalysis{ID: "b"})
	if _, err := s.Create(ctx(t), store.NewAnalysis{ID: "c", Owner: "x", State: running("c", t0)}); !errors.Is(err, store.ErrFull) {
		t.Fatalf("a third analysis: %v, want ErrFull", err)
	}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Measurements come a page at a time: one metric's or all, from an index.
func TestMeasurementRange(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1"})
		for _, metric := range []string{"latency", "errors"} {
			for i := range 5 {
				m := store.Measurement{Metric: metric, Index: i, Measurement: api.Measurement{Phase: api.PhaseSuccessful, Value: fmt.Sprint(i)}}
				if _, err := s.AppendMeasurement(ctx(t), l, m, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		keys := func(r store.MeasurementRange) []string {
			t.Helper()
			ms, err := s.Measurements(ctx(t), "a1", r)
			if err != nil {
				t.Fatalf("%+v: %v", r, err)
			}
			var out []string
			for _, m := range ms {
				out = append(out, fmt.Sprint(m.Metric, m.Index))
			}
			return out
		}
		for _, c := range []struct {
			r    store.MeasurementRange
			want []string
		}{
			{store.MeasurementRange{Limit: 3}, []string{"errors0", "errors1", "errors2"}},
			{store.MeasurementRange{Metric: "latency", From: 3}, []string{"latency3", "latency4"}},
			{store.MeasurementRange{From: 4}, []string{"errors4", "latency4"}},
			{store.MeasurementRange{Metric: "nope"}, nil},
		} {
			if got := keys(c.r); !slices.Equal(got, c.want) {
				t.Errorf("%+v: %v, want %v", c.r, got, c.want)
			}
		}
		var fe *store.FilterError
		if _, err := s.Measurements(ctx(t), "a1", store.MeasurementRange{Limit: store.MaxListLimit + 1}); !errors.As(err, &fe) || fe.Field != "limit" {
			t.Errorf("a page over the maximum: %v", err)
		}
	})
}

// A claim takes at most MaxListLimit analyses, however many it asks for.
func TestClaimBound(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		for i := range store.MaxListLimit + 5 {
			create(t, s, store.NewAnalysis{ID: fmt.Sprint("a", i), Owner: "dead"})
		}
		clk.Advance(ttl)
		got, err := s.Claim(ctx(t), "me", store.MaxListLimit+5)
		if err != nil || len(got) != store.MaxListLimit {
			t.Fatalf("Claim: %d leases, %v; want %d", len(got), err, store.MaxListLimit)
		}
		if got, err := s.Claim(ctx(t), "me", -1); err != nil || len(got) != 0 {
			t.Fatalf("Claim -1: %v, %v", got, err)
		}
	})
}

// A terminate request, made without the lease, reaches the lease holder
// through its next renewal, and a replica that claims the analysis.
func TestRequestTerminate(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		create(t, s, store.NewAnalysis{ID: "t1"})
		create(t, s, store.NewAnalysis{ID: "t2"})
		if err := s.RequestTerminate(ctx(t), "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RequestTerminate of no analysis: %v, want ErrNotFound", err)
		}
		if err := s.RequestTerminate(ctx(t), "t1"); err != nil {
			t.Fatal(err)
		}
		if !get(t, s, "t1").TerminateRequested || get(t, s, "t2").TerminateRequested {
			t.Error("Get does not say which analysis is to be terminated")
		}
		leases, err := s.Renew(ctx(t), "replica-a")
		if err != nil || len(leases) != 2 || !leases[0].Terminate || leases[1].Terminate {
			t.Fatalf("Renew: %+v, %v; want t1 to be terminated, t2 not", leases, err)
		}
		clk.Advance(2 * ttl)
		claimed, err := s.Claim(ctx(t), "replica-b", 10)
		if err != nil || len(claimed) != 2 || !claimed[0].Terminate || claimed[1].Terminate {
			t.Fatalf("Claim: %+v, %v; want t1 to be terminated, t2 not", claimed, err)
		}
		// Asking again, or once it completed, changes nothing.
		if err := s.RequestTerminate(ctx(t), "t1"); err != nil {
			t.Errorf("asked again: %v", err)
		}
	})
}
