// Package prometheus runs the queries of Argo Rollouts' Prometheus metric
// provider (`provider.prometheus`) against the Prometheus-compatible servers
// (Prometheus, Thanos, Mimir, Cortex) that canaryd's configuration allows,
// and turns their answers into analysis.Observations exactly as Argo
// Rollouts does: a scalar becomes a float64, a vector or a flattened matrix a
// []float64, and the measurement's value is written the way Argo writes it.
//
// A metric's provider.prometheus is Metric, Argo's PrometheusMetric (its
// address, query, headers, authentication, timeout, insecure, rangeQuery),
// decoded from the metric's JSON by Decode (spec.DecodeStrict). Func, the
// form of Provider.Source that builds a decoded Metric, is the
// provider.Provider of provider.prometheus; it tells which fields are
// PromQL (query) and expr (rangeQuery.start and end), and the credentials
// a configuration sends (Credentials).
//
// The configuration, not the caller's spec, decides where queries go. A
// metric's address must name one of the configured datasources, and an
// OAuth2 token URL must be on the configured allow-list; anything else is
// rejected when the metric is validated, so no request ever leaves for it.
// Redirects are followed only within the datasource's own origin.
//
// A datasource is reached through Prometheus' own HTTP client
// (prometheus/common/config.HTTPClientConfig: credentials, TLS with files
// reloaded, OAuth2, proxy_url), optionally signed with AWS SigV4
// (prometheus/sigv4), with canaryd's own bounds around it: its dial
// (at most maxConnsPerHost connections a host), the response limits, the
// redirect policy and the scrubbing of credentials from errors
// (datasource.go builds that chain).
//
// What this package must not do:
//   - send a request anywhere the configuration does not allow, or use
//     proxies from the environment (HTTP_PROXY and friends are ignored, and
//     proxy_from_environment refused: an allow-list of addresses means
//     nothing if a proxy decides the route; a datasource's proxy_url is
//     the configuration's own);
//   - take AWS credentials, or a role to assume, from a template: a
//     metric's authentication.sigv4 only asks for what the datasource's
//     configuration already does;
//   - put a credential (bearer token, password, client secret, access token,
//     URL userinfo) into an error, a message, a metric label or a log line;
//   - build an HTTP transport per measurement: transports belong to a
//     datasource and are shared by every metric that queries it;
//   - read a response differently from client_golang, Argo's client: the
//     fast decoder (decodeFast) only reads what client_golang reads the
//     same way (FuzzDecodeFast holds it to that), and hands everything
//     else, errors and fallbacks included, to client_golang itself;
//   - know about schedules, conditions or phases: that is the engine's work
//     (internal/analysis); this package only measures.
package prometheus
