// Package provider is the registry of metric providers: the one place where
// canaryd learns which names a metric's provider object may use
// (provider.prometheus, provider.judge, provider.web) and what builds the
// measurement source of each.
//
// A provider is one package and one registration. It owns its
// configuration (the metric's provider.<name> object, with the arguments
// substituted), its validation, reported as api.FieldErrors with paths
// relative to the metric ("provider.web.url"), and its source. The
// registration is a call to Register where the service assembles its
// providers (cmd/canaryd).
//
// This package only maps names to providers: it must not know any provider's
// configuration, speak HTTP or run anything.
package provider

import (
	"fmt"
	"slices"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// Provider builds the measurement source of one metric from its provider's
// configuration. config is what spec decodes for the provider: the typed
// configuration of the providers whose types spec holds (prometheus:
// *spec.PrometheusMetric, judge: *spec.JudgeMetric), and the raw JSON
// object (json.RawMessage) for every other provider, which decodes and
// validates it itself.
//
// Problems carry paths relative to the metric ("provider.web.url"); when
// there are any, the source is nil and nothing is ever sent. A provider is
// safe for concurrent use: it is called for every request that compiles a
// spec.
type Provider interface {
	Source(config any) (analysis.Source, map[string]string, []api.FieldError)
}

// Func adapts a function to Provider.
type Func func(config any) (analysis.Source, map[string]string, []api.FieldError)

// Source calls f.
func (f Func) Source(config any) (analysis.Source, map[string]string, []api.FieldError) {
	return f(config)
}

// Registry maps the name of a provider in a metric to the provider. It is
// filled before it is used, and only read after that, so it needs no lock.
type Registry struct {
	byName map[string]Provider
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]Provider{}} }

// Register adds the provider that runs metrics whose provider object has
// the key name. A name registered twice, an empty name or a nil provider is
// a programming error and panics.
func (r *Registry) Register(name string, p Provider) *Registry {
	switch {
	case name == "" || p == nil:
		panic("provider: Register needs a name and a provider")
	case r.byName[name] != nil:
		panic(fmt.Sprintf("provider: %q registered twice", name))
	}
	r.byName[name] = p
	return r
}

// Lookup returns the provider registered under name.
func (r *Registry) Lookup(name string) (Provider, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
