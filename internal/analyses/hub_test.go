package analyses

import (
	"testing"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
)

// TestHubSharesEachEvent checks that an event is encoded once for every
// stream (each receives the same bytes), that nothing is encoded for an
// analysis no stream follows, that a full stream is cut off rather than
// waited for or grown, and that the completed event ends every stream.
func TestHubSharesEachEvent(t *testing.T) {
	h := NewHub(2, nil, zap.NewNop(), "id")
	running := func() api.Analysis { return api.Analysis{ID: "x", Phase: api.PhaseRunning} }
	ms := &api.Measurement{Phase: api.PhaseSuccessful, Value: "1"}
	h.Publish(api.Event{Type: api.EventMeasurement, AnalysisID: "x", Metric: "m", Measurement: ms})

	_, a, cancelA := h.Subscribe(running)
	defer cancelA()
	_, b, cancelB := h.Subscribe(running)
	defer cancelB()
	h.Publish(api.Event{Type: api.EventMeasurement, AnalysisID: "x", Metric: "m", Measurement: ms})
	ea, eb := <-a.ch, <-b.ch
	if ea != eb || &ea.data[0] != &eb.data[0] {
		t.Error("two streams got the event encoded twice, want the same bytes")
	}
	if ea.ordinal != 2 || ea.metric != "m" {
		t.Errorf("the event is measurement %d of %q, want 2 of m", ea.ordinal, ea.metric)
	}

	// b reads nothing more: the third event fills it, the fourth cuts it
	// off; a reads on.
	for range 3 {
		h.Publish(api.Event{Type: api.EventMeasurement, AnalysisID: "x", Metric: "m", Measurement: ms})
		<-a.ch
	}
	n := 0
	for range b.ch {
		n++
	}
	if n != 2 || !h.CutOff(b) {
		t.Errorf("the stream that stopped reading: %d events buffered, cut off %v; want 2, cut off", n, h.CutOff(b))
	}
	if h.CutOff(a) {
		t.Error("the stream that reads was cut off")
	}

	final := api.Analysis{ID: "x", Phase: api.PhaseSuccessful}
	h.Publish(api.Event{Type: api.EventCompleted, AnalysisID: "x", Analysis: &final})
	if e := <-a.ch; e.typ != api.EventCompleted {
		t.Errorf("got %s, want the completed event", e.typ)
	}
	if _, open := <-a.ch; open || h.CutOff(a) {
		t.Error("the stream is not ended by the completed event")
	}
	if _, s, _ := h.Subscribe(running); s != nil {
		t.Error("a subscription after the completed event, want none")
	}
}

// TestSeen checks that a stream skips the events the snapshot it started
// from already shows, and only those.
func TestSeen(t *testing.T) {
	snap := api.Analysis{MetricResults: []api.MetricResult{{Name: "m", Count: 2, Error: 1}}}
	for _, tc := range []struct {
		e    Event
		want bool
	}{
		{Event{typ: api.EventMeasurement, metric: "m", ordinal: 3}, true},
		{Event{typ: api.EventMeasurement, metric: "m", ordinal: 4}, false},
		{Event{typ: api.EventMeasurement, metric: "other", ordinal: 1}, false},
		{Event{typ: api.EventCompleted}, false},
	} {
		if got := tc.e.SeenIn(&snap); got != tc.want {
			t.Errorf("SeenIn(%+v) = %v, want %v", tc.e, got, tc.want)
		}
	}
}
