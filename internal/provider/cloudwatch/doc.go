// Package cloudwatch runs Argo Rollouts' CloudWatch metric provider
// (`provider.cloudWatch`, v1.10): one GetMetricData request per
// measurement, whose answer becomes the metric's result as Argo makes it.
//
// The AWS SDK for Go v2 does what is AWS's: the configuration, the
// credentials' chain and their cache, the region, the endpoint, the
// request's CBOR (written once per metric) and the decoding of every
// answer it does not take. The request is sent as its client sends it,
// on canaryd's transport, signed with SigV4 by canaryd (sigv4.go, held
// to the SDK's signer byte for byte), and the usual answer is decoded by
// canaryd (decode.go, held to the SDK's decoder): a measurement of one
// value takes 56 allocations of canaryd's where the SDK's client took
// 361, as many as a Prometheus query (docs/performance.md, "What a
// measurement costs").
//
// Configuration, with Argo's field names (see Metric): interval (the
// window queried, ending at the measurement's instant, 5m by default) and
// metricDataQueries, CloudWatch's MetricDataQuery (id, expression, label,
// metricStat with metric.namespace, metric.metricName, metric.dimensions,
// period, stat and unit, period, returnData). It is decoded strictly
// (spec.DecodeStrict) and checked when the metric is compiled, each
// problem on its field. Each query's expression is declared in the
// language MetricMath, so that an argument's value cannot add an operand
// or a search term; dimension values are plain values.
//
// Credentials and region are the AWS SDK's default chain, as in Argo: the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION), the
// shared files and profiles, web identity (IRSA), the container's and the
// instance's roles. AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_CLOUDWATCH)
// sends the requests elsewhere. The configuration is loaded when the first
// CloudWatch metric is compiled; a missing region is then a problem on
// provider.cloudWatch. The SDK caches the credentials and refreshes them
// before they expire.
//
// The answer is read as Argo reads it:
//   - the result the conditions see is the answer's MetricDataResults, a
//     list of objects with Argo's (the SDK's) field names: Id, Label,
//     StatusCode, Messages, Timestamps and Values, newest first, so that
//     `result[0].Values[0]` is the first query's latest value; an answer
//     without results is an empty result, which conditions that index it
//     find empty (Argo v1.10's "metric result is nil or empty" Error);
//   - the measurement's value is each result's values, as Argo writes them
//     ("[[0.1 0.2] []]");
//   - the answer's messages are the measurement's metadata "messages";
//   - an error answer (a status other than 2xx), a transport error or an
//     answer that does not decode is an Error measurement with the SDK's
//     message, as Argo's: its deserializer reads the answer, and the
//     error is its client's, word for word.
//
// Where canaryd differs from Argo Rollouts:
//   - the configuration's problems (an interval that is not a duration, a
//     query without an id, with neither or both of expression and
//     metricStat, a period that is not a positive number, an unknown unit)
//     are refused when the metric is compiled, rather than found at every
//     measurement;
//   - the SDK does not retry a failed request (Argo's retries up to three
//     times): the measurement is an Error, and the analysis takes another
//     10s later, as it does for every Error;
//   - the answer's messages are written "[Code: Value]"; Argo writes the
//     addresses of their strings.
//
// What this package must not do:
//   - spend without a bound: each request has DefaultTimeout, capped by
//     --max-query-timeout (Argo's has none); an answer is read up to
//     limits.ResponseBytesPerValue for each value of --max-result-values
//     (MaxResponseBytes at most), refused at the first byte over; an
//     answer of more values than --max-result-values, all results
//     together, is an Error; connections are capped at MaxConnsPerHost;
//   - make a request but with canaryd's transport (internal/outbound): no
//     proxy from the environment, no redirect followed;
//   - put a credential in an error, a message, a log line or the store: a
//     configuration holds none (CredentialFields is empty), and an error
//     answer that quotes the secret key or the session token (a
//     SignatureDoesNotMatch quotes the signed headers) is shown without
//     them.
package cloudwatch
