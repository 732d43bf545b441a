// Package graphite runs Argo Rollouts' Graphite metric provider
// (`provider.graphite`, v1.10): one request per measurement to Graphite's
// render API, whose answer becomes the metric's result as Argo makes it.
//
// Configuration, with Argo's field names (see Metric): address, Graphite's
// base URL, and query, the render API's query string
// ("target=sumSeries(app.*.count)&from=-5min"). As in Argo, white space
// is removed from the query, format=json is set, and the request is GET
// ADDRESS/render?QUERY. The address is checked against --graphite-allow
// (the prefix rules of --web-allow) when the metric is compiled, and each
// redirect when it is followed; with no prefix, `canaryd serve` refuses
// Graphite metrics, and the command line (run, backtest) allows every
// http or https address. query is declared in the language Query, so that
// an argument's value stays one path segment, a number, or the inside of
// a string literal.
//
// The answer is read as Argo reads it:
//   - a transport error, a status of 400 or more ("error response: " and
//     the start of the body), or a body that is not of Argo's shape (a
//     datapoint that is not [value, time], a value that is not a number or
//     a string holding one) is an Error measurement;
//   - no series, or a first series without datapoints, is Argo's "no
//     values found" Error;
//   - otherwise the result is the non-null values of the first series, in
//     order, a []float64 (result[0] is the first), and the measurement's
//     value is Argo's "[v,v]" with six decimals; a series whose datapoints
//     are all null is an empty result, "[]", which a condition that reads
//     it finds empty ("metric result is nil or empty").
//
// Where canaryd differs from Argo Rollouts:
//   - the query's from and until are sent as the Unix times they mean at
//     the measurement's instant ("-5min" is that instant less five
//     minutes), so that a backtest measures the past with the same
//     template; a from or until of another form ("yesterday") is sent as
//     it is, and a measurement of the past with it is an Error;
//   - a query that is not a URL query string (a bad escape, a ";"),
//     which Argo would send with the parameter dropped, or that sets no
//     target, is refused when the metric is compiled, as is an address
//     with a query or fragment, which Argo drops;
//   - redirects are followed within --graphite-allow only, at most
//     MaxRedirects.
//
// The client is a small one on internal/outbound: Graphite has no
// official Go client. What this package must not do:
//   - send a request anywhere --graphite-allow does not allow, redirects
//     included; the dialler, too, dials only the hosts it names (see
//     outbound.AllowList), and proxies from the environment are not used;
//   - spend without a bound: each request has Timeout, capped by
//     --max-query-timeout; an answer is read up to
//     limits.ResponseBytesPerValue for each value of --max-result-values
//     (MaxResponseBytes at most), refused at the first byte over; an
//     answer of more datapoints than --max-result-values, all series
//     together, is an Error; and of an answer only the first series'
//     values are kept; connections are capped at MaxConnsPerHost.
package graphite
