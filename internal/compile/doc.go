// Package compile takes a parsed analysis spec (internal/spec) to what the
// engine runs, an analysis.Plan: Compile resolves the document's arguments
// and validates it (both spec's steps), compiles each metric's conditions
// (internal/condition) and has the metric's provider build its source.
// Every problem of every step is returned at once, each as an
// api.FieldError with its path relative to the spec, and a plan only when
// there is none.
//
// Providers come from a registry keyed by the name of the metric's provider
// object (Providers, internal/provider); each checks its own configuration
// and reports its problems once, with their paths, so spec's Validate
// leaves a provider's fields alone (a Prometheus address is checked by the
// Prometheus provider). Prometheus' and the judge's configurations are
// decoded by spec; Builtin registers their providers here, the judge's over
// the Prometheus provider so that both of its queries reach only what
// Prometheus may. Every other provider is handed its JSON, arguments
// substituted.
//
// What a service bounds is bounded here before it is spent (Limits,
// WithLimits): the number of metrics, the length of every field and of the
// whole spec with its arguments substituted (checked by spec.Spec.Resolve
// from the lengths of the values, before anything is built), each
// condition's length and syntax tree, and a schedule that could not end
// within the longest analysis. The zero Limits bound nothing, which is
// what the command line runs with. WithPrograms shares compiled conditions
// between the compilations of a service.
//
// The values of secret arguments (IsSecretArg, and those read from a
// secretKeyRef) and the credentials a metric sends (IsCredentialHeader,
// basic auth passwords, OAuth2 client secrets) are kept out of everything
// a plan shows: the conditions quoted in its messages and the queries in
// its metadata read ***** in their place, and its sources' and conditions'
// errors, and the problems returned, have them replaced.
//
// The package does no I/O and runs nothing: the providers it is handed
// make the sources, and the engine (internal/analysis) runs the plan. It
// may import spec; neither spec nor anything below it imports compile, and
// compile imports nothing of the service (internal/server, cmd).
package compile
