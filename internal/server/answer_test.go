package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// benchRound is a round as /v1/evaluate answers it for one Prometheus
// metric: one measurement, its resolved query in the metadata.
func benchRound() api.Analysis {
	started := time.Date(2026, 11, 29, 3, 30, 56, 290135931, time.UTC)
	completed := started.Add(520742 * time.Nanosecond)
	msStarted, msFinished := started.Add(741), started.Add(465910)
	return api.Analysis{ID: "buisvwfvaifh6euon6h7o4dtltnm37vhgr4", Phase: api.PhaseSuccessful, StartedAt: &started, CompletedAt: &completed,
		RunSummary: api.RunSummary{Count: 1, Successful: 1}, Kind: "round", Series: "nrzlcrts5pxzjqtlmsys",
		MetricResults: []api.MetricResult{{Name: "non-5xx-rate", Phase: api.PhaseSuccessful, Count: 1, Successful: 1, ConsecutiveSuccess: 1,
			Metadata:     map[string]string{"ResolvedPrometheusQuery": "sum(rate(istio_requests_total{reporter=\"destination\", destination_workload_namespace=\"echo-good\", response_code!~\"5..\"}[1m]))\n/\nsum(rate(istio_requests_total{reporter=\"destination\", destination_workload_namespace=\"echo-good\"}[1m]))\n"},
			Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, StartedAt: &msStarted, FinishedAt: &msFinished, Value: "[0.9993]"}}}},
	}
}

// headerSink is a ResponseWriter that keeps nothing but its headers, and
// flushes as net/http's own does.
type headerSink struct{ h http.Header }

func (s *headerSink) Flush() {}

func (s *headerSink) Header() http.Header         { return s.h }
func (s *headerSink) WriteHeader(int)             {}
func (s *headerSink) Write(b []byte) (int, error) { return len(b), nil }

func BenchmarkWriteRoundNow(b *testing.B) {
	a := benchRound()
	w := &headerSink{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		writeRoundNow(w, http.StatusOK, a, false)
	}
}

func BenchmarkAppendRound(b *testing.B) {
	a := benchRound()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = api.AppendRound(buf[:0], &a)
	}
}

func BenchmarkObserve(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(""))
	w := &headerSink{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		_ = newObserved(w, r)
	}
}

func BenchmarkRequestID(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(""))
	b.ReportAllocs()
	for b.Loop() {
		_ = requestID(r)
	}
}

func BenchmarkAbsoluteURL(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(""))
	b.ReportAllocs()
	for b.Loop() {
		_ = absoluteURL(r, "/v1/analyses/buisvwfvaifh6euon6h7o4dtltnm37vhgr4")
	}
}

// TestCodeLabel checks the label values of statuses, and that a request's
// costs no allocation.
func TestCodeLabel(t *testing.T) {
	for status, want := range map[int]string{200: "200", 503: "503", 429: "429", 418: otherLabel, 0: otherLabel, 2000: otherLabel} {
		if got := codeLabel(status); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", status, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = codeLabel(http.StatusOK) }); n != 0 {
		t.Errorf("codeLabel allocates %v times", n)
	}
}
