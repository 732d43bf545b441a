package analyses

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promreg"
)

// analysisMetrics are the metrics of Analyses.
type analysisMetrics struct {
	started      prometheus.Counter
	finished     *prometheus.CounterVec
	running      prometheus.Gauge
	measurements phaseCounter
	evaluations  phaseCounter
	// roundsNotKept counts the rounds answered but not kept: none held
	// could be evicted for them (kept.go).
	roundsNotKept prometheus.Counter
	// leaseLosses counts the runs stopped here because another replica
	// claimed their lease (durable.Keeper); nil without a store.
	leaseLosses prometheus.Counter
	// lateness and late measure how long after they were due the
	// measurements of the analyses started (analysis.Options.Lateness);
	// observeLateness is given to every run, made once.
	lateness        prometheus.Histogram
	late            prometheus.Counter
	observeLateness func(time.Duration)
}

// LateAfter is how late a measurement must start, after it was due, to
// count in canaryd_measurements_late_total: far beyond a scheduler that
// keeps up (well under 100 ms), well within an interval.
const LateAfter = time.Second

// latenessBuckets are canaryd_measurement_lateness_seconds' buckets, from
// 100 µs (on time) to a minute (an interval missed).
var latenessBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newAnalysisMetrics(reg prometheus.Registerer) (*analysisMetrics, error) {
	f, registered := promreg.With(reg)
	m := &analysisMetrics{
		started: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_analyses_started_total",
			Help: "Analyses started.",
		}),
		finished: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_analyses_finished_total",
			Help: "Analyses finished, by phase (Successful, Failed, Inconclusive, Error).",
		}, []string{"phase"}),
		running: f.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_analyses_running",
			Help: "Analyses running now.",
		}),
		measurements: phaseCounter{vec: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_measurements_total",
			Help: "Measurements taken by analyses and evaluated rounds, by phase.",
		}, []string{"phase"})},
		evaluations: phaseCounter{vec: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_evaluations_total",
			Help: "Rounds evaluated by POST /v1/evaluate, by phase.",
		}, []string{"phase"})},
		roundsNotKept: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_rounds_not_kept_total",
			Help: "Rounds answered but not kept: the results held were at --max-finished or --max-retained-bytes, none older than --min-retention.",
		}),
		lateness: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "canaryd_measurement_lateness_seconds",
			Help:    "Time from when an analysis' measurement was due to when its query was sent.",
			Buckets: latenessBuckets,
		}),
		late: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_measurements_late_total",
			Help: "Measurements of analyses that started more than 1 s after they were due: the workers (--workers) did not keep up.",
		}),
	}
	m.observeLateness = func(d time.Duration) {
		m.lateness.Observe(d.Seconds())
		if d > LateAfter {
			m.late.Inc()
		}
	}
	if err := registerErr(registered()); err != nil {
		return nil, err
	}
	return m, nil
}

// phaseCounter is a counter by phase whose series are found once each,
// as the phase is first counted, rather than hashed out of the vector at
// every measurement and round. A phase outside counterPhases, which the
// engine never gives a measurement or a round, is found at every count.
type phaseCounter struct {
	vec    *prometheus.CounterVec
	series [len(counterPhases)]atomic.Pointer[prometheus.Counter]
}

// counterPhases are the phases a measurement or a round ends with.
var counterPhases = [...]api.Phase{api.PhaseSuccessful, api.PhaseFailed, api.PhaseInconclusive, api.PhaseError}

// inc counts one of phase.
func (c *phaseCounter) inc(phase api.Phase) {
	i := slices.Index(counterPhases[:], phase)
	if i < 0 {
		c.vec.WithLabelValues(string(phase)).Inc()
		return
	}
	s := c.series[i].Load()
	if s == nil {
		counter := c.vec.WithLabelValues(string(phase))
		s = &counter
		c.series[i].Store(s)
	}
	(*s).Inc()
}

// registerErr is a failure to register the service's metrics, as an
// error of the package; nil for none.
func registerErr(err error) error {
	if err != nil {
		return fmt.Errorf("analyses: registering metrics: %w", err)
	}
	return nil
}
