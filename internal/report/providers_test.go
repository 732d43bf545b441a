package report_test

import (
	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// promAndJudge is a registry of the Prometheus provider, built by prom,
// and of the judge over it, as cmd/canaryd registers them.
func promAndJudge(prom prometheus.Func) *provider.Registry {
	return provider.NewRegistry().
		Register("prometheus", prom).
		Register("judge", judge.NewProvider(prom))
}

// buildsNothing stands in for a Prometheus provider's Source.
func buildsNothing(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return nil, nil, nil
}
