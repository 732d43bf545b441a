// Package datadog runs Argo Rollouts' Datadog metric provider
// (`provider.datadog`, v1.10): one request per measurement to Datadog's
// metrics query API, whose answer becomes the metric's result as Argo
// makes it.
//
// Configuration, with Argo's field names (see Metric): query and interval
// (the window queried, 5m by default) for v1, GET /api/v1/query; queries,
// formula, aggregator (last by default) and apiVersion: v2 for v2, POST
// /api/v2/query/scalar; requestTimeout (10s by default) and secretRef. It
// is decoded strictly (spec.DecodeStrict) and checked with Argo's rules
// when the metric is compiled, each problem on its field. query, each of
// queries and formula are declared in the languages Query and Formula, so
// that an argument's value cannot break out of a tag value or change a
// query or a formula.
//
// Credentials are Argo's: the keys api-key and app-key, and optionally
// address (https://api.datadoghq.com by default), of the Secret the metric
// names in secretRef.name, read from --credentials-dir
// (internal/credentials); with no name, DD_API_KEY, DD_APP_KEY and
// DD_ADDRESS when all three are set, else the Secret named datadog. They
// are read when the metric is compiled (a missing file is a problem naming
// it) and for every measurement, within the directory's MaxAge, so that a
// rotated Secret applies without a restart. They are sent as the headers
// DD-API-KEY and DD-APPLICATION-KEY.
//
// The answer is read as Argo reads it:
//   - a transport error, a status other than 200 (401 and 403 as an
//     authentication error), a body that is not of Argo's shape, or v2's
//     data.errors, is an Error measurement with Argo's message; an error
//     status quotes the start of the body, as Argo quotes all of it;
//   - v1: the result is the value of the last point of the first series, a
//     float64; no series, or a first series without points, is no data;
//     a last point that is not [time, value] is an Error;
//   - v2: the result is the first value of the first column, a float64;
//     no column, no value or a null first value is no data;
//   - no data is a nil *float64, which conditions see as nil, so that
//     default(result, 0) and isNil(result) decide it, and any other use is
//     Argo v1.10's "metric result is nil or empty" Error; the measurement's
//     value is then the empty answer as Argo writes it ("[]", "[null]").
//
// Where canaryd differs from Argo Rollouts:
//   - a v1 point whose value is null is no data; Argo reads it as 0, a
//     value Datadog never measured;
//   - the configuration's problems (an interval or requestTimeout that is
//     not a duration, an unknown apiVersion or aggregator) are refused when
//     the metric is compiled, rather than found at the first measurement;
//   - no redirect is followed: one would take the keys elsewhere;
//   - secretRef.namespaced changes nothing: canaryd has no namespaces.
//
// The client is a small one on internal/outbound rather than DataDog's
// datadog-api-client-go/v2, which the module proxy serves but which is a
// client generated for the whole of Datadog's API, for two requests; Argo's
// own provider does not use it either, but net/http. Written here, every
// request keeps canaryd's bounds, at the cost of a Prometheus query (76 and
// 83 allocations for v1 and v2, against Prometheus' 83: the official
// clients of InfluxDB and New Relic cost 1.3 and 2 times canaryd's,
// BenchmarkArgoMeasure in test/argo, docs/performance.md). What this
// package must not do:
//   - send a request anywhere but the address of the credentials: the
//     template never names one, and no redirect is followed; proxies from
//     the environment are not used (outbound.NewTransport);
//   - spend without a bound: each request has its requestTimeout, capped
//     by --max-query-timeout; an answer is read up to
//     limits.ResponseBytesPerValue for each value of --max-result-values
//     (MaxResponseBytes at most), refused at the first byte over; an
//     answer of more values (v1's points, v2's values) than
//     --max-result-values is an Error; and of an answer only the result is
//     kept, whatever its size; connections are capped at MaxConnsPerHost;
//   - put a key in an error, a message, a log line, an answer or the
//     store: errors name the Secret's file or the variables, never a value,
//     an error answer quoted has the keys scrubbed, and a configuration
//     holds no credential (CredentialFields is empty).
package datadog
