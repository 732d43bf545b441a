package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestStreamThatFallsBehindIsCutOff opens streams that read nothing while
// their analysis records large measurements every few milliseconds: each
// is cut off once it is a few events behind (nothing more is buffered for
// it), and when its reader comes back it reads what was sent, then a last
// cutoff event saying so, and the end; the analysis goes on.
func TestStreamThatFallsBehindIsCutOff(t *testing.T) {
	// Values as large as the engine keeps (analysis.MaxValueBytes), from
	// 20 metrics every 5 ms: the connection's buffers are full within a
	// second or so.
	big := strings.Repeat("9", analysis.MaxValueBytes)
	sources := func(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Value: []float64{1}, Display: big}
		}), nil, nil
	}
	s := start(t, options{sources: sources, streamBuffer: 4})
	var b strings.Builder
	b.WriteString("metrics:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "- {name: fast-%d, interval: 5ms, successCondition: 'result[0] >= 0.99', provider: {prometheus: {query: up}}}\n", i)
	}
	spec := b.String()
	for _, accept := range []string{"application/x-ndjson", "text/event-stream"} {
		a := s.do(http.MethodPost, "/v1/analyses", yamlType, spec).analysis(t)
		before := len(s.logs.FilterMessage("stream cut off: it fell behind its analysis").All())
		_, resp := s.openStream(context.Background(), http.MethodGet, "/v1/analyses/"+a.ID, "", "", accept)
		waitFor(t, "the stream to be cut off", func() bool {
			return len(s.logs.FilterMessage("stream cut off: it fell behind its analysis").All()) > before
		})
		events := newEventReader(t, resp).all()
		if len(events) < 2 {
			t.Fatalf("%s: %d events, want measurements and the cutoff", accept, len(events))
		}
		last := events[len(events)-1]
		if last.Type != "cutoff" || last.AnalysisID != a.ID {
			t.Errorf("%s: the last event is %s of %s, want cutoff of %s", accept, last.Type, last.AnalysisID, a.ID)
		}
		for _, ev := range events[:len(events)-1] {
			if ev.Type != api.EventMeasurement {
				t.Errorf("%s: a %s event before the cutoff, want measurements only", accept, ev.Type)
			}
		}
		if got := s.do(http.MethodGet, "/v1/analyses/"+a.ID, "", "").analysis(t); got.Phase != api.PhaseRunning {
			t.Errorf("%s: the analysis is %s after its stream was cut off, want Running", accept, got.Phase)
		}
		s.do(http.MethodDelete, "/v1/analyses/"+a.ID, "", "")
	}
}
