package spec

import (
	"encoding/json"
	"fmt"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
)

// Providers finds the provider that builds a metric's source by the name of
// its provider object (a *provider.Registry). Compile asks it for the one
// provider each metric names.
type Providers interface {
	Lookup(name string) (provider.Provider, bool)
	Names() []string
}

// PrometheusFunc builds the measurement source of a metric's Prometheus
// configuration, with the metric result's metadata; problems carry paths
// relative to the metric ("provider.prometheus.address"). It is what
// PrometheusProvider adapts (the Prometheus provider's Source).
type PrometheusFunc func(m *PrometheusMetric) (analysis.Source, map[string]string, []api.FieldError)

// PrometheusProvider is the provider of provider.prometheus, whose
// configuration spec decodes (PrometheusMetric): it hands it to build.
func PrometheusProvider(build PrometheusFunc) provider.Provider {
	return provider.Func(func(config any) (analysis.Source, map[string]string, []api.FieldError) {
		m, ok := config.(*PrometheusMetric)
		if !ok {
			return nil, nil, []api.FieldError{{Field: "provider.prometheus", Message: fmt.Sprintf("prometheus configuration of type %T", config)}}
		}
		return build(m)
	})
}

// JudgeProvider is the provider of canaryd's provider.judge: it checks the
// judge's configuration (see validateJudge) and builds its source from two
// range queries made by prometheus, so that they reach only what the
// Prometheus provider allows (see compileJudge).
func JudgeProvider(prometheus provider.Provider) provider.Provider {
	return provider.Func(func(config any) (analysis.Source, map[string]string, []api.FieldError) {
		j, ok := config.(*JudgeMetric)
		if !ok {
			return nil, nil, []api.FieldError{{Field: "provider.judge", Message: fmt.Sprintf("judge configuration of type %T", config)}}
		}
		if errs := validateJudge("provider.judge", j); len(errs) > 0 {
			return nil, nil, errs
		}
		return compileJudge(j, prometheus)
	})
}

// Builtin returns a registry of the providers whose configuration spec
// decodes: prometheus, built by prometheus, and the judge over it. The
// service registers its other providers on it (cmd/canaryd).
func Builtin(prometheus PrometheusFunc) *provider.Registry {
	p := PrometheusProvider(prometheus)
	return provider.NewRegistry().
		Register("prometheus", p).
		Register("judge", JudgeProvider(p))
}

// config is the configuration of the provider named name, as Providers
// hands it over: typed for prometheus and judge, the JSON object for every
// other provider.
func (p *MetricProvider) config(name string) any {
	switch name {
	case "prometheus":
		return p.Prometheus
	case "judge":
		return p.Judge
	}
	for _, o := range p.raw() {
		if o.name == name {
			return o.raw
		}
	}
	return p.Plugin
}

// raw lists the providers whose configuration is kept as JSON, by their
// names in the metric (plugin aside: each of its entries is a provider).
func (p *MetricProvider) raw() []struct {
	name string
	raw  json.RawMessage
} {
	return []struct {
		name string
		raw  json.RawMessage
	}{
		{"kayenta", p.Kayenta}, {"web", p.Web}, {"datadog", p.Datadog}, {"wavefront", p.Wavefront},
		{"newRelic", p.NewRelic}, {"job", p.Job}, {"cloudWatch", p.CloudWatch}, {"graphite", p.Graphite},
		{"influxdb", p.Influxdb}, {"skywalking", p.SkyWalking},
	}
}
