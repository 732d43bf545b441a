package analysis

import (
	"fmt"
	"strings"

	"github.com/canaryd/canaryd/api"
)

// phaseOrder ranks completed phases from best to worst, as Argo Rollouts'
// analysisStatusOrder does: the run takes the worst of its metrics.
var phaseOrder = map[api.Phase]int{
	api.PhaseSuccessful:   0,
	api.PhaseRunning:      1,
	api.PhasePending:      2,
	api.PhaseInconclusive: 3,
	api.PhaseError:        4,
	api.PhaseFailed:       5,
}

// worse reports whether next is a worse phase than current. Unknown phases
// rank as Successful, as in Argo.
func worse(current, next api.Phase) bool {
	return phaseOrder[next] > phaseOrder[current]
}

// AssessLimits checks a metric's counters against its limits, with strict
// `>` comparisons. When several limits trip, the later check wins, so Error
// beats Inconclusive beats Failed. It returns "" when no limit tripped, and
// the limit's message otherwise ("failed (2) > failureLimit (1)").
func AssessLimits(m *Metric, r *api.MetricResult) (api.Phase, string) {
	var phase api.Phase
	var message string
	if m.FailureLimit >= 0 && r.Failed > m.FailureLimit {
		phase = api.PhaseFailed
		message = fmt.Sprintf("failed (%d) > failureLimit (%d)", r.Failed, m.FailureLimit)
	}
	if r.Inconclusive > m.InconclusiveLimit {
		phase = api.PhaseInconclusive
		message = fmt.Sprintf("inconclusive (%d) > inconclusiveLimit (%d)", r.Inconclusive, m.InconclusiveLimit)
	}
	if r.ConsecutiveError > m.ConsecutiveErrorLimit {
		phase = api.PhaseError
		message = fmt.Sprintf("consecutiveErrors (%d) > consecutiveErrorLimit (%d)", r.ConsecutiveError, m.ConsecutiveErrorLimit)
	}
	return phase, message
}

// AssessMetric returns a metric's phase from its counters, its limits and
// whether the run is terminating. It is Argo Rollouts' assessMetricStatus:
// failure is immediate (limits are checked after every measurement), success
// needs the count, the consecutiveSuccessLimit, or termination.
func AssessMetric(m *Metric, r *api.MetricResult, terminating bool) api.Phase {
	if r.Phase.Completed() {
		return r.Phase
	}
	if len(r.Measurements) == 0 {
		if terminating {
			return api.PhaseSuccessful
		}
		return api.PhasePending
	}
	if last := r.Measurements[len(r.Measurements)-1]; !last.Phase.Completed() {
		return api.PhaseRunning
	}
	if phase, _ := AssessLimits(m, r); phase != "" {
		return phase
	}
	if m.ConsecutiveSuccessLimit > 0 && r.ConsecutiveSuccess >= m.ConsecutiveSuccessLimit {
		return api.PhaseSuccessful
	}
	if m.Count != nil && r.Count >= *m.Count {
		failureApplicable := m.FailureLimit >= 0
		successApplicable := m.ConsecutiveSuccessLimit > 0
		switch {
		case failureApplicable && successApplicable:
			// Neither the failure limit tripped nor the success limit was
			// reached: the evidence is mixed.
			return api.PhaseInconclusive
		case successApplicable:
			return api.PhaseFailed
		}
		return api.PhaseSuccessful
	}
	if terminating {
		return api.PhaseSuccessful
	}
	return api.PhaseRunning
}

// RunAssessment is the outcome of assessing a whole run.
type RunAssessment struct {
	Phase         api.Phase
	Message       string
	RunSummary    api.RunSummary
	DryRunSummary api.RunSummary
	// Score is set by AssessScored once the run has completed.
	Score *api.Score
}

// AssessRun updates every metric result's phase and message and returns the
// run's phase: Running while any metric is not completed (unless the run is
// terminating), otherwise the worst phase of the non-dry-run metrics. It is
// Argo Rollouts' assessRunStatus, with one difference: the summaries count
// each metric under its own phase (Argo counts a metric that failed for not
// reaching its consecutiveSuccessLimit as Successful in runSummary).
//
// results[i] belongs to metrics[i]; a nil result is a metric that has not
// started (waiting for its initialDelay). terminated says that termination
// was asked for explicitly, which sets the message "Run Terminated".
func AssessRun(metrics []Metric, results []*api.MetricResult, terminated bool) RunAssessment {
	return assessRun(metrics, results, terminated, terminated || selfTerminating(metrics, results))
}

