package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

// Report is one analysis explained: its verdict, the reason for it in a
// sentence, and each metric's counters against its limits.
type Report struct {
	// Analysis is the analysis as the API returns it.
	Analysis api.Analysis
	// Metrics are the rows, in the spec's order.
	Metrics []Metric
	// Reason says in one sentence why the analysis has its phase, naming
	// the decisive measurement: its metric, time, value and condition.
	Reason string
	// Sources say how each metric was measured, as its provider declares
	// it (SourcesOf): the HTML report lists its queries, links to the
	// backend's view and shows the request; optional.
	Sources map[string]Source
	// Series, set by NewSeries, are the verdicts of the backtest series
	// the analysis is one of: the HTML report draws them as a strip.
	Series []analysis.BacktestResult
	// Lead is the index in Series of the analysis the report shows.
	Lead int
	// Renderer holds what this report shares with the others drawn by
	// the process: its pools, query rate and cache. Nil gives the report
	// one of its own.
	Renderer *Renderer
	// Key names the analysis in the Renderer's cache (its id): the bands
	// found and the series fetched for it are kept, and drawn again for
	// the same key. Empty keeps nothing: a report whose analysis has no
	// lasting identity (a backtest's).
	Key string
	// HTMLReport is where the HTML report of this analysis was written (a
	// path as the command line gave it), which the markdown links; empty
	// when none was.
	HTMLReport string

	// plan holds the metrics' compiled conditions, which the HTML report
	// evaluates to shade its charts, and their sources (FetchSeries).
	plan []analysis.Metric
	// data are the series of the metrics' queries over the analysis, by
	// metric (FetchSeries).
	data map[string]*data
}

// Metric is one metric's row of a report.
type Metric struct {
	Name  string
	Phase api.Phase
	// DryRun marks a metric whose outcome does not count; WouldHave is the
	// phase it would have given the analysis (Failed, Inconclusive or
	// Error), empty when it passed or is still running.
	DryRun    bool
	WouldHave api.Phase
	// Measured is the number of measurements taken (Count of the result);
	// Target is the metric's count, 0 when it runs until terminated.
	Measured int32
	Target   int32
	// The counters, each beside its limit. A FailureLimit of -1 means
	// failures never fail the metric.
	Successful, Failed, Inconclusive, Errors               int32
	FailureLimit, InconclusiveLimit, ConsecutiveErrorLimit int32
	ConsecutiveError, ConsecutiveSuccess                   int32
	ConsecutiveSuccessLimit                                int32
	SuccessCondition, FailureCondition                     string
	// Started is when the oldest measurement kept began.
	Started time.Time
	// Last is the newest completed measurement, nil when there is none.
	Last *api.Measurement
	// Decisive is the measurement that gave the metric its phase, nil while
	// the metric runs or when it had none.
	Decisive *api.Measurement
	// Limit is the limit a decisive measurement tripped, in Argo's words
	// ("failed (3) > failureLimit (2)"); empty when none did.
	Limit string
	// Message is the metric result's own message.
	Message string
	// Next says, while the metric runs, what would settle it ("1 more
	// failed measurement → Failed"); empty once it is complete.
	Next string
	// Unplanned marks a metric whose plan is not at hand (NewFromAnalysis):
	// its limits, conditions, Limit and Next are unknown, not zero.
	Unplanned bool
}

// NewFromAnalysis explains an analysis whose plan is not at hand (one
// read back from a store): its metrics are those of its results, their
// counters without limits, and its reason from the resource alone.
func NewFromAnalysis(a api.Analysis) *Report {
	metrics := make([]analysis.Metric, len(a.MetricResults))
	for i, res := range a.MetricResults {
		metrics[i] = analysis.Metric{Name: res.Name, DryRun: res.DryRun}
	}
	r := &Report{Analysis: a, Metrics: make([]Metric, 0, len(metrics))}
	for i := range metrics {
		res := &a.MetricResults[i]
		row := Metric{Name: res.Name, Phase: res.Phase, DryRun: res.DryRun, Measured: res.Count,
			Successful: res.Successful, Failed: res.Failed, Inconclusive: res.Inconclusive, Errors: res.Error,
			ConsecutiveError: res.ConsecutiveError, ConsecutiveSuccess: res.ConsecutiveSuccess,
			Message: res.Message, Unplanned: true}
		if res.DryRun && bad(res.Phase) {
			row.WouldHave = res.Phase
		}
		if len(res.Measurements) > 0 && res.Measurements[0].StartedAt != nil {
			row.Started = *res.Measurements[0].StartedAt
		}
		for j := len(res.Measurements) - 1; j >= 0; j-- {
			if res.Measurements[j].Phase.Completed() {
				row.Last = &res.Measurements[j]
				break
			}
		}
		if res.Phase.Completed() {
			row.Decisive = decisive(res)
		}
		r.Metrics = append(r.Metrics, row)
	}
	r.Reason = reason(r)
	return r
}

