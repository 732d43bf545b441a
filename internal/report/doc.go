// Package report explains one analysis to a person: its verdict, the
// reason for it in one sentence (the decisive measurement, its time and
// value, the condition it met or missed, the limit it tripped), and each
// metric's counters beside their limits, with what would settle a metric
// still running ("1 more failed measurement → Failed").
//
// A Report is built from the analysis as the API returns it and the plan's
// metrics (New: their limits and conditions, which the resource does not
// carry), using the engine's own limit rules (analysis.AssessLimits). An
// analysis whose plan is not at hand, one read back from a store, is
// explained from the resource alone (NewFromAnalysis): its counters
// without their limits, and neither bands nor series on its charts. It
// is written as text for a terminal, markdown for a GitHub job summary or a
// pull-request comment, JUnit XML (one test case per metric) for GitLab's
// and Jenkins' test reports, or the API's JSON: `canaryd run -o FORMAT`.
//
// # The HTML report
//
// Report.HTML writes one self-contained HTML file (`canaryd run --report`,
// `canaryd backtest --report`, and GET /v1/analyses/{id} with Accept:
// text/html): the verdict and the reason at the top; for an analysis of
// several metrics, a tile for each, the metric at a glance (its phase, a
// dot for each of its newest MaxTileDots measurements, and the value that
// decided it against its threshold); per metric a chart of its measurements
// over time, one point per measurement coloured by its phase, the decisive
// one marked, over shaded bands where the metric's conditions pass, fail or
// are inconclusive (or err); its counters beside their limits and what
// would settle it; a dry-run metric that would have failed says so; its
// rendered queries, a link to the backend's view of the decisive
// measurement and the request to run by hand, as its provider declares
// them (Report.Sources, from SourcesOf: Prometheus' graph and curl), every
// credential shown as redact.Placeholder; a judge metric's classification, critical flag and
// reason per measurement, and the analysis' score. A judge metric's
// comparison (the decisive measurement's, or the newest) is drawn too: the
// canary's and the baseline's samples as empirical distribution functions,
// in two colours, and beneath them the Hodges-Lehmann estimate of the shift
// canary − baseline inside its confidence interval, with 0 marked, the
// classification and the p-value (from what the judge keeps on each
// measurement: at most judge.MaxSampleValues values a side). A counts
// metric (provider.judge's count test) is drawn over its looks: its e-value
// against 1/alpha, and the rate ratio's confidence sequence against the
// tolerance. A backtest series (NewSeries) adds a strip of verdicts over
// time above the report of its first analysis that would have failed.
//
// # The data behind the measurements
//
// Report.FetchSeries, called where a datasource is at hand (the server's
// HTML answer, `canaryd run --report`, `canaryd backtest --report`), runs
// each Prometheus metric's own query as a range query over the analysis'
// window (a judge metric's canary and baseline queries, over the windows
// it compared), through the metric's own source: the same datasource,
// allow-list, headers, credentials and bounds as its measurements. The
// chart beneath the metric's measurements then draws those series, each
// labelled in a legend, with the measurements' times as ticks: what each
// measurement sampled. The step gives a series at most MaxChartPoints
// points; at most MaxSeriesDrawn series are drawn (of each side of a
// judge), the rest named as not drawn; every query together gets
// SeriesBudget. A query that fails is a note beside the chart, never a
// failed report.
//
// The charts are SVG drawn here, on the server, by html/template, with
// inline CSS, and no JavaScript at all: the file opens from disk, in an
// air-gapped cluster or a CI artifact viewer, and requests nothing (its
// Content-Security-Policy forbids it); building canaryd needs no Node
// toolchain and vendors no charting library; and the live page
// (internal/ui) shows the very same report: it reads the server's HTML
// answer and shows its body, styled by the report's stylesheet
// (Stylesheet), which it serves beside its own.
// Every text in the file (metric names, values, messages, queries,
// arguments) goes through html/template's contextual escaping, so none can
// become markup.
//
// The shaded bands are found by evaluating the metric's compiled
// conditions (the plan's analysis.Metric.Judge, which is
// condition.Conditions), never by reading their text, so they are right
// for any condition, not only a threshold: at RegionSamples values across
// the chart's range, each given to the conditions in the shape the
// measurements had (a float64 for a scalar; for a vector of n series,
// []float64 of n copies of the value: "every series at that value"). The
// range covers the values drawn and, when the outcome changes a little
// beyond them, that change. Measurements whose value is not a number (an
// error, an empty result, a judge's comparison) are drawn in a lane below
// the chart by phase alone; a chart with no number has no bands. For a
// vector of several series the point is result[0] and a line spans the
// least to the greatest series. Evaluation is bounded in time per report
// (RegionBudget); a chart whose bands were not all found by then has none,
// and says so.
//
// # What the reports of one process share
//
// A report may be asked for by anyone who may read its analysis, as often
// as they like, so its cost is bounded across reports, not only within
// one (Renderer, one a process). The conditions are evaluated for the
// bands on a pool of MaxShading places of the reports' own, never on the
// pool of evaluators the measurements are judged on: a report cannot slow
// an analysis. The range queries of at most MaxFetching reports are in
// flight at once, and no more than RendererOptions.QueryRate a second are
// sent (bursts of QueryBurst). A report with a Key (the analysis' id) keeps
// its bands and its series in the Renderer's cache, bounded in bytes: the
// bands of the same values are found once, a finished analysis' series are
// fetched once, its window being closed, and a running one's at most every
// SeriesFreshness.
//
// The file stays small whatever the analysis: a chart draws at most
// MaxChartPoints measurements (a longer metric is thinned evenly, the
// decisive measurement kept, and the chart says so), its table lists at
// most MaxTableRows, and a backtest strip has at most MaxStripCells cells.
package report
