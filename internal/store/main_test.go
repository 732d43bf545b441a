package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/store"
)

func TestMain(m *testing.M) {
	pgtest.VerifyTestMain(m)
}

// t0 is the fake clock's start in every test.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ttl is the leases' length in the tests.
const ttl = 30 * time.Second

// kind is one implementation under test.
type kind struct {
	name string
	// persistent stores keep secrets only sealed.
	persistent bool
	open       func(t *testing.T, opts store.Options) store.Store
}

// kinds are the implementations the behavioural suite runs on: memory, and
// postgres on a database of the test's own in the shared cluster.
var kinds = []kind{
	{name: "memory", open: func(t *testing.T, opts store.Options) store.Store {
		s := store.NewMemory(opts)
		t.Cleanup(s.Close)
		return s
	}},
	// The memory store as a service runs it: wrapped (Metered), which
	// must change nothing of what it answers.
	{name: "metered", open: func(t *testing.T, opts store.Options) store.Store {
		s, err := store.Metered(store.NewMemory(opts), store.MeteredOptions{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}},
	{name: "postgres", persistent: true, open: func(t *testing.T, opts store.Options) store.Store {
		db := pgtest.Shared(t).Database(t)
		opts.Migrate = true
		return openPostgres(t, db.URL, opts)
	}},
	// Postgres as a replica runs it: metered, its commits grouped
	// (Grouped), which must change nothing of what it answers either.
	{name: "grouped", persistent: true, open: func(t *testing.T, opts store.Options) store.Store {
		db := pgtest.Shared(t).Database(t)
		opts.Migrate = true
		m, err := store.Metered(openPostgres(t, db.URL, opts), store.MeteredOptions{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		return store.Grouped(m, store.GroupOptions{Interval: time.Millisecond})
	}},
}

func openPostgres(t *testing.T, url string, opts store.Options) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenPostgres(ctx, url, opts)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// each runs test on every implementation, with a fake clock.
func each(t *testing.T, test func(t *testing.T, k kind, clk *clock.Fake, s store.Store)) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			test(t, k, clk, k.open(t, store.Options{Clock: clk, LeaseTTL: ttl, SecretKey: nil}))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// running is a running analysis' first state, started at at.
func running(id string, at time.Time, metrics ...string) api.Analysis {
	a := api.Analysis{ID: id, Phase: api.PhaseRunning, StartedAt: &at, MetricResults: []api.MetricResult{}}
	for _, m := range metrics {
		a.MetricResults = append(a.MetricResults, api.MetricResult{Name: m, Phase: api.PhaseRunning, Measurements: []api.Measurement{}})
	}
	return a
}

func create(t *testing.T, s store.Store, n store.NewAnalysis) store.Lease {
	t.Helper()
	if n.Owner == "" {
		n.Owner = "replica-a"
	}
	if n.State.ID == "" {
		n.State = running(n.ID, t0, "success-rate")
	}
	l, err := s.Create(ctx(t), n)
	if err != nil {
		t.Fatalf("Create %s: %v", n.ID, err)
	}
	return l
}

func get(t *testing.T, s store.Store, id string) *store.Analysis {
	t.Helper()
	a, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return a
}