// New explains a (running or finished) analysis of plan's metrics. A
// metric of the plan that has no result yet is Pending.
func New(a api.Analysis, metrics []analysis.Metric) *Report {
	results := make(map[string]*api.MetricResult, len(a.MetricResults))
	for i := range a.MetricResults {
		results[a.MetricResults[i].Name] = &a.MetricResults[i]
	}
	r := &Report{Analysis: a, Metrics: make([]Metric, 0, len(metrics)), plan: metrics}
	for i := range metrics {
		res := results[metrics[i].Name]
		if res == nil {
			res = &api.MetricResult{Name: metrics[i].Name, Phase: api.PhasePending, DryRun: metrics[i].DryRun}
		}
		r.Metrics = append(r.Metrics, row(&metrics[i], res))
	}
	r.Reason = reason(r)
	return r
}

func row(m *analysis.Metric, res *api.MetricResult) Metric {
	row := Metric{
		Name:                    m.Name,
		Phase:                   res.Phase,
		DryRun:                  m.DryRun,
		Measured:                res.Count,
		Successful:              res.Successful,
		Failed:                  res.Failed,
		Inconclusive:            res.Inconclusive,
		Errors:                  res.Error,
		ConsecutiveError:        res.ConsecutiveError,
		ConsecutiveSuccess:      res.ConsecutiveSuccess,
		FailureLimit:            m.FailureLimit,
		InconclusiveLimit:       m.InconclusiveLimit,
		ConsecutiveErrorLimit:   m.ConsecutiveErrorLimit,
		ConsecutiveSuccessLimit: m.ConsecutiveSuccessLimit,
		SuccessCondition:        m.SuccessCondition,
		FailureCondition:        m.FailureCondition,
		Message:                 res.Message,
	}
	if m.Count != nil {
		row.Target = *m.Count
	}
	if m.DryRun && bad(res.Phase) {
		row.WouldHave = res.Phase
	}
	if len(res.Measurements) > 0 && res.Measurements[0].StartedAt != nil {
		row.Started = *res.Measurements[0].StartedAt
	}
	for i := len(res.Measurements) - 1; i >= 0; i-- {
		if res.Measurements[i].Phase.Completed() {
			row.Last = &res.Measurements[i]
			break
		}
	}
	if res.Phase.Completed() {
		row.Decisive = decisive(res)
		if _, limit := analysis.AssessLimits(m, res); limit != "" && bad(res.Phase) {
			row.Limit = limit
		}
	} else {
		row.Next = next(m, res)
	}
	return row
}

// bad reports whether a phase fails an analysis.
func bad(p api.Phase) bool {
	return p == api.PhaseFailed || p == api.PhaseInconclusive || p == api.PhaseError
}

// decisive is the measurement that completed a metric: the newest one of
// the metric's own phase (a metric completes at the measurement that trips
// its limit or reaches its count), else the newest completed one.
func decisive(res *api.MetricResult) *api.Measurement {
	var last *api.Measurement
	for i := len(res.Measurements) - 1; i >= 0; i-- {
		ms := &res.Measurements[i]
		if ms.Phase == res.Phase {
			return ms
		}
		if last == nil && ms.Phase.Completed() {
			last = ms
		}
	}
	return last
}

// next says what would settle a running metric: the nearest limit, or the
// measurements still to take.
func next(m *analysis.Metric, res *api.MetricResult) string {
	var parts []string
	if m.FailureLimit >= 0 {
		parts = append(parts, more(m.FailureLimit-res.Failed+1, "failed measurement", api.PhaseFailed))
	}
	parts = append(parts, more(m.InconclusiveLimit-res.Inconclusive+1, "inconclusive measurement", api.PhaseInconclusive))
	parts = append(parts, more(m.ConsecutiveErrorLimit-res.ConsecutiveError+1, "consecutive error", api.PhaseError))
	if m.ConsecutiveSuccessLimit > 0 {
		parts = append(parts, more(m.ConsecutiveSuccessLimit-res.ConsecutiveSuccess, "consecutive success", api.PhaseSuccessful))
	} else if m.Count != nil && *m.Count > res.Count {
		parts = append(parts, fmt.Sprintf("%d more %s → complete", *m.Count-res.Count, plural(*m.Count-res.Count, "measurement")))
	}
	return strings.Join(parts, "; ")
}

