package durable

import (
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// TestUnsavedMeasurementsBounded: while the store takes no writes, a run
// keeps at most MaxUnsavedMeasurements measurements to write, the newest,
// and counts those it let go.
func TestUnsavedMeasurementsBounded(t *testing.T) {
	w := newWriter(&Keeper{}, store.Lease{ID: "a", Token: 1}, zap.NewNop())
	const over = 500
	for i := range MaxUnsavedMeasurements + over {
		ms := api.Measurement{Phase: api.PhaseSuccessful, Value: strconv.Itoa(i)}
		if !w.Observe(api.Event{Type: api.EventMeasurement, Metric: "m", Measurement: &ms}) {
			t.Fatalf("measurement %d refused", i)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) != MaxUnsavedMeasurements || w.dropped != over {
		t.Fatalf("%d kept and %d dropped, want %d and %d", len(w.pending), w.dropped, MaxUnsavedMeasurements, over)
	}
	first, last := w.pending[0], w.pending[len(w.pending)-1]
	if first.Index != over || first.Measurement.Value != strconv.Itoa(over) || last.Index != MaxUnsavedMeasurements+over-1 {
		t.Fatalf("kept measurements %d (%s) to %d, want the newest: %d to %d", first.Index, first.Measurement.Value, last.Index, over, MaxUnsavedMeasurements+over-1)
	}
	// Their indexes go on from the last taken: a write of them later
	// lands each at its own place.
	if w.counts["m"] != MaxUnsavedMeasurements+over {
		t.Fatalf("next index %d, want %d", w.counts["m"], MaxUnsavedMeasurements+over)
	}
}
