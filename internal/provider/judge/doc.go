// Package judge is the provider of canaryd's judge metrics
// (`provider.judge`): each measurement range-queries a canary query and a
// baseline query over the same window and compares the two samples with
// internal/judge, Kayenta's NetflixACAJudge.
//
// Its configuration is Metric (with Control and EffectSize), decoded from
// the metric's JSON by Decode (spec.DecodeStrict) and checked by
// Metric.Validate, which the Provider calls; the rules that need the spec
// (critical and group only with scoring) are spec's, from what
// Provider.Scored tells. The Provider also declares canary and baseline
// PromQL, the credentials of the connection fields, and the default
// conditions (DefaultSuccessCondition, DefaultFailureCondition).
//
// A Source does not speak to Prometheus itself. It is built from two
// analysis.Sources that the Prometheus provider made (see
// internal/provider/prometheus), one range query per side, so that both go
// through the configured datasources with their allow-lists, credentials,
// shared transports, timeouts and scrubbing of secrets, exactly as a
// `provider.prometheus` range query does. The Provider builds them with the
// Prometheus provider it is registered over (NewProvider, compile.Builtin),
// so every caller that can run a Prometheus metric can run a judge metric.
//
// # The window
//
// A measurement at instant at compares
//
//   - the canary query over [at − lookback, at], and
//   - the baseline query over the same window, or, for a control, the
//     canary query over [at − offset − lookback, at − offset],
//
// each evaluated every step. The instant is the engine's, so a backtest
// compares the windows of its own past instants. The points of every series
// a query returns are pooled into one sample per side.
//
// # The result
//
// Observation.Value, the `result` of the conditions, is a map (see Value):
// classification, reason, pValue, estimate, confidenceInterval [lo, hi],
// effectSize, meanRatio, critical, warnings, and canary and baseline
// {n, mean, median, min, max, stdDev, nan, outliers}. Numbers that could not
// be computed are nil, not NaN, so that JSON and conditions can hold them.
// Observation.Display is one line: `High (p=3.1e-21, shift=+29.7,
// ratio=1.30)`. The measurement's metadata carries the classification, the
// critical flag, the reason, the judge's warnings, the two windows and the
// queries' Prometheus warnings. An Error classification (±Inf in a sample)
// makes the measurement an Error with the judge's reason as its message.
//
// The package does no I/O of its own and keeps no state between
// measurements: Measure may be called from any goroutine.
package judge
