package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/store"
)

// step is a write of one measurement, index i of metric m, with the state
// it led to.
func step(id string, i int) store.Mutation {
	fin := t0.Add(time.Duration(i+1) * time.Second)
	state := running(id, t0, "m")
	state.MetricResults[0].Count = int32(i + 1)
	return store.Mutation{
		Measurements: []store.Measurement{{Metric: "m", Index: i, Measurement: api.Measurement{Phase: api.PhaseSuccessful, Value: "1", FinishedAt: &fin}}},
		State:        &state,
	}
}

// stored counts the measurements stored of id.
func stored(t *testing.T, s store.Store, id string) int {
	t.Helper()
	ms, err := s.Measurements(ctx(t), id, store.MeasurementRange{})
	if err != nil {
		t.Fatalf("Measurements of %s: %v", id, err)
	}
	return len(ms)
}

// TestCommitBatch: in one batch, the writes whose lease holds are written;
// one whose lease another replica took, one of an analysis that is gone
// and one no store can write each fail alone, and change nothing.
func TestCommitBatch(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		bc, ok := s.(store.BatchCommitter)
		switch {
		case k.name == "grouped":
			t.Skip("its batches are TestGroupCommit's")
		case !ok:
			t.Fatalf("%s is no BatchCommitter", k.name)
		}
		l1 := create(t, s, store.NewAnalysis{ID: "a1", Owner: "one"})
		l2 := create(t, s, store.NewAnalysis{ID: "a2", Owner: "gone"})
		l3 := create(t, s, store.NewAnalysis{ID: "a3", Owner: "one"})
		clk.Advance(2 * ttl)
		if _, err := s.Renew(ctx(t), "one"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Claim(ctx(t), "two", 10); err != nil || len(got) != 1 || got[0].ID != "a2" {
			t.Fatalf("Claim: %+v, %v; want a2 alone", got, err)
		}
		v2 := get(t, s, "a2").Version
		bad := step("a3", 1)
		bad.Owed = []store.Delivery{{WebhookID: "a3.1", Seq: 1, Event: json.RawMessage(`{`)}}
		errs, err := bc.CommitBatch(ctx(t), []store.Write{
			{Lease: l1, Mutation: step("a1", 0)},
			{Lease: l2, Mutation: step("a2", 0)},
			{Lease: l3, Mutation: step("a3", 0)},
			{Lease: store.Lease{ID: "nope", Token: 1}, Mutation: step("nope", 0)},
			{Lease: l3, Mutation: bad},
			{Lease: l1, Mutation: step("a1", 1)},
		})
		if err != nil || len(errs) != 6 {
			t.Fatalf("CommitBatch: %v, %v", errs, err)
		}
		if errs[0] != nil || errs[2] != nil || errs[5] != nil {
			t.Errorf("writes under leases that hold: %v, %v, %v; want nil", errs[0], errs[2], errs[5])
		}
		if !errors.Is(errs[1], store.ErrLeaseLost) || !errors.Is(errs[3], store.ErrNotFound) || errs[4] == nil {
			t.Errorf("lease lost: %v; no analysis: %v; not JSON: %v", errs[1], errs[3], errs[4])
		}
		if n1, n3 := stored(t, s, "a1"), stored(t, s, "a3"); n1 != 2 || n3 != 1 {
			t.Errorf("stored a1 %d, a3 %d; want 2 and 1", n1, n3)
		}
		if a := get(t, s, "a1"); a.State.MetricResults[0].Count != 2 {
			t.Errorf("a1's state counts %d, want the last write's 2", a.State.MetricResults[0].Count)
		}
		if a := get(t, s, "a2"); a.Version != v2 || a.Lease.Owner != "two" {
			t.Errorf("a2, its lease lost: version %d (was %d), owner %s", a.Version, v2, a.Lease.Owner)
		}
		if ms, err := s.Measurements(ctx(t), "a2", store.MeasurementRange{}); err != nil || len(ms) != 0 {
			t.Errorf("a2's measurements: %d, %v; want none", len(ms), err)
		}
	})
}

// grouped opens a postgres store on url as a replica runs it, metered on
// reg, its commits grouped by o.
func grouped(t *testing.T, url string, clk clock.Clock, reg *prometheus.Registry, o store.GroupOptions) store.Store {
	t.Helper()
	pg := openPostgres(t, url, store.Options{Clock: clk, LeaseTTL: ttl, Migrate: true})
	m, err := store.Metered(pg, store.MeteredOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return store.Grouped(m, o)
}

// commitAll commits one write per lease at once, each from a goroutine of
// its own, as the writers of a replica's analyses do, and returns each
// one's outcome.
func commitAll(s store.Store, leases []store.Lease, index int) []error {
	errs := make([]error, len(leases))
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs[i] = s.Commit(c, l, step(l.ID, index))
		}()
	}
	wg.Wait()
	return errs
}

