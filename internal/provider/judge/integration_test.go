package judge_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// The latency fixture: a gauge request_latency_ms per track, one sample
// every 15 s for three hours from latencyStart, each a log-normal value
// around its track's mean with 10% noise from a fixed seed, so that the
// judge's verdicts are the same on every run.
var latencyStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// latencyTracks are the tracks' means: the baseline at 100 ms, a canary
// 30% slower (130 ms: under any sane static threshold), one as fast as the
// baseline, and one that regresses from 100 to 130 ms at 02:00.
var latencyTracks = []struct {
	name string
	mean func(at time.Time) float64
}{
	{"baseline", func(time.Time) float64 { return 100 }},
	{"canary-slow", func(time.Time) float64 { return 130 }},
	{"canary-equal", func(time.Time) float64 { return 100 }},
	{"canary-regressed", func(at time.Time) float64 {
		if at.Before(latencyStart.Add(2 * time.Hour)) {
			return 100
		}
		return 130
	}},
}

func latencyFixture() string {
	var b strings.Builder
	b.WriteString("# TYPE request_latency_ms gauge\n# HELP request_latency_ms Mean request latency (canaryd judge test fixture).\n")
	for i, track := range latencyTracks {
		rng := rand.New(rand.NewPCG(uint64(i+1), 20240301))
		for at := latencyStart; !at.After(latencyStart.Add(3 * time.Hour)); at = at.Add(15 * time.Second) {
			v := track.mean(at) * math.Exp(0.1*rng.NormFloat64()-0.005)
			fmt.Fprintf(&b, "request_latency_ms{track=%q} %s %d\n", track.name, strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64), at.Unix())
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// compilePlan compiles a bare spec against the Prometheus at url, through the
// real Prometheus provider.
func compilePlan(t *testing.T, url, input string) *analysis.Plan {
	t.Helper()
	p, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: url}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	_, compiled, errs := compile.ParseAndCompile([]byte(input), nil, promAndJudge(p.Source))
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return compiled.Plan
}

// judgeMetric is a spec's metric of the judge, comparing track canary
// with track baseline (or with itself offset earlier), over 30 minutes at
// the fixture's 15 s resolution: 121 points a side.
func judgeMetric(name, canary, baseline, extra string) string {
	side := "        baseline: request_latency_ms{track=\"" + baseline + "\"}\n"
	if offset, ok := strings.CutPrefix(baseline, "control:"); ok {
		side = "        control: {offset: " + offset + "}\n"
	}
	return "  - name: " + name + "\n" + extra + "    provider:\n      judge:\n" +
		"        canary: request_latency_ms{track=\"" + canary + "\"}\n" + side +
		"        lookback: 30m\n        step: 15s\n"
}

func TestJudgePrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, latencyFixture())
	at := latencyStart.Add(150 * time.Minute) // 02:30
	static := "  - name: max-under-500ms\n    successCondition: result[0] < 500\n    provider:\n      prometheus:\n" +
		"        query: max_over_time(request_latency_ms{track=\"canary-slow\"}[30m])\n"
	tests := []struct {
		name        string
		metrics     string
		at          time.Time
		wantPhase   api.Phase
		wantClass   string
		wantDisplay string // a prefix
		wantN       [2]int
	}{
		{
			name:      "a canary 30% slower is High, under a static threshold it passes",
			metrics:   judgeMetric("latency", "canary-slow", "baseline", "") + static,
			wantPhase: api.PhaseFailed, wantClass: "High", wantDisplay: "High (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "an equal canary passes",
			metrics:   judgeMetric("latency", "canary-equal", "baseline", "") + static,
			wantPhase: api.PhaseSuccessful, wantClass: "Pass", wantDisplay: "Pass (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "control: the slow canary against itself an hour earlier passes",
			metrics:   judgeMetric("latency", "canary-slow", "control:1h", ""),
			wantPhase: api.PhaseSuccessful, wantClass: "Pass", wantDisplay: "Pass (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "control: a canary that regressed at 02:00 is High against an hour earlier",
			metrics:   judgeMetric("latency", "canary-regressed", "control:1h", ""),
			wantPhase: api.PhaseFailed, wantClass: "High", wantDisplay: "High (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "direction decrease lets a slower canary pass",
			metrics:   strings.Replace(judgeMetric("latency", "canary-slow", "baseline", ""), "        lookback", "        direction: decrease\n        lookback", 1),
			wantPhase: api.PhaseSuccessful, wantClass: "Pass", wantDisplay: "Pass (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "allowedIncrease 1.5: 30% slower is too little to count",
			metrics:   strings.Replace(judgeMetric("latency", "canary-slow", "baseline", ""), "        lookback", "        effectSize: {allowedIncrease: 1.5}\n        lookback", 1),
			wantPhase: api.PhaseSuccessful, wantClass: "Pass", wantDisplay: "Pass (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "a finer condition of the spec's own",
			metrics:   judgeMetric("latency", "canary-slow", "baseline", "    successCondition: result.meanRatio < 1.2 && result.canary.n >= 100\n"),
			wantPhase: api.PhaseFailed, wantClass: "High", wantDisplay: "High (p=", wantN: [2]int{121, 121},
		},
		{
			name:      "Nodata: a canary query that matches nothing is Inconclusive",
			metrics:   judgeMetric("latency", "canary-typo", "baseline", ""),
			wantPhase: api.PhaseInconclusive, wantClass: "Nodata", wantDisplay: "Nodata (canary n=0, baseline n=121)", wantN: [2]int{0, 121},
		},
		{
			name:      "Nodata with mustHaveData is NodataFailMetric: Failed",
			metrics:   strings.Replace(judgeMetric("latency", "canary-typo", "baseline", ""), "        lookback", "        mustHaveData: true\n        lookback", 1),
			wantPhase: api.PhaseFailed, wantClass: "NodataFailMetric", wantDisplay: "NodataFailMetric (canary n=0, baseline n=121)", wantN: [2]int{0, 121},
		},
		{
			name:      "before the data: both sides empty",
			metrics:   judgeMetric("latency", "canary-slow", "baseline", ""),
			at:        latencyStart.Add(-time.Hour),
			wantPhase: api.PhaseInconclusive, wantClass: "Nodata", wantDisplay: "Nodata (canary n=0, baseline n=0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan := compilePlan(t, srv.URL, "metrics:\n"+tt.metrics)
			start := at
			if !tt.at.IsZero() {
				start = tt.at
			}
			// One measurement as of start, in virtual time: what a live
			// run at that instant would have measured.
			a := analysis.Backtest(context.Background(), plan, start, start.Add(time.Minute), analysis.Options{ID: "test"})
			if a.Phase != tt.wantPhase {
				t.Errorf("phase %s (%s), want %s", a.Phase, a.Message, tt.wantPhase)
			}
			r := a.MetricResults[0]
			if len(r.Measurements) != 1 {
				t.Fatalf("measurements: %+v", r.Measurements)
			}
			ms := r.Measurements[0]
			if ms.Metadata["classification"] != tt.wantClass || !strings.HasPrefix(ms.Value, tt.wantDisplay) {
				t.Errorf("measured %q (%s), want %s, %q…", ms.Value, ms.Metadata["classification"], tt.wantClass, tt.wantDisplay)
			}
			if want := start.Add(-30*time.Minute).Format(time.RFC3339) + "/" + start.Format(time.RFC3339); ms.Metadata["canaryWindow"] != want {
				t.Errorf("canary window %q, want %q", ms.Metadata["canaryWindow"], want)
			}
			if ms.Metadata["reason"] == "" {
				t.Error("no reason in the measurement's metadata")
			}
			// The sample sizes, as the conditions see them.
			n := [2]int{}
			if _, err := fmt.Sscanf(sizes(plan, start), "%d %d", &n[0], &n[1]); err != nil || n != tt.wantN {
				t.Errorf("sample sizes %v (%v), want %v", n, err, tt.wantN)
			}
			for _, other := range a.MetricResults[1:] {
				if other.Phase != api.PhaseSuccessful {
					t.Errorf("static metric %s: %s (%s), want Successful: the latency is under 500 ms", other.Name, other.Phase, other.Message)
				}
			}
		})
	}
}

