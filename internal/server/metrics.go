package server

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/internal/promreg"
)

// httpMetrics are the metrics of the HTTP layer. Routes are chi's patterns
// (/v1/analyses/{id}), never raw paths, so that ids do not explode the
// label space; unmatched requests share one label.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series holds the children of requests and duration by their label
	// values, found once (httpMetrics.of): every label has a fixed set of
	// values, so it holds at most one entry per route, method and code.
	series   sync.Map // requestLabels → *requestSeries
	inFlight prometheus.Gauge
	// decodesWaiting are the request bodies waiting for a decode slot.
	decodesWaiting prometheus.Gauge
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	f, registered := promreg.With(reg)
	m := &httpMetrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "canaryd_http_request_duration_seconds",
			Help: "Time from request to the end of the response, by route pattern, method and status code; streams and ?wait=true last as long as their analysis.",
			// Up to an hour: waits and streams last as long as analyses.
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"route", "method", "code"}),
		inFlight: f.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_http_requests_in_flight",
			Help: "HTTP requests being answered now, streams and waits included.",
		}),
		decodesWaiting: f.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_decodes_waiting",
			Help: "Request bodies waiting for one of the limits.MaxDecodes decode slots (at most limits.MaxDecodeWaiters).",
		}),
	}
	if err := registerErr(registered()); err != nil {
		return nil, err
	}
	return m, nil
}

// requestLabels are the label values of a request's series.
type requestLabels struct{ route, method, code string }

// requestSeries are a request's series of requests and duration.
type requestSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// of returns the series of a request with these labels, looked up in the
// vectors on its first request only.
func (m *httpMetrics) of(l requestLabels) *requestSeries {
	if s, ok := m.series.Load(l); ok {
		return s.(*requestSeries)
	}
	s := &requestSeries{requests: m.requests.WithLabelValues(l.route, l.method, l.code),
		duration: m.duration.WithLabelValues(l.route, l.method, l.code)}
	m.series.Store(l, s)
	return s
}

// RegisterBuildInfo registers canaryd_build_info{version, revision,
// goversion}, always 1, as every Prometheus-ecosystem binary exports its
// build: `count by (version) (canaryd_build_info)` shows a rollout's
// progress, and a join on it labels any series with the version.
func RegisterBuildInfo(reg prometheus.Registerer, version, revision string) error {
	f, registered := promreg.With(reg)
	f.NewGauge(prometheus.GaugeOpts{
		Name: "canaryd_build_info",
		Help: "A metric with a constant '1' value labelled by the version and revision canaryd was built from, and the Go release that built it.",
		ConstLabels: prometheus.Labels{
			"version":   version,
			"revision":  revision,
			"goversion": runtime.Version(),
		},
	}).Set(1)
	return registerErr(registered())
}

// registerErr is a failure to register the server's metrics, as an error
// of the package; nil for none.
func registerErr(err error) error {
	if err != nil {
		return fmt.Errorf("server: registering metrics: %w", err)
	}
	return nil
}
