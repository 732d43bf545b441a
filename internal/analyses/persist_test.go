package analyses

import (
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/store"
)

// TestUnsavedMeasurementsBounded: while the store takes no writes, a run
// keeps at most maxUnsavedMeasurements measurements to write, the newest,
// and counts those it let go.
func TestUnsavedMeasurementsBounded(t *testing.T) {
	p := newPersister(&Analyses{}, store.Lease{ID: "a", Token: 1}, zap.NewNop())
	const over = 500
	for i := range maxUnsavedMeasurements + over {
		ms := api.Measurement{Phase: api.PhaseSuccessful, Value: strconv.Itoa(i)}
		if !p.observe(api.Event{Type: api.EventMeasurement, Metric: "m", Measurement: &ms}) {
			t.Fatalf("measurement %d refused", i)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) != maxUnsavedMeasurements || p.dropped != over {
		t.Fatalf("%d kept and %d dropped, want %d and %d", len(p.pending), p.dropped, maxUnsavedMeasurements, over)
	}
	first, last := p.pending[0], p.pending[len(p.pending)-1]
	if first.Index != over || first.Measurement.Value != strconv.Itoa(over) || last.Index != maxUnsavedMeasurements+over-1 {
		t.Fatalf("kept measurements %d (%s) to %d, want the newest: %d to %d", first.Index, first.Measurement.Value, last.Index, over, maxUnsavedMeasurements+over-1)
	}
	// Their indexes go on from the last taken: a write of them later
	// lands each at its own place.
	if p.counts["m"] != maxUnsavedMeasurements+over {
		t.Fatalf("next index %d, want %d", p.counts["m"], maxUnsavedMeasurements+over)
	}
}
