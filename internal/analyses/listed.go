package analyses

import (
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/report"
)

// A row of the list (the page's, or a script's) shows an analysis without
// its measurements: its report's sentence (api.Analysis.Reason) and the
// phases of each metric's newest measurements (api.Analysis.Measured)
// stand in for them. Both are made from what the list copies anyway (the
// analysis as it stands, its measurements kept) and are bounded whatever
// the analysis holds: api.MaxListReason characters, api.MaxListPhases
// letters a metric.

// Summarize sets a's Reason and Measured from its measurements, before
// the list leaves them out. plan is the analysis' own, for the sentence
// its report gives (conditions and limits named); without it (an
// analysis read from the store that this replica does not run) the
// sentence is the one its report gives from the resource alone.
func Summarize(a api.Analysis, plan *analysis.Plan) api.Analysis {
	var r *report.Report
	if plan != nil {
		r = report.New(a, plan.Metrics)
	} else {
		r = report.NewFromAnalysis(a)
	}
	a.Reason = cutReason(r.Reason)
	a.Measured = make([]api.MetricPhases, 0, len(a.MetricResults))
	for i := range a.MetricResults {
		a.Measured = append(a.Measured, phasesOf(&a.MetricResults[i]))
	}
	return a
}

// cutReason bounds a sentence at api.MaxListReason characters.
func cutReason(s string) string {
	if utf8.RuneCountInString(s) <= api.MaxListReason {
		return s
	}
	runes := []rune(s)
	return string(runes[:api.MaxListReason-1]) + "…"
}

// phasesOf is a metric's newest measurements kept, a letter each, and how
// many it took before them.
func phasesOf(res *api.MetricResult) api.MetricPhases {
	ms := res.Measurements
	if len(ms) > api.MaxListPhases {
		ms = ms[len(ms)-api.MaxListPhases:]
	}
	letters := make([]byte, len(ms))
	shown := int32(0)
	for i := range ms {
		letters[i] = phaseLetter(ms[i].Phase)
		if ms[i].Phase.Completed() {
			shown++
		}
	}
	// Count counts the measurements that completed but Errors, which
	// Error counts.
	return api.MetricPhases{Metric: res.Name, Phases: string(letters), More: max(res.Count+res.Error-shown, 0)}
}

// phaseLetter is a measurement's phase in api.MetricPhases.Phases.
func phaseLetter(p api.Phase) byte {
	switch p {
	case api.PhaseSuccessful:
		return 'S'
	case api.PhaseFailed:
		return 'F'
	case api.PhaseInconclusive:
		return 'I'
	case api.PhaseError:
		return 'E'
	case api.PhaseRunning:
		return 'R'
	}
	return 'P'
}
