// Package argo proves canaryd against Argo Rollouts' own code: its tests
// run Argo's web metric provider (metricproviders/webmetric, and through it
// utils/evaluate) as the analysis controller would, on the AnalysisTemplate
// and Rollout shipped in deploy/examples/argo, against the real canaryd
// binary and a real Prometheus.
//
// Only the provider and the condition evaluation are Argo's code here; the
// scheduling of measurements (interval, count, limits) is the controller's,
// which needs a Kubernetes API server. What the controller does between a
// template and a provider call (merging the Rollout's args into the
// template's, reading the Secret, substituting {{args.*}}) is done the way
// the controller does it, with Argo's own template resolver.
package argo
