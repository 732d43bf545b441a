// Package newrelic runs Argo Rollouts' New Relic metric provider
// (`provider.newRelic`, v1.10): one NRQL query per measurement through
// NerdGraph, New Relic's GraphQL API, whose answer becomes the metric's
// result as Argo makes it.
//
// Configuration, with Argo's field names (see Metric): query, a NRQL
// query; timeout, the query's timeout in seconds (5 by default), which New
// Relic applies; and profile, the Secret of the credentials. It is decoded
// strictly (spec.DecodeStrict) and checked when the metric is compiled,
// each problem on its field. query is declared in the language NRQL, so
// that an argument's value cannot break out of a string or add a clause.
//
// Credentials are Argo's: the keys personal-api-key and account-id, and
// optionally region (us, eu; us by default) or base-url-nerdgraph, of the
// Secret the metric names in profile (newrelic when it names none), read
// from --credentials-dir (internal/credentials); base-url-rest, which
// Argo's client keeps for New Relic's REST API, is not used. They are
// read when the metric is compiled (a missing file is a problem naming
// it) and for every measurement, within the directory's MaxAge, so that a
// rotated Secret applies without a restart. The query is sent as Argo's
// client sends it: POST to NerdGraph, the key in the header Api-Key, the
// GraphQL query of Argo's provider with the account, the query and the
// timeout as its variables. As Argo's, the metric's result has the query
// as its metadata, ResolvedNewRelicQuery, which the report lists.
//
// The answer is read as Argo reads it:
//   - one row of results is the result itself (result.count), several the
//     list of them (result[0].count); the measurement's value is the
//     result as JSON (`{"count":10}`);
//   - no row, or one row without values, is an Error, "no results
//     returned from NRQL query";
//   - errors in the answer are an Error with their messages, joined;
//     deprecation warnings are ignored;
//   - a status other than 2xx is an Error with the client's message
//     ("503 response returned: …", 401's invalid credentials, 404's
//     "resource not found"); a body that does not decode, one with
//     JSON's message.
//
// Where canaryd differs from Argo Rollouts (docs/differences.md):
//   - one request per measurement: Argo's client retries a failed request
//     (429, 500, 502 and over, a transport error, a NerdGraph timeout) up
//     to three times, backing off, within the measurement; canaryd's
//     measurement is an Error, which the analysis measures again as Argo
//     does after an Error (10s later, up to consecutiveErrorLimit);
//   - the configuration's problems (an empty query, a negative timeout, a
//     profile that is no Secret's name) are refused when the metric is
//     compiled, rather than found at the first measurement;
//   - no redirect is followed: one would take the key elsewhere.
//
// A backtest cannot measure a New Relic metric: a NRQL query's window is
// New Relic's present (PresentOnly), and `canaryd backtest` says so up
// front, naming the metric.
//
// The client is a small one on internal/outbound rather than New Relic's
// newrelic-client-go/v2, which the module proxy serves (Argo's provider
// uses it) but which cannot hold canaryd's bounds: it reads every answer
// whole, retries a NerdGraph error up to three times with a time.Sleep
// between attempts (1, 2 and 4 s) that no context ends, gives each attempt
// 30s of its own, logs requests and answers (at trace level) through its
// own logger, and sends with http.DefaultTransport, proxies from the
// environment and all (internal/http/client.go, Client.innerDo and
// NewClient). It also costs twice canaryd's: one measurement of one value
// takes 265 allocations and 23.0 KB against canaryd's 130 and 11.8 KB on
// the same stand-in (BenchmarkArgoMeasure in test/argo,
// docs/performance.md), where canaryd's costs what a Prometheus query does
// (83 allocations, 6.6 KB, BenchmarkMeasureOneValue). Written here, every
// request keeps canaryd's bounds. What this package must not do:
//   - send a request anywhere but the NerdGraph of the credentials: the
//     template never names one, and no redirect is followed; proxies from
//     the environment are not used (outbound.NewTransport);
//   - spend without a bound: each request has 30s (Argo's client's),
//     capped by --max-query-timeout; an answer is read up to
//     limits.ResponseBytesPerValue for each value of --max-result-values
//     (MaxResponseBytes at most), refused at the first byte over; an
//     answer of more values than --max-result-values is an Error;
//     connections are capped at MaxConnsPerHost;
//   - put the key in an error, a message, a log line, an answer or the
//     store: errors name the Secret's file, never a value, an error answer
//     quoted has the key scrubbed, and a configuration holds no credential
//     (CredentialFields is empty).
package newrelic
