// Package spec reads the analysis specs that canaryd runs: Argo Rollouts
// AnalysisTemplate, ClusterAnalysisTemplate and AnalysisRun documents,
// posted unchanged, and bare specs with the same fields.
//
// canaryd's extensions that Argo Rollouts cannot run, the judge provider
// (provider.judge, whose configuration is internal/provider/judge's),
// scoring (see Scoring) and an argument's freeText (see Argument), are for
// bare specs and canaryd templates: documents of apiVersion
// canaryd.io/v1alpha1 and kind AnalysisTemplate or ClusterAnalysisTemplate, which are Argo's
// documents with the extensions allowed. In an argoproj.io/v1alpha1
// document they are errors: Argo Rollouts would refuse a judge metric and
// drop the scoring, so the document would not mean the same to both.
// (noData is accepted everywhere: without it Argo runs the metric with its
// own behaviour, which is canaryd's default too.)
//
// A spec goes through three steps, each of which reports every problem it
// finds as an api.FieldError whose Field is a path relative to the spec
// ("metrics[0].failureLimit", "args[1].valueFrom"):
//
//   - Parse decodes JSON or YAML into a Document. It is strict where
//     encoding/json is lenient: unknown fields, duplicate keys and values of
//     the wrong type are errors, all of them at once, each with its path.
//     Kubernetes noise (metadata.managedFields, an AnalysisRun's status, …)
//     is accepted and ignored so that `kubectl get -o yaml` output can be
//     posted as it is. YAML is bounded before it is parsed: an input whose
//     bytes could hold more than a few times MaxYAMLNodes nodes is refused
//     unparsed; any other is parsed once, by go.yaml.in/yaml/v3, into its
//     tree of nodes, where its nodes are counted and its anchors and
//     aliases refused before anything expands them, and from which its
//     JSON, its lines and its comments come (see readYAML). ParseInput
//     keeps what was read, so that nothing after Parse reads the input
//     again: the problems of all three steps are located in it, each
//     field's JSON Pointer (Input.Locate) and line (Input.Line,
//     PointerLine).
//   - Spec.Resolve substitutes `{{args.NAME}}` into every string field of
//     every metric, as Argo Rollouts does, with caller-supplied overrides;
//     but since any caller may supply them, a value cannot change the
//     structure of a query or a condition: it is escaped inside a string
//     literal and must be a plain literal elsewhere, unless the argument is
//     marked freeText (canaryd's extension) or an Argo document is resolved
//     with ResolveOptions.VerbatimArgs. ResolveOptions bound the resolved
//     text, per field and in all, before it is built, and say which
//     arguments are secret: their values are not quoted in problems, and
//     the Resolution's Display has them masked.
//   - Spec.Validate applies Argo Rollouts' rules, with Argo's messages, and a
//     few stricter rules of canaryd's own where Argo silently runs something
//     the user cannot have meant. A provider's configuration is left to the
//     provider, so that each problem is reported once: spec keeps each one
//     as its JSON (MetricProvider) and the provider decodes it with
//     DecodeStrict, which checks it as Parse checks a document, and then
//     applies its own rules. Scoring's rules need a metric's group and
//     whether it is critical, which its provider tells (Scored).
//
// spec only reads documents: it compiles no condition, builds no source and
// knows no provider but by the names and configurations a metric holds
// (MetricProvider.Names, MetricProvider.Config); which of a provider's
// fields are queries or expressions, and in which language (lang.Language),
// is the provider's to say (ResolveOptions.Languages), and the conditions'
// language is internal/condition's (ResolveOptions.Conditions): spec holds
// no language's lexer. It imports no provider and not
// internal/judge. internal/compile takes a
// document through the three steps and on to what the engine runs. The
// package must not do I/O beyond decoding the bytes it is given, speak
// HTTP, read Kubernetes or run anything.
package spec
