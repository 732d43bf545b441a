package analysis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/judge"
)

// Scored metrics count as Kayenta counts its metrics (see metricOutcome):
// what a plain metric's phase is reported as.
const (
	outcomePass   = "Pass"
	outcomeFail   = "Fail"
	outcomeNodata = "Nodata"
	outcomeError  = "Error"
)

// AssessScored assesses a run whose plan declares scoring. Each metric is
// measured and assessed exactly as AssessRun does (its schedule, limits and
// phase are Argo's), but the run is decided as Kayenta decides a canary:
//
//   - a metric that ends Failed or Inconclusive does not stop the others:
//     the run goes on until every metric has completed (or it is
//     terminated), and is then scored with judge.ScoreRun;
//   - a metric that ends with a critical outcome (a critical judge metric
//     whose last measurement failed the canary) stops the others at once:
//     its score is 0;
//   - a metric that ends Error stops the others too, and the run is Error
//     whatever the score, which is still reported: canaryd could not
//     measure it, and a score without it would pass a canary nobody
//     measured;
//   - otherwise the phase follows the score's verdict: Pass → Successful,
//     Marginal → Inconclusive, Fail → Failed, with a message that gives the
//     score and why.
//
// Each metric's outcome is described at metricOutcome. Dry-run metrics are
// Kayenta's muted metrics: reported in the score, never scored.
func AssessScored(plan *Plan, results []*api.MetricResult, terminated bool) RunAssessment {
	out := assessRun(plan.Metrics, results, terminated, terminated || scoredStop(plan.Metrics, results))
	if !out.Phase.Completed() {
		return out
	}
	out.Score = scoreRun(plan, results)
	for i, r := range results {
		if r != nil && !plan.Metrics[i].DryRun && r.Phase == api.PhaseError {
			out.Phase = api.PhaseError
			out.Message = errorMessage(&plan.Metrics[i], r) + "; the score is not used, since a metric could not be measured"
			return out
		}
	}
	out.Phase = verdictPhase(out.Score.Verdict)
	out.Message = scoreMessage(out.Score)
	if terminated {
		out.Message = "Run Terminated; " + out.Message
	}
	return out
}

// scoredStop reports whether a scored run must stop before its metrics have
// all completed: a non-dry-run metric ended Error, or ended with a critical
// outcome.
func scoredStop(metrics []Metric, results []*api.MetricResult) bool {
	for i, r := range results {
		m := &metrics[i]
		if r == nil || m.DryRun || !r.Phase.Completed() {
			continue
		}
		if r.Phase == api.PhaseError {
			return true
		}
		if o, _ := metricOutcome(m, r); o.Critical && o.Classification != judge.Pass {
			return true
		}
	}
	return false
}

// metricOutcome is what scoring makes of one metric, and what the score
// reports as its classification.
//
// A judge metric (Compared) counts as the classification of its last
// measurement, with its critical flag; Error when that measurement has none
// (its queries failed); Nodata when it was never measured.
//
// A plain metric counts by its phase: Successful as Pass; Failed as a
// failure (High, for the count: High, Low and NodataFailMetric weigh the
// same), reported as Fail; Inconclusive as Nodata (neither condition held:
// no verdict, and it counts towards Kayenta's rule that half the metrics
// without data score 0); Error as Error (not counted in its group); never
// measured (terminated before its first measurement) as Nodata.
func metricOutcome(m *Metric, r *api.MetricResult) (judge.MetricOutcome, string) {
	o := judge.MetricOutcome{Name: m.Name, Group: m.Group, Muted: m.DryRun}
	if r == nil || len(r.Measurements) == 0 {
		o.Classification = judge.Nodata
		return o, outcomeNodata
	}
	if m.Compared {
		last := r.Measurements[len(r.Measurements)-1]
		c := last.Metadata[MetadataClassification]
		if c == "" {
			c = string(judge.Error)
		}
		o.Classification = judge.Classification(c)
		o.Critical = last.Metadata[MetadataCritical] == "true"
		return o, c
	}
	switch r.Phase {
	case api.PhaseSuccessful:
		o.Classification = judge.Pass
		return o, outcomePass
	case api.PhaseFailed:
		o.Classification = judge.High
		return o, outcomeFail
	case api.PhaseError:
		o.Classification = judge.Error
		return o, outcomeError
	}
	o.Classification = judge.Nodata
	return o, outcomeNodata
}

// scoreRun scores the metrics' outcomes.
func scoreRun(plan *Plan, results []*api.MetricResult) *api.Score {
	cfg := plan.Scoring.WithDefaults()
	outcomes := make([]judge.MetricOutcome, len(plan.Metrics))
	reported := make([]api.ScoredMetric, len(plan.Metrics))
	for i := range plan.Metrics {
		o, classification := metricOutcome(&plan.Metrics[i], results[i])
		outcomes[i] = o
		group := o.Group
		if group == "" {
			group = judge.DefaultGroup
		}
		reported[i] = api.ScoredMetric{
			Name: o.Name, Group: group, Classification: classification,
			Critical: o.Critical && o.Classification != judge.Pass, Muted: o.Muted,
		}
	}
	s := judge.ScoreRun(outcomes, cfg)
	return &api.Score{
		Score: s.Score, Verdict: s.Verdict, Pass: cfg.Pass, Marginal: cfg.Marginal,
		Groups: s.Groups, Reason: s.Reason, Metrics: reported,
	}
}

// verdictPhase maps a score's verdict to the analysis' phase, as Argo
// Rollouts' own Kayenta provider maps Kayenta's.
func verdictPhase(verdict string) api.Phase {
	switch verdict {
	case judge.VerdictPass:
		return api.PhaseSuccessful
	case judge.VerdictMarginal:
		return api.PhaseInconclusive
	}
	return api.PhaseFailed
}

// scoreMessage is the analysis' message for a score: "Canary score 40 of
// 100, Fail: below the marginal threshold 75".
func scoreMessage(s *api.Score) string {
	n := strconv.FormatFloat(s.Score, 'f', -1, 64)
	return fmt.Sprintf("Canary score %s of 100, %s: %s", n, s.Verdict, strings.TrimPrefix(s.Reason, "score "+n+": "))
}

// errorMessage is Argo's message for a metric that ended Error.
func errorMessage(m *Metric, r *api.MetricResult) string {
	msg := fmt.Sprintf("Metric %q assessed %s", m.Name, r.Phase)
	if _, limit := AssessLimits(m, r); limit != "" {
		msg += " due to " + limit
	}
	if last := lastMessage(r); last != "" {
		msg += fmt.Sprintf(": \"Error Message: %s\"", last)
	}
	return msg
}
