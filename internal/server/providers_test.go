package server

import (
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// PromAndJudge is a registry of the Prometheus provider, built by prom,
// and of the judge over it, as cmd/canaryd registers them.
func PromAndJudge(prom prometheus.Func) *provider.Registry {
	return provider.NewRegistry().
		Register("prometheus", prom).
		Register("judge", judge.NewProvider(prom))
}
