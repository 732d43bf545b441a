// Package server is canaryd's HTTP API: it turns requests into analyses run
// by internal/analysis and answers with their state, as JSON, as a live
// stream (NDJSON or server-sent events), or as one evaluated round.
//
// The surface is listed in one place, routes.go, and described for callers
// by openapi.yaml at the repository root, which the tests hold every
// response to. Every error is an RFC 9457 problem document
// (application/problem+json) with the list of field errors for bad input;
// bad input is always a 4xx and never leaves anything running.
//
// Named templates (TemplateStore, a *templates.Store) are run the same way:
// the template endpoints differ from the document endpoints only in where
// the spec comes from and how the arguments arrive (readTemplate). Gates
// run an analysis to its end and answer with the verdict as the status
// (gateStatus). The evaluate and gate endpoints answer within the caller's
// deadline (?timeout=, Request-Timeout), so that a caller with a timeout of
// its own reads canaryd's answer instead of timing out.
//
// Backtests (backtests.go) run a spec against history in virtual time and
// answer at once; nothing of them is kept. Their work is bounded before
// they run (window, starts, measurements: Limits) and while they run
// (analyses.AnalysesOptions.MaxBacktests at once; a shutdown stops them).
//
// The limits (Options.Limits, limits.Limits) bound what one caller can
// make the service do; each refusal is a 4xx or 429 naming its field and
// the flag that sets it. The bearer tokens (Tokens) can be replaced while
// serving, for a reloaded --auth-token-file.
//
// The analyses themselves are internal/analyses' (analyses.Analyses, the
// service): it holds them in memory and, with a store
// (analyses.AnalysesOptions.Store, a postgres --store), keeps each there
// as it runs, answers for an analysis another replica runs, resumes those
// of replicas that stopped, and hands the running ones over at shutdown.
// The handlers call it and answer what it returns; any replica answers a
// read, a stream or a DELETE of an analysis another runs from the store
// (stored.go). The process' lifecycle (draining on SIGTERM, the grace
// period, the terminal Error result of analyses that could not finish) is
// driven by the command through analyses.Analyses.Drain and
// analyses.Analyses.WaitWebhooks; this package never reads the
// environment, signals or flags, and never logs through a global logger.
//
// Webhooks: a request that asks for one (?webhook=URL, or the template
// body's webhook) has it checked against the allow list while it is
// validated, so that a refused webhook is a 400 before anything runs. The
// analysis then gets a webhook.Stream of its own, fed by the engine's
// observer (Send never blocks the run); the resource's webhook field is
// that stream's Status. An analysis with a webhook is not terminated when
// its waiting or streaming caller hangs up: the webhook is still owed its
// result. Gates and rounds send no webhook: their answer is the result.
//
// What it must not do: speak Prometheus or any other provider's protocol
// (sources are built by the providers it is given, compile.Providers), judge measurements (the engine does), or show an
// internal error's text to a client (it is logged with the request id).
package server
