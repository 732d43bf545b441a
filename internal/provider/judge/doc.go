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
// Prometheus provider it is registered over (NewProvider, cmd/canaryd),
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
// # Counts
//
// A metric with provider.judge.counts (Counts, CountSource) judges each
// side's rate of bad events by internal/judge's sequential count test
// (stats.CountTest) instead of comparing samples. Its four queries are
// PromQL expressions of cumulative counters: each side's bad events and
// total events. With counts, alpha, tolerance and direction are the count
// test's: tolerance is the rate ratio canary/baseline that is still fine
// (default 1, not the sample judge's 0.25 band), direction increase (the
// default) or decrease, never either. The sample judge's fields are
// refused beside counts.
//
// The count test needs every look since the analysis started, and this
// package keeps no looks (only a history, below): each measurement as of
// at range-queries the four counters over [start, start + n·interval],
// n = ⌊(at − start)/interval⌋, with the analysis' start and the metric's
// interval from the engine (analysis.ScheduleFrom), and replays the n
// looks through a new test.
// Recomputing rather than carrying counts in the measurement's result is
// what makes a measurement the same live, after a restart (the stored
// startedAt is the start, and measurements older than the retention are
// not needed) and in a backtest (whose start is the analysis' and whose
// prefetched measurements are taken in any order); the looks of one
// measurement are a prefix of the next's, on a grid fixed by the start,
// so the test sees one sequence of looks throughout. A metric without an
// interval has one look, at its instant. Between looks a counter is read
// every Resolution (15 s, a common scrape interval) or as near as divides
// the interval, so that a reset loses no more than a scrape shows. The
// points are bounded by the datasource's --max-result-values: the looks'
// n+1 at least (more is an Error saying to lengthen the interval), the
// points between them fewer when they would not fit, and a counter's
// series times its points too.
//
// Counts are made from counter values as Prometheus' increase() reads
// them (cumulative): within each series an increase counts, a decrease is
// a reset after which the new value counts from zero, a missing point
// carries the previous value, and a series that appears after the start
// counts from zero; the series are then summed.
//
// counts.history (CountHistory) asks, besides, for the baseline's history
// before the analysis' start: its bad and total counters range-queried
// over [start − lookback, start], one point a step (the whole steps that
// fit, ending at the start; default DefaultHistoryStep), counted by the
// same code as the looks, and handed to the count test as
// stats.CountConfig.History, the dispersion's prior. It is the one thing a
// CountSource keeps between measurements, read once an analysis: the
// histories of the last MaxHistoryStarts starts (histories), concurrent
// measurements of one start waiting for the one that asks. A history
// without traffic (no data: a new baseline) is none, as if not asked for,
// and the metadata says so (MetadataHistory); one that could not be read
// is the measurement's Error and is not kept, so the next measurement asks
// again. Its bounds are checked before it is sent: at most
// MaxHistoryIntervals intervals (Validate), and its points within the
// datasource's --max-result-values (when the source is built, and again
// before the query).
//
// A measurement's result (countValue) holds the count test's numbers at
// its last look: decision (continue, Failed, Successful, and at the
// metric's last measurement Inconclusive), classification, reason, look,
// last, eValue, pValue, threshold, dispersion, ratio {estimate, lower,
// upper}, canary and baseline {bad, total}, alpha, tolerance, direction
// and critical; nil for a number that is not finite. Its Display is one
// sentence (countDisplay): `Failed at look 10: canary 14 bad of 1,020,
// baseline 31 of 9,870; rate ratio 4.37 [1.41, 11.3]; e-value 893 ≥ 20`.
// Its metadata carries, besides the classification, the critical flag,
// the reason and the windows, what the HTML report draws over the looks
// from the API's measurements alone: eValue, pValue, looks, decision,
// threshold, ratio (estimate,lower,upper), tolerance and direction; and
// the dispersion, and with a history MetadataHistoryIntervals.
//
// The phase is the conditions', by default DefaultCountsSuccessCondition
// and DefaultCountsFailureCondition: continue and Successful are
// Successful, Failed is Failed, so that failureLimit counts the looks
// past a regression's detection, and Argo's limits, dryRun and
// consecutiveErrorLimit apply as to any metric. The metric's last
// measurement (analysis.Schedule.Last: its count reached) applies the last
// look's rule (stats.CountTest.Conclude): an undecided test ends
// Successful, or Inconclusive when its evidence is suggestive; and a side
// that served no event by then makes it Inconclusive, never Successful. An
// early Successful does not end the metric (the engine ends a metric by
// its count or its limits); the measurements report it, and the decision
// stays. For scoring, the classification is High (Low for decrease) for
// Failed, Pass for continue and Successful, Nodata while a side has served
// no event and for the last look's Inconclusive, critical for a critical
// metric's High, Low and Nodata.
//
// The package does no I/O of its own and keeps no state between
// measurements but a counts metric's histories: Measure may be called from
// any goroutine.
package judge
