package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/store"
)

// TestMetered: every call is counted by operation and outcome, the
// analyses claimed are counted, and a call is bounded by the timeout.
func TestMetered(t *testing.T) {
	clk := clock.NewFake(t0)
	reg := prometheus.NewRegistry()
	s, err := store.Metered(store.NewMemory(store.Options{Clock: clk, LeaseTTL: ttl}), store.MeteredOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	create(t, s, store.NewAnalysis{ID: "a", Owner: "one"})
	if _, err := s.Get(ctx(t), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of no analysis: %v", err)
	}
	clk.Advance(2 * ttl)
	if got, err := s.Claim(ctx(t), "two", 10); err != nil || len(got) != 1 {
		t.Fatalf("Claim: %v, %v", got, err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"canaryd_store_claims_total", nil, 1},
		{"canaryd_store_operations_total", map[string]string{"op": "create", "outcome": "ok"}, 1},
		{"canaryd_store_operations_total", map[string]string{"op": "get", "outcome": "not_found"}, 1},
		{"canaryd_store_operations_total", map[string]string{"op": "claim", "outcome": "ok"}, 1},
		{"canaryd_store_operation_duration_seconds", map[string]string{"op": "claim"}, 1},
	} {
		if got := gathered(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// A call is bounded: one that does not answer is unavailable.
	slow, err := store.Metered(stuck{Store: store.NewMemory(store.Options{})}, store.MeteredOptions{Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.Ping(context.Background()); store.Outcome(err) != store.OutcomeUnavailable || !store.Retryable(err) {
		t.Errorf("Ping of a store that does not answer: %v (%s), want unavailable", err, store.Outcome(err))
	}
}

// TestOutcome classifies the errors of a store.
func TestOutcome(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                     store.OutcomeOK,
		store.ErrNotFound:                       store.OutcomeNotFound,
		fmt.Errorf("x: %w", store.ErrLeaseLost): store.OutcomeLeaseLost,
		fmt.Errorf("%w: get: refused", store.ErrUnavailable): store.OutcomeUnavailable,
		&store.FilterError{Field: "cursor"}:                  store.OutcomeRefused,
		&store.SecretError{Field: "spec"}:                    store.OutcomeRefused,
		store.ErrExists:                                      store.OutcomeRefused,
		errors.New("something else"):                         store.OutcomeError,
	} {
		if got := store.Outcome(err); got != want {
			t.Errorf("Outcome(%v) = %s, want %s", err, got, want)
		}
	}
}

// gathered is the value of the series of name with labels (a histogram's
// count), 0 when there is none.
func gathered(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// stuck is a store whose Ping waits for its context.
type stuck struct{ store.Store }

func (stuck) Ping(ctx context.Context) error {
	<-ctx.Done()
	return fmt.Errorf("%w: ping: %w", store.ErrUnavailable, ctx.Err())
}

// TestShared: postgres is shared by the replicas on it, memory is this
// process' alone, and the wrappers say what the store they wrap is.
func TestShared(t *testing.T) {
	each(t, func(t *testing.T, k kind, _ *clock.Fake, s store.Store) {
		// The memory and metered kinds are memory stores; the others
		// postgres, metered and grouped.
		if got, want := store.Shared(s), k.persistent; got != want {
			t.Errorf("Shared(%s) = %v, want %v", k.name, got, want)
		}
	})
	g := store.Grouped(store.NewMemory(store.Options{}), store.GroupOptions{})
	if store.Shared(g) {
		t.Error("Shared(Grouped(memory)) = true, want false")
	}
	if !store.Shared(store.NewMemory(store.Options{Shared: true})) {
		t.Error("Shared(memory shared) = false, want true")
	}
}
