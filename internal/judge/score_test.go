package judge

import (
	"maps"
	"strings"
	"testing"
)

// m is a MetricOutcome in one line.
func m(name, group string, c Classification) MetricOutcome {
	return MetricOutcome{Name: name, Group: group, Classification: c}
}

func critical(o MetricOutcome) MetricOutcome { o.Critical = true; return o }
func muted(o MetricOutcome) MetricOutcome    { o.Muted = true; return o }

func TestScoreRun(t *testing.T) {
	tests := []struct {
		name        string
		outcomes    []MetricOutcome
		cfg         ScoreConfig
		wantScore   float64
		wantVerdict string
		wantGroups  map[string]float64
		wantReason  string // a substring
	}{
		{"all pass", []MetricOutcome{m("a", "latency", Pass), m("b", "latency", Pass)}, ScoreConfig{},
			100, VerdictPass, map[string]float64{"latency": 100}, "at or above the pass threshold 95"},
		{"group score is the share that passed",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Pass), m("c", "g", Pass), m("d", "g", High)}, ScoreConfig{},
			75, VerdictMarginal, map[string]float64{"g": 75}, "below the pass threshold 95, at or above the marginal threshold 75"},
		{"High, Low and NodataFailMetric count as failures",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", High), m("c", "g", Low), m("d", "g", NodataFailMetric)}, ScoreConfig{},
			25, VerdictFail, map[string]float64{"g": 25}, "below the marginal threshold 75"},
		{"Nodata and Error do not count",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Pass), m("c", "g", Error), m("d", "g", Nodata), m("e", "g", High)}, ScoreConfig{},
			66.67, VerdictFail, map[string]float64{"g": 200.0 / 3}, "score 66.67"},
		{"a group of only Nodata and Error scores 100",
			[]MetricOutcome{m("a", "x", Pass), m("b", "x", Pass), m("c", "y", Error)}, ScoreConfig{},
			100, VerdictPass, map[string]float64{"x": 100, "y": 100}, "score 100"},
		{"weights",
			[]MetricOutcome{m("a", "latency", Pass), m("b", "latency", High), m("c", "errors", Pass)},
			ScoreConfig{GroupWeights: map[string]float64{"latency": 30, "errors": 70}},
			85, VerdictMarginal, map[string]float64{"latency": 50, "errors": 100}, "score 85"},
		{"unweighted groups share the rest of 100",
			[]MetricOutcome{m("a", "w", High), m("b", "u1", Pass), m("c", "u2", High)},
			ScoreConfig{GroupWeights: map[string]float64{"w": 60}},
			20, VerdictFail, map[string]float64{"w": 0, "u1": 100, "u2": 0}, "score 20"},
		{"a weighted group without metrics keeps its share (Kayenta)",
			[]MetricOutcome{m("a", "x", Pass)}, ScoreConfig{GroupWeights: map[string]float64{"x": 50, "missing": 50}},
			50, VerdictFail, map[string]float64{"x": 100}, "score 50"},
		{"no group is the default group", []MetricOutcome{m("a", "", Pass), m("b", "", High)}, ScoreConfig{},
			50, VerdictFail, map[string]float64{DefaultGroup: 50}, "score 50"},
		{"muted metrics are not scored",
			[]MetricOutcome{m("a", "g", Pass), muted(m("b", "g", High)), muted(critical(m("c", "g", High)))}, ScoreConfig{},
			100, VerdictPass, map[string]float64{"g": 100}, "score 100"},
		{"a critical failure scores 0",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Pass), critical(m("errors", "g", High))}, ScoreConfig{},
			0, VerdictFail, map[string]float64{"g": 200.0 / 3}, `canary failed: critical metric "errors" is High`},
		{"a critical Nodata scores 0",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Pass), critical(m("c", "g", Nodata))}, ScoreConfig{},
			0, VerdictFail, map[string]float64{"g": 100}, `critical metric "c" is Nodata`},
		{"critical set on a Pass is ignored", []MetricOutcome{critical(m("a", "g", Pass))}, ScoreConfig{},
			100, VerdictPass, map[string]float64{"g": 100}, "score 100"},
		{"half Nodata scores 0",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Nodata)}, ScoreConfig{},
			0, VerdictFail, map[string]float64{"g": 100}, "1 of 2 metrics (50% or more) returned no data"},
		{"under half Nodata is scored",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", Pass), m("c", "g", Nodata)}, ScoreConfig{},
			100, VerdictPass, map[string]float64{"g": 100}, "score 100"},
		{"no metrics", nil, ScoreConfig{}, 0, VerdictFail, map[string]float64{}, "no metrics to score"},
		{"only muted metrics", []MetricOutcome{muted(m("a", "g", Pass))}, ScoreConfig{}, 0, VerdictFail, map[string]float64{}, "no metrics to score"},
		{"exactly the pass threshold passes",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", High)}, ScoreConfig{Pass: 50, Marginal: 25},
			50, VerdictPass, map[string]float64{"g": 50}, "at or above the pass threshold 50"},
		{"exactly the marginal threshold is Marginal",
			[]MetricOutcome{m("a", "g", Pass), m("b", "g", High)}, ScoreConfig{Pass: 60, Marginal: 50},
			50, VerdictMarginal, map[string]float64{"g": 50}, "at or above the marginal threshold 50"},
		{"invalid weights", []MetricOutcome{m("a", "g", Pass)}, ScoreConfig{GroupWeights: map[string]float64{"a": 70, "b": 50}},
			0, VerdictFail, map[string]float64{}, "invalid scoring configuration: group weights sum to 120"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ScoreRun(tc.outcomes, tc.cfg)
			if got.Score != tc.wantScore || got.Verdict != tc.wantVerdict {
				t.Errorf("%s: ScoreRun = %v %s (%q); want %v %s", tc.name, got.Score, got.Verdict, got.Reason, tc.wantScore, tc.wantVerdict)
			}
			if !maps.EqualFunc(got.Groups, tc.wantGroups, near) {
				t.Errorf("%s: groups %v; want %v", tc.name, got.Groups, tc.wantGroups)
			}
			if !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("%s: reason %q; want it to contain %q", tc.name, got.Reason, tc.wantReason)
			}
		})
	}
}

func TestScoreConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  ScoreConfig
		want []string
	}{
		{"zero value", ScoreConfig{}, nil},
		{"weights to 100", ScoreConfig{GroupWeights: map[string]float64{"a": 40, "b": 60}, Pass: 90, Marginal: 50}, nil},
		{"every problem listed", ScoreConfig{GroupWeights: map[string]float64{"a": -1, "b": 150}, Pass: 120, Marginal: 130},
			[]string{`group "a": weight -1`, "sum to 150", "pass threshold 120", "marginal threshold 130: want", "above the pass threshold"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkValidate(t, tc.name, tc.cfg.Validate(), tc.want)
		})
	}
}

// TestRoundHalfUp2 checks Commons Math's Precision.round(x, 2): half up on
// the shortest decimal form, where x*100 would round 1.005 down.
func TestRoundHalfUp2(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{1.005, 1.01}, {2.675, 2.68}, {66.665, 66.67}, {200.0 / 3, 66.67}, {100.0 / 3, 33.33},
		{0.125, 0.13}, {-1.005, -1.01}, {100, 100}, {0, 0}, {99.994999, 99.99}, {99.995, 100},
	} {
		if got := roundHalfUp2(tc.x); got != tc.want {
			t.Errorf("roundHalfUp2(%v) = %v; want %v", tc.x, got, tc.want)
		}
	}
}