// sizes measures the plan's first metric as of at and says the sizes of
// its two samples.
func sizes(plan *analysis.Plan, at time.Time) string {
	obs := plan.Metrics[0].Source.Measure(context.Background(), at)
	v, ok := obs.Value.(map[string]any)
	if !ok {
		return fmt.Sprintf("no value: %v", obs.Err)
	}
	return fmt.Sprintf("%d %d", v["canary"].(map[string]any)["n"], v["baseline"].(map[string]any)["n"])
}

// TestJudgeBacktest backtests a control-window judge metric across the
// regression of canary-regressed at 02:00: analyses that end before it
// compare the same latency and pass; those whose window holds it fail.
func TestJudgeBacktest(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, latencyFixture())
	plan := compilePlan(t, srv.URL, "metrics:\n"+judgeMetric("latency", "canary-regressed", "control:1h", "    interval: 5m\n    count: 3\n"))
	start, end := latencyStart.Add(80*time.Minute), latencyStart.Add(170*time.Minute)
	results := analysis.BacktestSeries(context.Background(), plan, start, end, 15*time.Minute, analysis.Options{ID: "backtest"})
	var got []string
	for _, r := range results {
		got = append(got, r.Start.Format("15:04")+" "+string(r.Analysis.Phase))
	}
	want := []string{
		"01:20 Successful", "01:35 Successful", // three measurements, the last at 01:30 or 01:45
		"01:50 Successful", // its third, at 02:00, sees one 130 ms point of 121: no shift
		"02:05 Failed",     // its first, at 02:05, sees 21
		"02:20 Failed", "02:35 Failed",
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("backtest:\ngot  %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// TestDefaultFixtureRolloutPair checks the demo's data (promtest's default
// fixture) at instants spread over its whole range, so that docs/judge.md's
// verdicts hold whenever the demo runs: echo-canary is High against
// echo-stable, and neither is High or Low against itself an hour earlier,
// with the demo specs' window (an hour at one point a minute, over
// rate[1m]).
func TestDefaultFixtureRolloutPair(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t)
	metric := func(name, canary, baseline string) string {
		q := func(w string) string { return strconvQuote(promtest.MeanLatencyQuery(w)) }
		side := "        baseline: " + q(baseline) + "\n"
		if baseline == "" {
			side = "        control: {offset: 1h}\n"
		}
		return "  - name: " + name + "\n    provider:\n      judge:\n        canary: " + q(canary) + "\n" + side + "        lookback: 1h\n        step: 1m\n"
	}
	plan := compilePlan(t, srv.URL, "metrics:\n"+
		metric("canary-vs-stable", promtest.CanaryWorkload, promtest.StableWorkload)+
		metric("canary-vs-an-hour-ago", promtest.CanaryWorkload, "")+
		metric("stable-vs-an-hour-ago", promtest.StableWorkload, ""))
	want := []string{"High", "Pass", "Pass"}
	// The controls need their baseline window (and its first rate[1m]) in
	// the data, which starts two hours before srv.Now.
	first, last := srv.Now.Add(2*time.Minute), srv.Now.Add(2*time.Hour)
	checked := 0
	for at := first; !at.After(last); at = at.Add(97 * time.Second) {
		for i, m := range plan.Metrics {
			obs := m.Source.Measure(context.Background(), at)
			if obs.Err != nil {
				t.Fatalf("%s at now%+v: %v", m.Name, at.Sub(srv.Now), obs.Err)
			}
			v := obs.Value.(map[string]any)
			if v["classification"] != want[i] {
				t.Errorf("%s at now%+v: %s, want %s: %s", m.Name, at.Sub(srv.Now).Round(time.Second), obs.Display, want[i], v["reason"])
			}
			if ratio, _ := v["meanRatio"].(float64); i == 0 && math.Abs(ratio-promtest.CanarySlowdown) > 0.05 {
				t.Errorf("%s at now%+v: mean ratio %v, want about %v", m.Name, at.Sub(srv.Now), ratio, promtest.CanarySlowdown)
			}
			checked++
		}
	}
	if checked < 150 {
		t.Errorf("only %d measurements checked", checked)
	}
}

func strconvQuote(s string) string { return strconv.Quote(s) }
