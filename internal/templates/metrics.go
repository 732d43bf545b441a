package templates

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's own metrics.
type metrics struct {
	loaded     prometheus.Gauge
	broken     prometheus.Gauge
	loadErrors *prometheus.CounterVec
	reloads    prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_templates_loaded",
			Help: "Named templates being served, stale ones (the last good version of a broken file) included.",
		}),
		broken: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "canaryd_template_files_broken",
			Help: "Template files whose current content does not load or holds a name that an earlier file has; alert on this rather than on the counter.",
		}),
		loadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "canaryd_template_load_errors_total",
			Help: "Loads of a template file's new content that failed, and names found taken by an earlier file, by file.",
		}, []string{"file"}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "canaryd_templates_reloads_total",
			Help: "Reloads of the templates directory that found a change (a file added, changed or removed).",
		}),
	}
}

// register registers the metrics on reg; nil registers nothing.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{m.loaded, m.broken, m.loadErrors, m.reloads} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("templates metrics: %w (one Store per registerer)", err)
			}
			return fmt.Errorf("templates metrics: %w", err)
		}
	}
	return nil
}
