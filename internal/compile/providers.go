package compile

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"

	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
)

// Providers finds the provider that builds a metric's source by the name of
// its provider object (a *provider.Registry). Compile asks it for the one
// provider each metric names, and for what the providers tell besides
// (provider.Credentials, provider.Judged).
type Providers interface {
	Lookup(name string) (provider.Provider, bool)
	Names() []string
}

// languages gathers the fields that the providers declare written in a
// query or an expression language (Provider.Languages), by their paths
// relative to the metric ("provider.prometheus.query").
func languages(providers Providers) map[string]spec.Language {
	out := map[string]spec.Language{}
	for _, name := range providers.Names() {
		p, _ := providers.Lookup(name)
		for field, lang := range p.Languages() {
			out["provider."+name+"."+field] = lang
		}
	}
	return out
}

// lookup returns the provider of the one provider m names, and its
// configuration; nil when m names none or several (Validate says so) or
// when none is registered under its name.
func lookup(m *spec.Metric, providers Providers) (name string, p provider.Provider, config json.RawMessage) {
	names := m.Provider.Names()
	if len(names) != 1 {
		return "", nil, nil
	}
	p, _ = providers.Lookup(names[0])
	return names[0], p, m.Provider.Config(names[0])
}

// scored tells what scoring needs of each metric, from its provider
// (provider.Judged).
func scored(providers Providers) func(m *spec.Metric) spec.Scored {
	return func(m *spec.Metric) spec.Scored {
		if _, p, config := lookup(m, providers); p != nil {
			if j, ok := p.(provider.Judged); ok {
				return j.Scored(config)
			}
		}
		return spec.Scored{}
	}
}

// credentials are the credentials a resolved metric sends, as its provider
// tells them (provider.Credentials).
func credentials(m *spec.Metric, providers Providers) []string {
	if _, p, config := lookup(m, providers); p != nil {
		if c, ok := p.(provider.Credentials); ok {
			return c.Credentials(config)
		}
	}
	return nil
}

// holdsCredentials reports whether a resolved spec's metrics carry
// credentials, as their providers tell them.
func holdsCredentials(s *spec.Spec, providers Providers) bool {
	for i := range s.Metrics {
		if len(credentials(&s.Metrics[i], providers)) > 0 {
			return true
		}
	}
	return false
}

// ShapeProblems are the problems of the providers' configurations in in,
// a document that spec.ParseInput could not decode, as it read it: the unknown fields and
// wrong types that each provider finds (provider.Decoder), each on its
// path relative to the spec, to be listed with the document's others.
func ShapeProblems(in *spec.Input, providers Providers) []api.FieldError {
	configs := in.ProviderConfigs()
	var out []api.FieldError
	for _, path := range slices.Sorted(maps.Keys(configs)) {
		name := path[strings.LastIndexByte(path, '.')+1:]
		p, _ := providers.Lookup(name)
		if d, ok := p.(provider.Decoder); ok {
			for _, e := range d.Decode(configs[path]) {
				// The provider's paths are relative to the metric.
				e.Field = path[:strings.Index(path, ".provider.")+1] + e.Field
				out = append(out, e)
			}
		}
	}
	return out
}