// assessRun is AssessRun with the decision to stop the run made by the
// caller: terminating stops every metric that has not completed.
func assessRun(metrics []Metric, results []*api.MetricResult, terminated, terminating bool) RunAssessment {
	var out RunAssessment
	var worst api.Phase
	if terminated {
		out.Message = "Run Terminated"
	}
	everythingCompleted := true
	for i := range metrics {
		m := &metrics[i]
		summary := &out.RunSummary
		if m.DryRun {
			summary = &out.DryRunSummary
		}
		summary.Count++
		r := results[i]
		if r == nil && terminating {
			// Stopped before its first measurement (an initialDelay, or a
			// measurement cut short): Argo's rule makes it Successful;
			// canaryd lists it so that the reader sees why it has no data.
			r = &api.MetricResult{Name: m.Name, Phase: api.PhaseSuccessful, DryRun: m.DryRun,
				Metadata: m.Metadata, Message: "Metric Terminated before its first measurement"}
			results[i] = r
		}
		if r == nil {
			everythingCompleted = false
			continue
		}
		phase := AssessMetric(m, r, terminating)
		if phase != r.Phase {
			r.Message = metricMessage(m, r, phase, terminating)
			r.Phase = phase
		}
		if !phase.Completed() {
			everythingCompleted = false
			continue
		}
		_, limitMessage := AssessLimits(m, r)
		countPhase(summary, phase)
		if m.DryRun {
			if worst == "" {
				worst = api.PhaseSuccessful
			}
			if limitMessage != "" {
				r.Message = fmt.Sprintf("Metric assessed %s due to %s", phase, limitMessage)
			}
			continue
		}
		if worst == "" || worse(worst, phase) {
			worst = phase
			if limitMessage != "" {
				out.Message = fmt.Sprintf("Metric %q assessed %s due to %s", m.Name, phase, limitMessage)
				if last := lastMessage(r); last != "" {
					out.Message += fmt.Sprintf(": \"Error Message: %s\"", last)
				}
			}
		}
	}
	out.Message = strings.TrimSpace(out.Message)
	switch {
	case terminating && worst == "":
		out.Phase = api.PhaseSuccessful
	case terminating:
		out.Phase = worst
	case !everythingCompleted || worst == "":
		out.Phase = api.PhaseRunning
		out.Message = ""
	default:
		out.Phase = worst
	}
	return out
}

// selfTerminating reports whether a non-dry-run metric has ended Failed,
// Error or Inconclusive, which stops the others (Argo's IsTerminating).
func selfTerminating(metrics []Metric, results []*api.MetricResult) bool {
	for i, r := range results {
		if r == nil || metrics[i].DryRun {
			continue
		}
		switch r.Phase {
		case api.PhaseFailed, api.PhaseError, api.PhaseInconclusive:
			return true
		}
	}
	return false
}

func countPhase(s *api.RunSummary, p api.Phase) {
	switch p {
	case api.PhaseError:
		s.Error++
	case api.PhaseFailed:
		s.Failed++
	case api.PhaseInconclusive:
		s.Inconclusive++
	default:
		s.Successful++
	}
}

func lastMessage(r *api.MetricResult) string {
	if len(r.Measurements) == 0 {
		return ""
	}
	return r.Measurements[len(r.Measurements)-1].Message
}

// metricMessage is the message a metric result carries once it changes
// phase. Argo copies the last measurement's message; where that is empty and
// the verdict is not Successful, canaryd says what was measured against which
// condition, which Argo's messages leave out (argo-rollouts #2741, #3008).
func metricMessage(m *Metric, r *api.MetricResult, phase api.Phase, terminating bool) string {
	if last := lastMessage(r); last != "" {
		return last
	}
	if len(r.Measurements) == 0 {
		return ""
	}
	last := r.Measurements[len(r.Measurements)-1]
	if phase == api.PhaseSuccessful && terminating && m.Count != nil && r.Count < *m.Count &&
		!AssessMetric(m, r, false).Completed() {
		// Argo calls this Successful (argo-rollouts #4479, #1329); say that
		// the count was not reached. Only of a metric that was cut short: one
		// that completed on its own (its consecutiveSuccessLimit reached)
		// in the round that ended the run was not terminated.
		return fmt.Sprintf("Metric Terminated after %d of %d measurements", r.Count, *m.Count)
	}
	switch phase {
	case api.PhaseFailed, api.PhaseInconclusive:
	default:
		return ""
	}
	if limitPhase, _ := AssessLimits(m, r); limitPhase == "" && m.ConsecutiveSuccessLimit > 0 {
		// The count was reached without the consecutiveSuccessLimit.
		return fmt.Sprintf("consecutiveSuccess (%d) did not reach consecutiveSuccessLimit (%d) within count (%d)",
			r.ConsecutiveSuccess, m.ConsecutiveSuccessLimit, r.Count)
	}
	return explain(m, last)
}

// explain describes one measurement's verdict in terms of its value and the
// conditions that decided it.
func explain(m *Metric, ms api.Measurement) string {
	switch ms.Phase {
	case api.PhaseFailed:
		// With a failure condition set, Failed means it held (failure wins
		// over success); otherwise the success condition did not hold.
		if m.FailureCondition != "" {
			return fmt.Sprintf("measured %s: failureCondition %q was true", ms.Value, m.FailureCondition)
		}
		return fmt.Sprintf("measured %s: successCondition %q was false", ms.Value, m.SuccessCondition)
	case api.PhaseInconclusive:
		return fmt.Sprintf("measured %s: neither successCondition %q nor failureCondition %q was true", ms.Value, m.SuccessCondition, m.FailureCondition)
	}
	return ""
}
