// Package provider is the registry of metric providers: the one place where
// canaryd learns which names a metric's provider object may use
// (provider.prometheus, provider.judge, provider.web) and what builds the
// measurement source of each.
//
// A provider is one package and one registration. It owns its
// configuration type (the metric's provider.<name> object, with the
// arguments substituted, which it decodes with spec.DecodeStrict), its
// validation, reported as api.FieldErrors with paths relative to the
// metric ("provider.web.url"), and its source. What else it may tell is an
// optional interface: the shape of its configuration alone (Decoder), the
// credentials a configuration carries (Credentials), and
// a compared metric's scoring group and default conditions (Judged). The
// registration is a call to Register where the service assembles its
// providers (cmd/canaryd).
//
// This package only maps names to providers: it must not know any provider's
// configuration, speak HTTP or run anything.
package provider

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/spec"
)

// Provider builds the measurement source of one metric from its provider's
// configuration: the metric's provider.<name> object as JSON, arguments
// substituted, which the provider decodes (spec.DecodeStrict) and checks
// itself. Languages declares which of its fields are written in a query or
// an expression language, into which an argument's value goes escaped or
// as a plain literal (see spec.Resolve); every other field is a value,
// into which an argument goes as it is. Each provider must say: PromQL's
// rules, or none, are never assumed.
//
// Problems carry paths relative to the metric ("provider.web.url"); when
// there are any, the source is nil and nothing is ever sent. A provider is
// safe for concurrent use: it is called for every request that compiles a
// spec.
type Provider interface {
	Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError)
	// Languages maps the paths of the configuration's query and
	// expression fields, relative to it ("query", "rangeQuery.start"),
	// to their language (promql.Language, condition.Expr). A query
	// field's length is bounded by --max-query-length. An empty map
	// declares that every field is a value.
	Languages() map[string]lang.Language
	// CredentialFields declares the fields of the configuration that may
	// hold a credential, which are masked wherever the configuration is
	// shown (Mask); nil when none can.
	CredentialFields() []CredentialField
	// Report declares what the report of an analysis shows of a metric
	// with the resolved configuration config beyond its measurements
	// (its queries, a link, a request); the zero Report for nothing more,
	// or for a configuration that does not decode.
	Report(config json.RawMessage, o ReportOptions) Report
}

// Func adapts a function to Provider, for a provider whose fields are
// all values (it declares no language).
type Func func(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError)

// Source calls f.
func (f Func) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	return f(config)
}

// Languages: every field of a Func's configuration is a value.
func (Func) Languages() map[string]lang.Language { return map[string]lang.Language{} }

// CredentialFields: a Func's configuration holds no credential.
func (Func) CredentialFields() []CredentialField { return nil }

// Report: the report shows a Func's measurements only.
func (Func) Report(json.RawMessage, ReportOptions) Report { return Report{} }

// What a provider may tell besides, each an optional interface that
// internal/compile asks for.

// Decoder is implemented by a provider that checks a configuration's
// shape alone, before its arguments are substituted: its unknown fields
// and values of the wrong type (spec.DecodeStrict), on their paths. They
// are listed with the problems of a document that spec.Parse cannot
// decode, which is then compiled no further.
type Decoder interface {
	Decode(config json.RawMessage) []api.FieldError
}

// Credentials is implemented by a provider whose configuration can carry
// credentials: they are kept out of everything an analysis shows, and a
// store keeps the document that holds them sealed.
type Credentials interface {
	// Credentials lists the credentials config holds (a credential
	// header's value, a password, a client secret), the empty ones left
	// out; nil for a configuration that does not decode.
	Credentials(config json.RawMessage) []string
}

// Judged is implemented by a provider whose metrics compare a canary with
// a baseline, as canaryd's judge does: they are scored in a group, may be
// critical, and have conditions of their own when they set none.
type Judged interface {
	// Scored tells config's scoring group and whether it is critical
	// (spec.Scored, its Path the configuration's); the zero Scored for a
	// configuration that does not decode.
	Scored(config json.RawMessage) spec.Scored
	// DefaultConditions are the success and failure conditions of a
	// metric with configuration config that sets neither.
	DefaultConditions(config json.RawMessage) (success, failure string)
}

// Present is implemented by a provider some of whose metrics can be
// measured only as of now: its backend answers with what holds when it
// is asked (a web endpoint), and cannot be asked for a past instant.
// `canaryd backtest`, which measures each metric as of past instants,
// refuses such a metric before it starts, naming it. A provider that does
// not implement it measures as of the instant its source is given.
type Present interface {
	// PresentOnly says why the metric with the resolved configuration
	// config cannot be measured as of a past instant, "" when it can.
	PresentOnly(config json.RawMessage) string
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
