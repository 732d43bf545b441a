// Package web runs Argo Rollouts' web metric provider (`provider.web`): one
// HTTP request per measurement, whose JSON answer is the metric's result.
//
// Configuration, with Argo's field names (see Metric): url, method (GET,
// the default, POST or PUT), headers (a list of key/value), body or
// jsonBody (POST and PUT only; jsonBody is sent as application/json),
// jsonPath, timeoutSeconds (0 means 10) and insecure, decoded strictly by
// spec.DecodeStrict (unknown fields and wrong types on their paths) and
// checked when the metric is compiled. The result is read as Argo reads
// it:
//
//   - a transport error, or a status outside 2xx, is an Error measurement
//     ("received non 2xx response code: 503"); the body is then not read;
//   - the body is decoded as JSON (numbers are float64) and jsonPath
//     selects the result, the whole document by default; the first value
//     when the path selects several, Argo's "Could not find JSONPath in
//     body: …" when it names a field that is not there, and "result of web
//     metric produced no value" when it selects nothing;
//   - the measurement's value is the result written as JSON ("pass" with
//     its quotes, keys sorted).
//
// Where canaryd differs from Argo Rollouts:
//
//   - a body that is not JSON, or is empty, is the result as a string, and
//     the conditions decide (Argo's fix of #4535, unreleased); released
//     Argo versions call such a measurement Successful without evaluating
//     any condition, a silent false positive;
//   - jsonPath is a careful subset of Kubernetes' JSONPath (which Argo runs
//     with k8s.io/client-go/util/jsonpath, too heavy a dependency for
//     this): the forms that select a value, listed at jsonPath; filters,
//     slices, unions, recursive descent and text outside the braces are
//     refused when the metric is checked, rather than run differently; a
//     wildcard over an object visits its fields in key order;
//   - method must be GET, POST or PUT (Argo sends any method it is given);
//     a negative timeoutSeconds is refused (Argo reads it as 10); a Host
//     header is refused (it would send the request to another site than
//     the url names); authentication (Argo's oauth2) is refused: a bearer
//     token goes in headers, from a secret argument.
//
// What this package must not do:
//   - send a request to a URL outside the operator's allow-list
//     (--web-allow, with the prefix rules and normalisation of
//     --webhook-allow): the url is checked when the metric is compiled,
//     so nothing is sent for a refused one, and every redirect is checked
//     again (at most MaxRedirects); without any prefix every web metric is
//     refused;
//   - use proxies from the environment (HTTP_PROXY and friends are
//     ignored);
//   - spend without a bound: a response body beyond MaxResponseBytes is an
//     Error, read no further; connections per host are capped at
//     MaxConnsPerHost; each request has its timeout, capped by
//     --max-query-timeout; the request body and headers are the spec's,
//     bounded with it;
//   - put a header's value, or the URL's query or userinfo, in an error,
//     a message or a log line.
//
// Its client is built by internal/outbound (transport, allow-list and its
// dialler, redirect policy, body bound, header checks), and what an error
// shows of the URL is internal/redact's; the limits and messages are this
// package's.
package web
