package analysis

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/judge"
)

// verdicts is a judge metric's source: each observation carries a
// classification in its metadata, as the judge provider writes it, and the
// phase the default conditions give it. A trailing "!" marks the
// measurement critical; "Error" is the judge's Error (an Error measurement
// that carries the classification), "QueryError" a failed query (an Error
// measurement without one).
func verdicts(cs ...string) *script {
	s := &script{}
	for _, c := range cs {
		class, critical := strings.CutSuffix(c, "!")
		md := map[string]string{MetadataClassification: class}
		if critical {
			md[MetadataCritical] = "true"
		}
		var phase api.Phase
		switch judge.Classification(class) {
		case judge.Pass:
			phase = api.PhaseSuccessful
		case judge.High, judge.Low, judge.NodataFailMetric:
			phase = api.PhaseFailed
		case judge.Nodata:
			phase = api.PhaseInconclusive
		case judge.Error:
			s.obs = append(s.obs, Observation{Err: errors.New("judge: cannot judge"), Metadata: md, Display: class})
			continue
		default: // QueryError
			s.obs = append(s.obs, Observation{Err: errors.New("query failed")})
			continue
		}
		s.obs = append(s.obs, Observation{Value: phase, Display: class, Metadata: md})
	}
	return s
}

// judged is a judge metric of group, measured count times a minute apart.
func judged(name, group string, count int32, source *script, mutate ...func(*Metric)) Metric {
	m := metric(name, withCount(count))
	m.Group, m.Compared, m.Source, m.Judge = group, true, source, phaseJudge{}
	for _, f := range mutate {
		f(&m)
	}
	return m
}

// plain is a Prometheus metric of the default group.
func plain(name string, count int32, source *script, mutate ...func(*Metric)) Metric {
	m := metric(name, withCount(count))
	m.Group, m.Source, m.Judge = judge.DefaultGroup, source, phaseJudge{}
	for _, f := range mutate {
		f(&m)
	}
	return m
}

func scoring(weights map[string]float64) *judge.ScoreConfig {
	return &judge.ScoreConfig{GroupWeights: weights, Pass: 95, Marginal: 75}
}