// TestGroupCommit: the commits of many analyses at once share a few
// transactions; each writer learns its own write's outcome, and the one
// whose lease another replica took alone fails.
func TestGroupCommit(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	clk := clock.NewFake(t0)
	reg := prometheus.NewRegistry()
	// A batch holds 50 writes of two rows each; a batch that does not
	// fill waits a long interval, so that only a full one commits early.
	const writes, perBatch = 200, 50
	s := grouped(t, db.URL, clk, reg, store.GroupOptions{Interval: 5 * time.Second, MaxRows: 2 * perBatch})
	leases := make([]store.Lease, writes)
	for i := range leases {
		leases[i] = create(t, s, store.NewAnalysis{ID: fmt.Sprintf("g-%03d", i), Owner: "one"})
	}
	// Another replica takes g-007.
	const taken = 7
	clk.Advance(2 * ttl)
	if _, err := s.Renew(ctx(t), "one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx(t), leases[taken]); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Claim(ctx(t), "two", 10); err != nil || len(got) != 1 || got[0].ID != leases[taken].ID {
		t.Fatalf("Claim: %+v, %v", got, err)
	}

	errs := commitAll(s, leases, 0)
	for i, err := range errs {
		switch {
		case i == taken && !errors.Is(err, store.ErrLeaseLost):
			t.Errorf("the write whose lease was taken: %v, want ErrLeaseLost", err)
		case i != taken && err != nil:
			t.Errorf("write %d: %v", i, err)
		}
	}
	for i, l := range leases {
		if n := stored(t, s, l.ID); (i == taken) != (n == 0) || n > 1 {
			t.Errorf("%s: %d measurements stored", l.ID, n)
		}
	}
	batches := gathered(t, reg, "canaryd_store_operations_total", map[string]string{"op": "commit_batch", "outcome": "ok"})
	single := gathered(t, reg, "canaryd_store_operations_total", map[string]string{"op": "commit"})
	if batches < writes/perBatch || batches > writes/10 || single != 0 {
		t.Errorf("%d writes in %v transactions of group commit and %v alone; want from %d to %d, and none alone", writes, batches, single, writes/perBatch, writes/10)
	}
	if n := gathered(t, reg, "canaryd_store_batch_writes", nil); n != batches {
		t.Errorf("canaryd_store_batch_writes counts %v batches, want %v", n, batches)
	}
}

// TestGroupCommitFaults: a batch that PostgreSQL refuses for one write's
// sake commits the others on their own, and the write refused alone
// fails; a batch the store does not answer fails each write, retryable,
// and the same writes made again once it answers are each stored once.
func TestGroupCommitFaults(t *testing.T) {
	cluster := pgtest.Start(t)
	db := cluster.Database(t)
	clk := clock.NewFake(t0)
	reg := prometheus.NewRegistry()
	const writes = 10
	s := grouped(t, db.URL, clk, reg, store.GroupOptions{Interval: 5 * time.Second, MaxRows: 2 * writes})
	leases := make([]store.Lease, writes)
	for i := range leases {
		leases[i] = create(t, s, store.NewAnalysis{ID: fmt.Sprintf("f-%d", i), Owner: "one"})
	}
	// A fault: PostgreSQL refuses the measurement of f-3.
	admin := conn(t, db.URL)
	if _, err := admin.Exec(ctx(t), `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.analysis_id = 'f-3' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON canaryd_measurements FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	errs := commitAll(s, leases, 0)
	for i, err := range errs {
		if (i == 3) != (err != nil) || store.Retryable(err) {
			t.Errorf("write %d: %v; want an error for f-3 alone, not retryable", i, err)
		}
	}
	for i, l := range leases {
		if n := stored(t, s, l.ID); n != 1 && i != 3 {
			t.Errorf("%s: %d measurements stored, want 1", l.ID, n)
		}
	}
	if got := gathered(t, reg, "canaryd_store_operations_total", map[string]string{"op": "commit_batch", "outcome": "error"}); got != 1 {
		t.Errorf("%v batches refused, want 1", got)
	}
	if _, err := admin.Exec(ctx(t), "DROP TRIGGER refuse ON canaryd_measurements"); err != nil {
		t.Fatal(err)
	}
	_ = admin.Close(ctx(t))

	// The store stops: every write of the batch fails, to be tried again.
	cluster.Stop()
	for i, err := range commitAll(s, leases, 1) {
		if !store.Retryable(err) {
			t.Errorf("write %d with the store down: %v, want one to try again", i, err)
		}
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	// Tried again until the pool has reconnected: each is stored once.
	for try := 0; ; try++ {
		errs := commitAll(s, leases, 1)
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				if !store.Retryable(err) {
					t.Fatalf("after the restart: %v", err)
				}
			}
		}
		if failed == 0 {
			break
		}
		if try == 20 {
			t.Fatalf("after the restart, %d of %d writes still fail: %v", failed, writes, errs)
		}
	}
	for _, l := range leases {
		want := 2
		if l.ID == "f-3" {
			want = 1
		}
		if n := stored(t, s, l.ID); n != want {
			t.Errorf("%s: %d measurements stored, want %d", l.ID, n, want)
		}
		if a := get(t, s, l.ID); a.State.MetricResults[0].Count != 2 {
			t.Errorf("%s: its state counts %d, want 2", l.ID, a.State.MetricResults[0].Count)
		}
	}
}
