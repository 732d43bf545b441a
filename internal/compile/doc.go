// Package compile takes a parsed analysis spec (internal/spec) to what the
// engine runs, an analysis.Plan: Compile resolves the document's arguments
// and validates it (both spec's steps), compiles each metric's conditions
// (internal/condition) and has the metric's provider build its source.
// Every problem of every step is returned at once, each as an
// api.FieldError with its path relative to the spec, and a plan only when
// there is none.
//
// Providers come from a registry keyed by the name of the metric's provider
// object (Providers, internal/provider); each is handed its configuration's
// JSON, arguments substituted, decodes and checks it, and reports its
// problems once, with their paths, so spec's Validate leaves a provider's
// fields alone. What compile needs besides from a provider it asks through
// the optional interfaces of internal/provider: the shape of a
// configuration alone, for a document that spec.Parse cannot decode
// (Decoder, ShapeProblems); the fields that are queries or expressions,
// for Resolve (Languages); the credentials a
// metric sends (Credentials); and a compared metric's scoring group,
// whether it is critical, and its default conditions (Judged, the
// judge's). Builtin registers canaryd's Prometheus provider and the judge
// over it, so that both of a judge's queries reach only what Prometheus
// may; the service registers the others on that registry (cmd/canaryd).
//
// What a service bounds is bounded here before it is spent (WithLimits,
// limits.Limits): the number of metrics, the length of every field and of the
// whole spec with its arguments substituted (checked by spec.Spec.Resolve
// from the lengths of the values, before anything is built), each
// condition's length and syntax tree, and a schedule that could not end
// within the longest analysis. The zero limits.Limits bound nothing, which is
// what the command line runs with. WithPrograms shares compiled conditions
// between the compilations of a service.
//
// The values of secret arguments (IsSecretArg, and those read from a
// secretKeyRef) and the credentials a metric sends (as its provider tells
// them: credential headers, passwords, client secrets) are kept out of everything
// a plan shows: the conditions quoted in its messages and the queries in
// its metadata read ***** in their place, and its sources' and conditions'
// errors, and the problems returned, have them replaced.
//
// The package does no I/O and runs nothing: the providers it is handed
// make the sources, and the engine (internal/analysis) runs the plan. It
// may import spec and the providers; neither spec nor anything below it
// imports compile, and compile imports nothing of the service
// (internal/server, cmd).
package compile