func TestScoredRun(t *testing.T) {
	latency60 := scoring(map[string]float64{"latency": 60})
	dry := func(m *Metric) { m.DryRun = true }
	tests := []struct {
		name        string
		metrics     []Metric
		scoring     *judge.ScoreConfig
		wantPhase   api.Phase
		wantMessage string
		// wantScore is score, verdict; wantGroups and wantOutcomes (name:
		// classification, "!" for critical, "~" for muted) what it holds.
		wantScore    float64
		wantVerdict  string
		wantGroups   map[string]float64
		wantOutcomes []string
		// wantMeasured is how often each metric was measured.
		wantMeasured []int
	}{
		{
			name:         "every metric passes",
			metrics:      []Metric{judged("latency", "latency", 3, verdicts("Pass")), plain("errors", 3, phases(api.PhaseSuccessful))},
			scoring:      latency60,
			wantPhase:    api.PhaseSuccessful,
			wantMessage:  "Canary score 100 of 100, Pass: at or above the pass threshold 95",
			wantScore:    100,
			wantVerdict:  judge.VerdictPass,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Pass", "errors:Pass"},
			wantMeasured: []int{3, 3},
		},
		{
			name:         "a failed metric does not stop the others, and the score decides",
			metrics:      []Metric{judged("latency", "latency", 3, verdicts("High")), plain("errors", 3, phases(api.PhaseSuccessful))},
			scoring:      latency60,
			wantPhase:    api.PhaseFailed,
			wantMessage:  "Canary score 40 of 100, Fail: below the marginal threshold 75",
			wantScore:    40,
			wantVerdict:  judge.VerdictFail,
			wantGroups:   map[string]float64{"latency": 0, "default": 100},
			wantOutcomes: []string{"latency:High", "errors:Pass"},
			wantMeasured: []int{1, 3},
		},
		{
			name:         "a failure in a light group is Marginal: Inconclusive",
			metrics:      []Metric{judged("latency", "latency", 3, verdicts("Low")), plain("errors", 3, phases(api.PhaseSuccessful))},
			scoring:      scoring(map[string]float64{"latency": 20}),
			wantPhase:    api.PhaseInconclusive,
			wantMessage:  "Canary score 80 of 100, Marginal: below the pass threshold 95, at or above the marginal threshold 75",
			wantScore:    80,
			wantVerdict:  judge.VerdictMarginal,
			wantGroups:   map[string]float64{"latency": 0, "default": 100},
			wantOutcomes: []string{"latency:Low", "errors:Pass"},
			wantMeasured: []int{1, 3},
		},
		{
			name: "a critical failure stops the run at once",
			metrics: []Metric{
				judged("latency", "latency", 3, verdicts("High!")),
				plain("errors", 5, phases(api.PhaseSuccessful), func(m *Metric) { m.InitialDelay = time.Minute }),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseFailed,
			wantMessage:  `Canary score 0 of 100, Fail: canary failed: critical metric "latency" is High`,
			wantScore:    0,
			wantVerdict:  judge.VerdictFail,
			wantGroups:   map[string]float64{"latency": 0, "default": 100},
			wantOutcomes: []string{"latency:High!", "errors:Nodata"},
			wantMeasured: []int{1, 0},
		},
		{
			name: "a critical failure within the failureLimit does not stop the run",
			metrics: []Metric{
				judged("latency", "latency", 3, verdicts("High!", "Pass"), func(m *Metric) { m.FailureLimit = 1 }),
				plain("errors", 3, phases(api.PhaseSuccessful)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseSuccessful,
			wantMessage:  "Canary score 100 of 100, Pass: at or above the pass threshold 95",
			wantScore:    100,
			wantVerdict:  judge.VerdictPass,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Pass", "errors:Pass"},
			wantMeasured: []int{3, 3},
		},
		{
			name: "the last classification counts, not the metric's phase",
			metrics: []Metric{
				judged("latency", "latency", 3, verdicts("Pass", "Pass", "High"), func(m *Metric) { m.FailureLimit = 2 }),
				plain("errors", 3, phases(api.PhaseSuccessful)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseFailed,
			wantMessage:  "Canary score 40 of 100, Fail: below the marginal threshold 75",
			wantScore:    40,
			wantVerdict:  judge.VerdictFail,
			wantGroups:   map[string]float64{"latency": 0, "default": 100},
			wantOutcomes: []string{"latency:High", "errors:Pass"},
			wantMeasured: []int{3, 3},
		},
		{
			name: "a metric that ends Error makes the run Error, score or not",
			metrics: []Metric{
				judged("latency", "latency", 3, verdicts("Pass")),
				plain("errors", 3, phases(api.PhaseError)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseError,
			wantMessage:  `Metric "errors" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: query failed"; the score is not used, since a metric could not be measured`,
			wantScore:    100,
			wantVerdict:  judge.VerdictPass,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Pass", "errors:Error"},
			wantMeasured: []int{1, 5},
		},
		{
			name: "the judge's Error is an Error measurement that keeps its classification",
			metrics: []Metric{
				judged("latency", "latency", 1, verdicts("Error"), limits(0, 0, 0, 0)),
				plain("errors", 1, phases(api.PhaseSuccessful), func(m *Metric) { m.InitialDelay = time.Minute }),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseError,
			wantMessage:  `Metric "latency" assessed Error due to consecutiveErrors (1) > consecutiveErrorLimit (0): "Error Message: judge: cannot judge"; the score is not used, since a metric could not be measured`,
			wantScore:    0,
			wantVerdict:  judge.VerdictFail,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Error", "errors:Nodata"},
			wantMeasured: []int{1, 0},
		},
		{
			name: "half the metrics without data score 0",
			metrics: []Metric{
				judged("latency", "latency", 1, verdicts("Nodata")),
				plain("errors", 1, phases(api.PhaseSuccessful)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseFailed,
			wantMessage:  "Canary score 0 of 100, Fail: canary failed: 1 of 2 metrics (50% or more) returned no data",
			wantScore:    0,
			wantVerdict:  judge.VerdictFail,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Nodata", "errors:Pass"},
			wantMeasured: []int{1, 1},
		},
		{
			name: "a plain metric's Failed is a failure, its Inconclusive no data",
			metrics: []Metric{
				judged("latency", "latency", 1, verdicts("Pass")),
				plain("errors", 1, phases(api.PhaseFailed)),
				plain("saturation", 1, phases(api.PhaseInconclusive)),
				plain("throughput", 1, phases(api.PhaseSuccessful)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseInconclusive,
			wantMessage:  "Canary score 80 of 100, Marginal: below the pass threshold 95, at or above the marginal threshold 75",
			wantScore:    80,
			wantVerdict:  judge.VerdictMarginal,
			wantGroups:   map[string]float64{"latency": 100, "default": 50},
			wantOutcomes: []string{"latency:Pass", "errors:Fail", "saturation:Nodata", "throughput:Pass"},
			wantMeasured: []int{1, 1, 1, 1},
		},
		{
			name: "dry-run metrics are muted",
			metrics: []Metric{
				judged("latency", "latency", 1, verdicts("High!"), dry),
				plain("errors", 1, phases(api.PhaseSuccessful)),
			},
			scoring:      scoring(nil),
			wantPhase:    api.PhaseSuccessful,
			wantMessage:  "Canary score 100 of 100, Pass: at or above the pass threshold 95",
			wantScore:    100,
			wantVerdict:  judge.VerdictPass,
			wantGroups:   map[string]float64{"default": 100},
			wantOutcomes: []string{"latency:High!~", "errors:Pass"},
			wantMeasured: []int{1, 1},
		},
		{
			name: "a failed query leaves a judge metric without a classification: Error",
			metrics: []Metric{
				judged("latency", "latency", 1, verdicts("QueryError", "Pass")),
				plain("errors", 1, phases(api.PhaseSuccessful)),
			},
			scoring:      latency60,
			wantPhase:    api.PhaseSuccessful,
			wantMessage:  "Canary score 100 of 100, Pass: at or above the pass threshold 95",
			wantScore:    100,
			wantVerdict:  judge.VerdictPass,
			wantGroups:   map[string]float64{"latency": 100, "default": 100},
			wantOutcomes: []string{"latency:Pass", "errors:Pass"},
			wantMeasured: []int{2, 1},
		},
		{
			name:         "without scoring, Argo's semantics: the first failure stops the run",
			metrics:      []Metric{judged("latency", "latency", 3, verdicts("High")), plain("errors", 3, phases(api.PhaseSuccessful))},
			wantPhase:    api.PhaseFailed,
			wantMessage:  `Metric "latency" assessed Failed due to failed (1) > failureLimit (0)`,
			wantMeasured: []int{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, &Plan{Metrics: tt.metrics, Scoring: tt.scoring})
			got := h.finish()
			if got.Phase != tt.wantPhase || got.Message != tt.wantMessage {
				t.Errorf("got (%s, %q)\nwant (%s, %q)", got.Phase, got.Message, tt.wantPhase, tt.wantMessage)
			}
			var measured []int
			for _, m := range tt.metrics {
				measured = append(measured, len(m.Source.(*script).times()))
			}
			if !reflect.DeepEqual(measured, tt.wantMeasured) {
				t.Errorf("measured %v times, want %v", measured, tt.wantMeasured)
			}
			if tt.scoring == nil {
				if got.Score != nil {
					t.Errorf("score %+v without scoring", got.Score)
				}
				return
			}
			checkScore(t, got.Score, tt.wantScore, tt.wantVerdict, tt.wantGroups, tt.wantOutcomes)
		})
	}
}

func checkScore(t *testing.T, s *api.Score, score float64, verdict string, groups map[string]float64, outcomes []string) {
	t.Helper()
	if s == nil {
		t.Fatal("no score")
	}
	if s.Score != score || s.Verdict != verdict || !reflect.DeepEqual(s.Groups, groups) || s.Pass != 95 || s.Marginal != 75 {
		t.Errorf("score %+v, want %v %s groups %v", s, score, verdict, groups)
	}
	var got []string
	for _, m := range s.Metrics {
		o := m.Name + ":" + m.Classification
		if m.Critical {
			o += "!"
		}
		if m.Muted {
			o += "~"
		}
		got = append(got, o)
	}
	if !reflect.DeepEqual(got, outcomes) {
		t.Errorf("outcomes %v, want %v", got, outcomes)
	}
}

func TestScoredRunTerminated(t *testing.T) {
	m := judged("latency", "latency", 0, verdicts("Pass"), indefinite)
	h := start(t, &Plan{Metrics: []Metric{m}, Scoring: scoring(nil)})
	h.waitMeasurements(2)
	h.run.Terminate()
	got := h.finish()
	want := "Run Terminated; Canary score 100 of 100, Pass: at or above the pass threshold 95"
	if got.Phase != api.PhaseSuccessful || got.Message != want {
		t.Errorf("got (%s, %q), want (Successful, %q)", got.Phase, got.Message, want)
	}
	checkScore(t, got.Score, 100, judge.VerdictPass, map[string]float64{"latency": 100}, []string{"latency:Pass"})
}

func TestScoredRunTerminatedBeforeMeasuring(t *testing.T) {
	// A metric stopped before its first measurement has no data: Argo calls
	// it Successful, scoring does not count it as a pass.
	m := plain("later", 1, phases(api.PhaseSuccessful), func(m *Metric) { m.InitialDelay = time.Hour })
	h := start(t, &Plan{Metrics: []Metric{m}, Scoring: scoring(nil)})
	h.run.Terminate()
	got := h.finish()
	want := "Run Terminated; Canary score 0 of 100, Fail: canary failed: 1 of 1 metrics (50% or more) returned no data"
	if got.Phase != api.PhaseFailed || got.Message != want {
		t.Errorf("got (%s, %q), want (Failed, %q)", got.Phase, got.Message, want)
	}
}

func TestScoredRunAborted(t *testing.T) {
	m := judged("latency", "latency", 0, verdicts("Pass"), indefinite)
	h := start(t, &Plan{Metrics: []Metric{m}, Scoring: scoring(nil)})
	h.waitMeasurements(1)
	h.run.Abort("shutting down")
	got := h.finish()
	if got.Phase != api.PhaseError || got.Message != "shutting down" || got.Score != nil {
		t.Errorf("got (%s, %q, %+v), want Error, shutting down and no score", got.Phase, got.Message, got.Score)
	}
}

func TestEvaluateScored(t *testing.T) {
	tests := []struct {
		name        string
		metrics     []Metric
		wantPhase   api.Phase
		wantMessage string
		wantScore   float64
	}{
		{
			name:        "the score decides",
			metrics:     []Metric{judged("latency", "latency", 1, verdicts("High")), plain("errors", 1, phases(api.PhaseSuccessful))},
			wantPhase:   api.PhaseFailed,
			wantMessage: "Canary score 40 of 100, Fail: below the marginal threshold 75",
			wantScore:   40,
		},
		{
			name:        "an Error measurement makes the round Error",
			metrics:     []Metric{judged("latency", "latency", 1, verdicts("High")), plain("errors", 1, phases(api.PhaseError))},
			wantPhase:   api.PhaseError,
			wantMessage: `Metric "errors" assessed Error: query failed; the score is not used, since a metric could not be measured`,
			wantScore:   40,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Evaluate(context.Background(), &Plan{Metrics: tt.metrics, Scoring: scoring(map[string]float64{"latency": 60})},
				Options{Clock: clock.NewFake(t0)})
			if a.Phase != tt.wantPhase || a.Message != tt.wantMessage || a.Score == nil || a.Score.Score != tt.wantScore {
				t.Errorf("got (%s, %q, %+v), want (%s, %q, score %v)", a.Phase, a.Message, a.Score, tt.wantPhase, tt.wantMessage, tt.wantScore)
			}
		})
	}
}

func TestMetricOutcome(t *testing.T) {
	ms := func(md map[string]string) []api.Measurement {
		return []api.Measurement{{Phase: api.PhaseFailed, Metadata: md}}
	}
	tests := []struct {
		name     string
		compared bool
		result   *api.MetricResult
		want     judge.Classification
		critical bool
		reported string
	}{
		{"judge, never measured", true, nil, judge.Nodata, false, "Nodata"},
		{"judge, critical High", true, &api.MetricResult{Phase: api.PhaseFailed, Measurements: ms(map[string]string{
			MetadataClassification: "High", MetadataCritical: "true"})}, judge.High, true, "High"},
		{"judge, NodataFailMetric", true, &api.MetricResult{Phase: api.PhaseFailed, Measurements: ms(map[string]string{
			MetadataClassification: "NodataFailMetric"})}, judge.NodataFailMetric, false, "NodataFailMetric"},
		{"judge, query failed", true, &api.MetricResult{Phase: api.PhaseError, Measurements: ms(nil)}, judge.Error, false, "Error"},
		{"plain, Successful", false, &api.MetricResult{Phase: api.PhaseSuccessful, Measurements: ms(nil)}, judge.Pass, false, "Pass"},
		{"plain, Failed", false, &api.MetricResult{Phase: api.PhaseFailed, Measurements: ms(nil)}, judge.High, false, "Fail"},
		{"plain, Inconclusive", false, &api.MetricResult{Phase: api.PhaseInconclusive, Measurements: ms(nil)}, judge.Nodata, false, "Nodata"},
		{"plain, Error", false, &api.MetricResult{Phase: api.PhaseError, Measurements: ms(nil)}, judge.Error, false, "Error"},
		{"plain, terminated before measuring", false, &api.MetricResult{Phase: api.PhaseSuccessful}, judge.Nodata, false, "Nodata"},
	}
	for _, tt := range tests {
		m := Metric{Name: "m", Group: "g", Compared: tt.compared}
		o, reported := metricOutcome(&m, tt.result)
		if o.Classification != tt.want || o.Critical != tt.critical || reported != tt.reported || o.Group != "g" || o.Name != "m" {
			t.Errorf("%s: got %+v %q, want %s critical=%v %q", tt.name, o, reported, tt.want, tt.critical, tt.reported)
		}
	}
}
