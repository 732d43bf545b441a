package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	stats "github.com/canaryd/canaryd/internal/judge"
	judgesource "github.com/canaryd/canaryd/internal/provider/judge"
)

var at = time.Date(2024, 3, 1, 2, 30, 0, 0, time.UTC)

// fixed is a side that always answers o, and records the instant asked.
func fixed(o analysis.Observation, asked *time.Time) analysis.Source {
	return analysis.SourceFunc(func(_ context.Context, t time.Time) analysis.Observation {
		if asked != nil {
			*asked = t
		}
		return o
	})
}

func values(vs ...float64) analysis.Observation { return analysis.Observation{Value: vs} }

func TestMeasure(t *testing.T) {
	slow := values(130, 131, 129, 132, 128, 130.5, 129.5)
	base := values(100, 101, 99, 102, 98, 100.5, 99.5)
	tests := []struct {
		name               string
		canary, baseline   analysis.Observation
		cfg                stats.Config
		wantDisplay        string
		wantErr            string
		wantMetadata       map[string]string
		wantClass          string
		wantMetadataAbsent []string
	}{
		{
			name: "higher", canary: slow, baseline: base,
			wantDisplay: "High (p=0.0022, shift=+30, ratio=1.30)", wantClass: "High",
			wantMetadata: map[string]string{
				"classification": "High",
				"canaryWindow":   "2024-03-01T02:00:00Z/2024-03-01T02:30:00Z",
				"baselineWindow": "2024-03-01T01:00:00Z/2024-03-01T01:30:00Z",
				"judgeWarnings":  "the canary has 7 points, fewer than 50, which reduces confidence in the result; the baseline has 7 points, fewer than 50, which reduces confidence in the result",
			},
			wantMetadataAbsent: []string{"critical"},
		},
		{
			name: "critical", canary: slow, baseline: base, cfg: stats.Config{Critical: true},
			wantDisplay: "High (p=0.0022, shift=+30, ratio=1.30)", wantClass: "High",
			wantMetadata: map[string]string{"classification": "High", "critical": "true"},
		},
		{
			name: "a scalar and a vector", canary: analysis.Observation{Value: 100.0}, baseline: values(100),
			wantDisplay: "Pass (p=1, shift=+0, ratio=1.00)", wantClass: "Pass",
		},
		{
			name: "no data", canary: values(), baseline: analysis.Observation{Value: []float64{math.NaN(), 1}},
			wantDisplay: "Nodata (canary n=0, baseline n=1)", wantClass: "Nodata",
		},
		{
			name: "query warnings, each side's", canary: analysis.Observation{Value: []float64{1}, Metadata: map[string]string{"warnings": `"w"`}},
			baseline:    analysis.Observation{Value: []float64{1}, Metadata: map[string]string{"infos": `"i"`}},
			wantDisplay: "Pass (p=1, shift=+0, ratio=1.00)", wantClass: "Pass",
			wantMetadata: map[string]string{"canaryWarnings": `"w"`, "baselineInfos": `"i"`},
		},
		{
			name: "±Inf is the judge's Error: an Error measurement", canary: values(math.Inf(1), 1, 2), baseline: values(1, 2, 3),
			wantDisplay: "Error", wantClass: "Error",
			wantErr: "judge: cannot judge: a sample holds ±Inf, or values so far apart that their difference overflows, so the interval of the shift is undefined",
		},
		{
			name: "failed queries", canary: analysis.Observation{Err: errors.New("connection refused")}, baseline: analysis.Observation{Err: errors.New("bad_data")},
			wantErr: "canary query: connection refused\nbaseline query: bad_data",
		},
		{
			name: "a result of another type", canary: analysis.Observation{Value: "x"}, baseline: values(1),
			wantErr: "canary query: unexpected result of type string",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var askedCanary, askedBaseline time.Time
			src := judgesource.New(judgesource.Options{
				Canary: fixed(tt.canary, &askedCanary), Baseline: fixed(tt.baseline, &askedBaseline),
				Lookback: 30 * time.Minute, Offset: time.Hour, Config: tt.cfg,
			})
			obs := src.Measure(context.Background(), at)
			if !askedCanary.Equal(at) || !askedBaseline.Equal(at) {
				t.Errorf("sides asked at %v and %v, want %v (each side shifts its own window)", askedCanary, askedBaseline, at)
			}
			if obs.Display != tt.wantDisplay {
				t.Errorf("display %q, want %q", obs.Display, tt.wantDisplay)
			}
			if gotErr := errString(obs.Err); gotErr != tt.wantErr {
				t.Errorf("error %q, want %q", gotErr, tt.wantErr)
			}
			if got := obs.Metadata[analysis.MetadataClassification]; got != tt.wantClass {
				t.Errorf("classification %q, want %q", got, tt.wantClass)
			}
			for k, v := range tt.wantMetadata {
				if obs.Metadata[k] != v {
					t.Errorf("metadata[%q] = %q, want %q", k, obs.Metadata[k], v)
				}
			}
			for _, k := range tt.wantMetadataAbsent {
				if _, ok := obs.Metadata[k]; ok {
					t.Errorf("metadata[%q] is set", k)
				}
			}
			if tt.wantClass != "" && obs.Metadata[judgesource.MetadataReason] == "" {
				t.Error("no reason in the metadata")
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestMeasureWithoutSources(t *testing.T) {
	obs := judgesource.New(judgesource.Options{}).Measure(context.Background(), time.Time{})
	if errString(obs.Err) != "judge metric has no Prometheus source" {
		t.Errorf("got %v", obs.Err)
	}
}

// TestBoundByContext: a judge metric is bound by its context when both of
// its sides are.
func TestBoundByContext(t *testing.T) {
	unbound := fixed(values(1), nil)
	for _, tc := range []struct {
		name             string
		canary, baseline analysis.Source
		want             bool
	}{
		{"both bound", boundSide{}, boundSide{}, true},
		{"the canary not", unbound, boundSide{}, false},
		{"the baseline not", boundSide{}, unbound, false},
		{"none", nil, nil, false},
	} {
		s := judgesource.New(judgesource.Options{Canary: tc.canary, Baseline: tc.baseline})
		if got := s.BoundByContext(); got != tc.want {
			t.Errorf("%s: BoundByContext() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

type boundSide struct{}

func (boundSide) BoundByContext() bool { return true }
func (boundSide) Measure(context.Context, time.Time) analysis.Observation {
	return values(1)
}

func TestValue(t *testing.T) {
	res := stats.Classify([]float64{130, 131, 129, 132, 128}, []float64{100, 101, 99, 102, 98}, stats.Config{})
	v := judgesource.Value(res)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"classification", "reason", "pValue", "estimate", "confidenceInterval", "effectSize", "meanRatio", "critical", "warnings", "canary", "baseline"} {
		if _, ok := back[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	canary := v["canary"].(map[string]any)
	want := map[string]any{"n": 5, "mean": 130.0, "median": 130.0, "min": 128.0, "max": 132.0, "stdDev": math.Sqrt(2.5), "nan": 0, "outliers": 0}
	if !reflect.DeepEqual(canary, want) {
		t.Errorf("canary %v, want %v", canary, want)
	}

	// No data: every number that cannot be computed is nil, so that the
	// value is JSON, and conditions see nil rather than NaN.
	empty := judgesource.Value(stats.Classify(nil, []float64{1, 2}, stats.Config{}))
	if _, err := json.Marshal(empty); err != nil {
		t.Fatalf("no-data value does not marshal: %v", err)
	}
	for _, k := range []string{"pValue", "estimate", "effectSize", "meanRatio"} {
		if empty[k] != nil {
			t.Errorf("%s = %v, want nil", k, empty[k])
		}
	}
	if ci := empty["confidenceInterval"].([]any); ci[0] != nil || ci[1] != nil {
		t.Errorf("confidenceInterval = %v, want [nil nil]", ci)
	}
	if c := empty["canary"].(map[string]any); c["mean"] != nil || c["n"] != 0 {
		t.Errorf("empty canary = %v", c)
	}
	if w := empty["warnings"].([]string); len(w) != 1 || !strings.Contains(w[0], "baseline has 2 points") {
		t.Errorf("warnings = %q", w)
	}
}

// TestConditions shows what conditions can say about a judge result, the
// way the engine evaluates them.
func TestConditions(t *testing.T) {
	high := judgesource.Value(stats.Classify([]float64{130, 131, 129, 132, 128}, []float64{100, 101, 99, 102, 98}, stats.Config{}))
	nodata := judgesource.Value(stats.Classify(nil, []float64{1}, stats.Config{}))
	tests := []struct {
		condition string
		value     map[string]any
		want      bool
		wantErr   bool
	}{
		{`result.classification == "Pass"`, high, false, false},
		{`result.classification in ['High', 'Low', 'NodataFailMetric']`, high, true, false},
		{`result.meanRatio > 1.25 && result.pValue < 0.05`, high, true, false},
		{`result.confidenceInterval[0] > 20`, high, true, false},
		{`result.canary.n >= 50 || len(result.warnings) > 0`, high, true, false},
		{`result.canary.median - result.baseline.median > 25`, high, true, false},
		{`result.classification == "Nodata"`, nodata, true, false},
		{`result.pValue == nil`, nodata, true, false},
		// A number that could not be computed is nil: comparing it is an
		// Error measurement, not a silent false.
		{`result.pValue < 0.05`, nodata, false, true},
	}
	for _, tt := range tests {
		got, err := condition.Eval(tt.condition, tt.value)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v (error: %v)", tt.condition, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDisplay(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		res  stats.Result
		want string
	}{
		{"pass", stats.Result{Classification: stats.Pass, PValue: 0.4123, Estimate: -0.31, MeanRatio: 0.997, Canary: stats.SampleStats{N: 60}, Baseline: stats.SampleStats{N: 60}},
			"Pass (p=0.41, shift=-0.31, ratio=1.00)"},
		{"tiny p, big shift", stats.Result{Classification: stats.High, PValue: 3.14e-21, Estimate: 1234.5, MeanRatio: 13, Canary: stats.SampleStats{N: 60}, Baseline: stats.SampleStats{N: 60}},
			"High (p=3.1e-21, shift=+1234, ratio=13.00)"},
		{"undefined ratio", stats.Result{Classification: stats.Low, PValue: 0.001, Estimate: -2, MeanRatio: nan, Canary: stats.SampleStats{N: 60}, Baseline: stats.SampleStats{N: 60}},
			"Low (p=0.001, shift=-2, ratio=n/a)"},
		{"must have data", stats.Result{Classification: stats.NodataFailMetric, Baseline: stats.SampleStats{N: 3}}, "NodataFailMetric (canary n=0, baseline n=3)"},
		{"replace passes an empty side", stats.Result{Classification: stats.Pass, PValue: nan, Canary: stats.SampleStats{N: 3}}, "Pass (canary n=3, baseline n=0)"},
		{"error", stats.Result{Classification: stats.Error}, "Error"},
	}
	for _, tt := range tests {
		if got := judgesource.Display(tt.res); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
