// Package influxdb runs Argo Rollouts' InfluxDB metric provider
// (`provider.influxdb`, v1.10): one Flux query per measurement to
// InfluxDB's query API, whose answer becomes the metric's result as Argo
// makes it.
//
// Configuration, with Argo's field names (see Metric): query, a Flux
// query, and profile, the Secret of the credentials. It is decoded
// strictly (spec.DecodeStrict) and checked when the metric is compiled,
// each problem on its field. query is declared in the language Flux, so
// that an argument's value cannot break out of a string, open an
// interpolation or change the query.
//
// Credentials are Argo's: the keys address, authToken and org of the
// Secret the metric names in profile (influxdb when it names none), read
// from --credentials-dir (internal/credentials). They are read when the
// metric is compiled (a missing file is a problem naming it) and for every
// measurement, within the directory's MaxAge, so that a rotated Secret
// applies without a restart. The query is sent as Argo's client sends it:
// POST ADDRESS/api/v2/query?org=ORG, the header Authorization: Token
// TOKEN, a JSON body with the query and the client's dialect, and the
// measurement's instant as "now", so that a backtest can query the past.
//
// The answer, annotated CSV, is read as Argo reads it:
//   - the result is the list of the _value of every record of every table,
//     each of its column's #datatype (double a float64, long an int64,
//     unsignedLong a uint64, string, boolean, dateTime a time, duration),
//     an empty one its #default or nil; conditions index it
//     (result[0] > 0.99), and the measurement's value is the list as Go
//     prints it ("[0.995]"). A list of doubles only, the usual answer, is
//     a condition.Doubles, which conditions read as Argo's []interface{};
//   - no record is an Error, "no results returned from flux query";
//   - a status other than 2xx is an Error with the client's message: the
//     code and message of a JSON body, else the status and the body (its
//     first 512 bytes, the token scrubbed);
//   - a transport error, or no answer within 20s (Argo's client's bound),
//     is an Error.
//
// Where canaryd differs from Argo Rollouts (docs/differences.md):
//   - an answer that is not valid annotated CSV, or an error table (a
//     query that failed while it ran), is an Error with its reason; Argo
//     ignores the error and judges the records read before it, if any;
//   - the query runs as of the measurement's instant ("now"), not
//     InfluxDB's clock, which a live measurement barely tells apart;
//   - the query and the profile are checked when the metric is compiled,
//     rather than at the first measurement;
//   - no redirect is followed: one would take the token elsewhere.
//
// The client is a small one on internal/outbound rather than
// influxdb-client-go/v2, which the module proxy serves (Argo's provider
// uses it) but which cannot hold canaryd's bounds: it decompresses a gzip
// answer itself, past any bound on the bytes read (api/query.go,
// queryAPI.Query), reads an error answer whole and drains it
// (api/http/service.go, parseHTTPError), builds a map of every column of
// every record, drains the rest of an answer it stops reading
// (QueryTableResult.Close), and sends through a transport of its own with
// proxies from the environment. It also costs more, a third more
// allocations and three fifths more bytes: one measurement of one value
// takes 172-173 allocations and 18.1 KB against canaryd's 130 and 11.4 KB
// on the same stand-in (BenchmarkArgoMeasure in test/argo,
// docs/performance.md), where canaryd's costs what a Prometheus query does
// (83 allocations, 6.6 KB, BenchmarkMeasureOneValue). Written here, a
// measurement reads at most its bound and keeps of each record its _value
// only. What this package must not do:
//   - send a request anywhere but the address of the credentials: the
//     template never names one, and no redirect is followed; proxies from
//     the environment are not used (outbound.NewTransport);
//   - spend without a bound: each request has 20s, capped by
//     --max-query-timeout; an answer is read up to
//     limits.ResponseBytesPerValue for each value of --max-result-values
//     (MaxResponseBytes at most), refused at the first byte over; an
//     answer of more records than --max-result-values is an Error;
//     connections are capped at MaxConnsPerHost;
//   - put the token in an error, a message, a log line, an answer or the
//     store: errors name the Secret's file, never a value, an error answer
//     quoted has the token scrubbed, and a configuration holds no
//     credential (CredentialFields is empty).
package influxdb
