// Package report explains one analysis to a person: its verdict, the
// reason for it in one sentence (the decisive measurement, its time and
// value, the condition it met or missed, the limit it tripped), and each
// metric's counters beside their limits, with what would settle a metric
// still running ("1 more failed measurement → Failed").
//
// A Report is built from the analysis as the API returns it and the plan's
// metrics (their limits and conditions, which the resource does not
// carry), using the engine's own limit rules (analysis.AssessLimits). It
// is written as text for a terminal, markdown for a GitHub job summary or a
// pull-request comment, JUnit XML (one test case per metric) for GitLab's
// and Jenkins' test reports, or the API's JSON: `canaryd run -o FORMAT`.
package report
