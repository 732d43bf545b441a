package report

import (
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// Source is what the report shows of how a metric was measured, beyond
// its result, as its provider declares it (provider.Report): the queries
// in its metadata, a link to the backend's view of a measurement, and the
// request to run by hand. It holds no credential.
type Source = provider.Report

// Providers finds a metric's provider by the name of its provider object
// (a *provider.Registry, or compile.Providers).
type Providers interface {
	Lookup(name string) (provider.Provider, bool)
}

// SourcesOf reads the Sources of a resolved spec's metrics, by metric
// name, from their providers' declarations. datasource gives the base URL
// a metric's address is queried at ("" when it is not known); args are
// the argument values the spec was resolved with, whose secret ones
// (redact.IsSecretName) are kept out of what is shown. Nil without
// providers.
func SourcesOf(s *spec.Spec, args map[string]string, providers Providers, datasource func(address string) string) map[string]Source {
	if s == nil || providers == nil {
		return nil
	}
	var secrets []string
	for name, v := range args {
		if redact.IsSecretName(name) && len(v) > 0 {
			secrets = append(secrets, v)
		}
	}
	out := map[string]Source{}
	for i := range s.Metrics {
		m := &s.Metrics[i]
		names := m.Provider.Names()
		if len(names) != 1 {
			continue
		}
		if p, ok := providers.Lookup(names[0]); ok {
			out[m.Name] = p.Report(m.Provider.Config(names[0]), provider.ReportOptions{Datasource: datasource, Secrets: secrets})
		}
	}
	return out
}
