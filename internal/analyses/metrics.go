package analyses

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/internal/promreg"
)

// analysisMetrics are the metrics of Analyses.
type analysisMetrics struct {
	started      prometheus.Counter
	finished     *prometheus.CounterVec
	running      prometheus.Gauge
	measurements *prometheus.CounterVec
	evaluations  *prometheus.CounterVec
	// roundsNotKept counts the rounds answered but not kept: none held
	// could be evicted for them (kept.go).
	roundsNotKept prometheus.Counter
	// leaseLosses counts the runs stopped here because another replica
	// claimed their lease (persist.go); nil without a store.
	leaseLosses prometheus.Counter
}

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
		measurements: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_measurements_total",
			Help: "Measurements taken by analyses and evaluated rounds, by phase.",
		}, []string{"phase"}),
		evaluations: f.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_evaluations_total",
			Help: "Rounds evaluated by POST /v1/evaluate, by phase.",
		}, []string{"phase"}),
		roundsNotKept: f.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_rounds_not_kept_total",
			Help: "Rounds answered but not kept: the results held were at --max-finished or --max-retained-bytes, none older than --min-retention.",
		}),
	}
	if err := registerErr(registered()); err != nil {
		return nil, err
	}
	return m, nil
}

// registerErr is a failure to register the service's metrics, as an
// error of the package; nil for none.
func registerErr(err error) error {
	if err != nil {
		return fmt.Errorf("analyses: registering metrics: %w", err)
	}
	return nil
}