func more(n int32, what string, p api.Phase) string {
	n = max(n, 1)
	return fmt.Sprintf("%d more %s → %s", n, plural(n, what), p)
}

func plural(n int32, word string) string {
	if n == 1 || word == "series" {
		return word
	}
	if strings.HasSuffix(word, "s") {
		return word + "es"
	}
	return word + "s"
}

// reason is the one sentence that explains the analysis' phase.
func reason(r *Report) string {
	a := r.Analysis
	switch a.Phase {
	case api.PhaseSuccessful:
		var dry []string
		for _, m := range r.Metrics {
			if m.WouldHave != "" {
				dry = append(dry, fmt.Sprintf("dry-run metric %q would have been %s", m.Name, m.WouldHave))
			}
		}
		all := fmt.Sprintf("all %d metrics", counted(r))
		if counted(r) == 1 {
			all = "its one metric"
		}
		s := fmt.Sprintf("Successful: %s passed (%d %s)", all, measurements(r), plural(int32(measurements(r)), "measurement"))
		if a.Message != "" {
			s += "; " + a.Message
		}
		if len(dry) > 0 {
			s += "; " + strings.Join(dry, "; ")
		}
		return s + "."
	case api.PhaseFailed, api.PhaseInconclusive, api.PhaseError:
		for _, m := range r.Metrics {
			if !m.DryRun && m.Phase == a.Phase {
				return fmt.Sprintf("%s: %s.", a.Phase, explainMetric(m))
			}
		}
		if a.Message != "" {
			return fmt.Sprintf("%s: %s.", a.Phase, strings.TrimSuffix(a.Message, "."))
		}
		return string(a.Phase) + "."
	}
	done := 0
	for _, m := range r.Metrics {
		if m.Phase.Completed() {
			done++
		}
	}
	return fmt.Sprintf("%s: %d of %d metrics complete after %d %s.", orPending(a.Phase), done, len(r.Metrics), measurements(r), plural(int32(measurements(r)), "measurement"))
}

func orPending(p api.Phase) api.Phase {
	if p == "" {
		return api.PhasePending
	}
	return p
}

// counted is how many metrics count towards the verdict.
func counted(r *Report) int {
	n := 0
	for _, m := range r.Metrics {
		if !m.DryRun {
			n++
		}
	}
	return n
}

func measurements(r *Report) int {
	n := 0
	for _, m := range r.Metrics {
		n += int(m.Measured)
	}
	return n
}

// explainMetric names the metric, its decisive measurement (time, value,
// the condition it met or missed) and the limit it tripped.
func explainMetric(m Metric) string {
	s := fmt.Sprintf("metric %q", m.Name)
	d := m.Decisive
	if d == nil {
		if m.Message != "" {
			return s + ": " + m.Message
		}
		return s + " " + strings.ToLower(string(m.Phase))
	}
	at := ""
	if d.FinishedAt != nil {
		at = " at " + d.FinishedAt.UTC().Format(time.RFC3339)
	}
	if d.Phase == api.PhaseError {
		s += " could not be measured" + at
	} else {
		s += " measured " + orDash(d.Value) + at
	}
	switch {
	case d.Phase == api.PhaseError:
		if d.Message != "" {
			s += ": " + d.Message
		}
	case m.Unplanned:
		// Its conditions are not at hand: the sentence names none
		// rather than an empty one.
	case d.Phase == api.PhaseFailed && m.FailureCondition != "":
		s += fmt.Sprintf(", where failureCondition %q was true", m.FailureCondition)
	case d.Phase == api.PhaseFailed:
		s += fmt.Sprintf(", where successCondition %q was false", m.SuccessCondition)
	case d.Phase == api.PhaseInconclusive:
		s += fmt.Sprintf(", where neither successCondition %q nor failureCondition %q was true", m.SuccessCondition, m.FailureCondition)
	}
	switch {
	case m.Limit != "":
		s += "; " + m.Limit
	case m.Message != "" && !strings.Contains(m.Message, d.Value):
		s += "; " + m.Message
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
