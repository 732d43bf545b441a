// Package argo proves canaryd against Argo Rollouts' own code: its tests
// run Argo's web metric provider (metricproviders/webmetric, and through it
// utils/evaluate) as the analysis controller would, on the AnalysisTemplate
// and Rollout shipped in deploy/examples/argo, against the real canaryd
// binary and a real Prometheus.
//
// Its other tests run Argo v1.10.0's own metric providers beside
// canaryd's, each measuring the same template against the same recorded
// backend answers, and hold canaryd to Argo's phase, value and message:
// CloudWatch (cloudwatch_test.go, on cloudwatchtest's answers), and
// Datadog v1 and v2, InfluxDB, Graphite and New Relic on every recorded
// answer of canaryd's own tests of each (internal/provider/NAME/testdata,
// each file served with the status its name starts with, error_401.json
// with 401, or 200), served by one loopback stand-in at an address of its
// own. Argo's providers are built as its controller builds them: Datadog,
// InfluxDB and New Relic read their Secret from a fake clientset in the
// controller's namespace (the same Secrets canaryd reads from
// --credentials-dir), InfluxDB's and New Relic's with the clients Argo
// uses (influxdb-client-go, newrelic-client-go, whose retries of a failed
// NerdGraph request take seconds: an Error Argo gives before the
// conditions are read is asked of it once per answer); Graphite's from
// the template's address. Where canaryd differs on purpose, the test names
// the row of docs/differences.md and holds canaryd to it instead; a
// difference no row names fails.
//
// BenchmarkArgoMeasure measures one measurement of one value by Argo's
// InfluxDB and New Relic providers, on their official clients, beside
// canaryd's, against the same stand-in (docs/performance.md).
//
// Only the provider and the condition evaluation are Argo's code here; the
// scheduling of measurements (interval, count, limits) is the controller's,
// which needs a Kubernetes API server. What the controller does between a
// template and a provider call (merging the Rollout's args into the
// template's, reading the Secret, substituting {{args.*}}) is done the way
// the controller does it, with Argo's own template resolver.
package argo
