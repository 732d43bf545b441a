package compile

import (
	"fmt"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
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
type PrometheusFunc func(m *spec.PrometheusMetric) (analysis.Source, map[string]string, []api.FieldError)

// PrometheusProvider is the provider of provider.prometheus, whose
// configuration spec decodes (spec.PrometheusMetric): it hands it to build.
func PrometheusProvider(build PrometheusFunc) provider.Provider {
	return provider.Func(func(config any) (analysis.Source, map[string]string, []api.FieldError) {
		m, ok := config.(*spec.PrometheusMetric)
		if !ok {
			return nil, nil, []api.FieldError{{Field: "provider.prometheus", Message: fmt.Sprintf("prometheus configuration of type %T", config)}}
		}
		return build(m)
	})
}

// JudgeProvider is the provider of canaryd's provider.judge: it checks the
// judge's configuration (spec.JudgeMetric.Validate) and builds its source
// from two range queries made by prometheus, so that they reach only what the
// Prometheus provider allows (see compileJudge).
func JudgeProvider(prometheus provider.Provider) provider.Provider {
	return provider.Func(func(config any) (analysis.Source, map[string]string, []api.FieldError) {
		j, ok := config.(*spec.JudgeMetric)
		if !ok {
			return nil, nil, []api.FieldError{{Field: "provider.judge", Message: fmt.Sprintf("judge configuration of type %T", config)}}
		}
		if errs := j.Validate("provider.judge"); len(errs) > 0 {
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
