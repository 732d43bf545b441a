package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/store"
)

// TestCommit: one step's events owed, measurements, state and events done
// are written together; the same commit again writes nothing twice; a
// commit under a lost lease, or one a store cannot write, writes nothing.
func TestCommit(t *testing.T) {
	each(t, func(t *testing.T, k kind, clk *clock.Fake, s store.Store) {
		l := create(t, s, store.NewAnalysis{ID: "a1", Owner: "one", Webhook: &store.Webhook{URL: "https://hooks.example.com/ci", Events: []string{"measurement", "completed"}}})
		fin := t0.Add(time.Minute)
		state := running("a1", t0, "success-rate")
		state.MetricResults[0].Count, state.MetricResults[0].Successful = 2, 2
		step := store.Mutation{
			Owed: []store.Delivery{
				{WebhookID: "a1.1", Seq: 1, Event: json.RawMessage(`{"type":"measurement","n":1}`)},
				{WebhookID: "a1.2", Seq: 2, Event: json.RawMessage(`{"type":"measurement","n":2}`)},
			},
			Measurements: []store.Measurement{
				{Metric: "success-rate", Index: 0, Measurement: api.Measurement{Phase: api.PhaseSuccessful, Value: "0.99", FinishedAt: &fin}},
				{Metric: "success-rate", Index: 1, Measurement: api.Measurement{Phase: api.PhaseSuccessful, Value: "0.98", FinishedAt: &fin}},
			},
			State: &state,
		}
		for range 2 {
			if err := s.Commit(ctx(t), l, step); err != nil {
				t.Fatalf("Commit: %v", err)
			}
		}
		a := get(t, s, "a1")
		ms, err := s.Measurements(ctx(t), "a1", store.MeasurementRange{})
		if err != nil || len(ms) != 2 || a.DeliveriesOwed != 2 || a.State.MetricResults[0].Count != 2 {
			t.Fatalf("after the commit, twice: %d measurements (%v), %d deliveries owed, count %d; want 2, 2, 2",
				len(ms), err, a.DeliveriesOwed, a.State.MetricResults[0].Count)
		}

		// The events done, with one never recorded, and the end.
		done := state
		done.Phase = api.PhaseSuccessful
		if err := s.Commit(ctx(t), l, store.Mutation{Delivered: []string{"a1.1", "a1.9", "a1.1"}, State: &done}); err != nil {
			t.Fatalf("Commit of the events done: %v", err)
		}
		owed, err := s.Owed(ctx(t), "a1")
		if a := get(t, s, "a1"); err != nil || len(owed) != 1 || owed[0].WebhookID != "a1.2" || a.DeliveriesOwed != 1 || a.Phase != api.PhaseSuccessful || a.CompletedAt == nil {
			t.Fatalf("owed %+v (%v), %d owed, phase %s; want a1.2 alone, Successful", owed, err, a.DeliveriesOwed, a.Phase)
		}

		// A commit a store cannot write writes nothing.
		v := get(t, s, "a1").Version
		bad := store.Mutation{Owed: []store.Delivery{{WebhookID: "a1.3", Seq: 3, Event: json.RawMessage(`{`)}}, State: &state}
		if err := s.Commit(ctx(t), l, bad); err == nil {
			t.Fatal("Commit of an event that is not JSON: no error")
		}
		if a := get(t, s, "a1"); a.Version != v || a.Phase != api.PhaseSuccessful {
			t.Fatalf("a commit refused changed the analysis: version %d (was %d), phase %s", a.Version, v, a.Phase)
		}
		// Another replica claims it: the old lease writes nothing.
		clk.Advance(2 * ttl)
		if got, err := s.Claim(ctx(t), "two", 10); err != nil || len(got) != 1 {
			t.Fatalf("Claim: %+v, %v", got, err)
		}
		v = get(t, s, "a1").Version
		if err := s.Commit(ctx(t), l, store.Mutation{Delivered: []string{"a1.2"}}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("Commit under a lost lease: %v, want ErrLeaseLost", err)
		}
		if a := get(t, s, "a1"); a.Version != v || a.DeliveriesOwed != 1 || a.Phase != api.PhaseSuccessful {
			t.Fatalf("a refused commit changed the analysis: version %d (was %d), %d owed, phase %s", a.Version, v, a.DeliveriesOwed, a.Phase)
		}
	})
}
