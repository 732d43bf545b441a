package analyses

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
)

// TestPhaseCounterCountsEachPhase checks that the counters by phase count
// what the vector would, each phase in its own series, a phase outside
// the usual four included, and that a count of a phase already counted
// allocates nothing.
func TestPhaseCounterCountsEachPhase(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := phaseCounter{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "counted_total", Help: "h"}, []string{"phase"})}
	reg.MustRegister(c.vec)
	for _, p := range []api.Phase{api.PhaseSuccessful, api.PhaseSuccessful, api.PhaseFailed, api.PhaseError, api.PhaseRunning} {
		c.inc(p)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.inc(api.PhaseInconclusive) }); allocs != 0 {
		t.Errorf("a count allocates %v times, want 0", allocs)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	// AllocsPerRun runs its function once more than it is told.
	want := map[string]float64{"Successful": 2, "Failed": 1, "Error": 1, "Running": 1, "Inconclusive": 101}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for phase, n := range want {
		if got[phase] != n {
			t.Errorf("%s: counted %v, want %v", phase, got[phase], n)
		}
	}
}
