package judge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The counts fixture: exact counters app_requests_total and
// app_errors_total per track, one sample every 15 s for an hour from
// countsDataStart. Every 15 s the baseline serves 250 requests and 1 error
// (0.4%); each canary 50 requests and:
//
//   - canary-bad: 1 error (2%: five times the baseline's rate);
//   - canary-aa: 1 error every fifth sample (0.4%, the baseline's rate);
//   - canary-reset: as canary-aa, its process restarting right after the
//     sample at countsStart+4m45s: its counters count from zero again;
//   - canary-late: as canary-aa, from countsStart+3m only (no series
//     before: no traffic yet).
var (
	countsDataStart = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	countsStart     = countsDataStart.Add(10 * time.Minute) // the analyses'
)

func countsFixture() string {
	var b strings.Builder
	b.WriteString("# TYPE app_requests counter\n# HELP app_requests Requests (canaryd counts test fixture).\n")
	var errs strings.Builder
	errs.WriteString("# TYPE app_errors counter\n# HELP app_errors Failed requests (canaryd counts test fixture).\n")
	reset := countsStart.Add(4*time.Minute + 45*time.Second)
	late := countsStart.Add(3 * time.Minute)
	for _, track := range []string{"baseline", "canary-bad", "canary-aa", "canary-reset", "canary-late"} {
		var requests, failed int
		for i, at := 0, countsDataStart; !at.After(countsDataStart.Add(time.Hour)); i, at = i+1, at.Add(15*time.Second) {
			if track == "canary-late" && at.Before(late) {
				continue
			}
			if i > 0 {
				switch track {
				case "baseline":
					requests, failed = requests+250, failed+1
				case "canary-bad":
					requests, failed = requests+50, failed+1
				default:
					requests += 50
					if i%5 == 0 {
						failed++
					}
				}
			}
			fmt.Fprintf(&b, "app_requests_total{track=%q} %d %d\n", track, requests, at.Unix())
			fmt.Fprintf(&errs, "app_errors_total{track=%q} %d %d\n", track, failed, at.Unix())
			if track == "canary-reset" && at.Equal(reset) {
				requests, failed = 0, 0
			}
		}
	}
	return b.String() + errs.String() + "# EOF\n"
}

// countsMetric is a spec's counts metric of canary against the baseline:
// ten looks, a minute apart, from a minute after the analysis' start.
func countsMetric(canary, extra string) string {
	side := func(track string) string {
		return fmt.Sprintf("{bad: 'sum(app_errors_total{track=%q})', total: 'sum(app_requests_total{track=%q})'}", track, track)
	}
	return "  - name: errors\n    interval: 1m\n    initialDelay: 1m\n    count: 10\n" + extra +
		"    provider:\n      judge:\n        counts:\n          canary: " + side(canary) + "\n          baseline: " + side("baseline") + "\n"
}

func TestCountsPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, countsFixture())
	tests := []struct {
		name      string
		canary    string
		extra     string
		wantPhase api.Phase
		// wantValues are prefixes of the first measurements' values, in
		// order; wantLast of the last measurement's, wantPhases their
		// phases when given.
		wantValues []string
		wantLast   string
		check      func([]api.Measurement) error
	}{
		{
			name: "a canary with five times the baseline's error rate fails", canary: "canary-bad", wantPhase: api.PhaseFailed,
			wantValues: []string{"continue at look 1: canary 4 bad of 200, baseline 4 of 1,000; rate ratio 5 [0, ∞]"},
			wantLast:   "Failed at look ",
		},
		{
			name: "A/A ends Successful at the last look", canary: "canary-aa", wantPhase: api.PhaseSuccessful,
			wantValues: []string{
				"continue at look 1: canary 0 bad of 200, baseline 4 of 1,000",
				"continue at look 2: canary 1 bad of 400, baseline 8 of 2,000",
				"continue at look 3", "continue at look 4", "continue at look 5", "continue at look 6", "continue at look 7",
				"continue at look 8", "continue at look 9",
			},
			wantLast: "Successful at look 10 (the last): canary 8 bad of 2,000, baseline 40 of 10,000; rate ratio 1 [",
		},
		{
			// Read at the look's resolution the reset would lose what
			// came before it since the last look: 150 requests.
			name: "a counter reset mid-analysis counts from zero again: the counts are exact", canary: "canary-reset", wantPhase: api.PhaseSuccessful,
			wantValues: []string{
				"continue at look 1: canary 0 bad of 200", "continue at look 2", "continue at look 3", "continue at look 4",
				"continue at look 5: canary 4 bad of 1,000", "continue at look 6: canary 4 bad of 1,200",
				"continue at look 7", "continue at look 8", "continue at look 9",
			},
			wantLast: "Successful at look 10 (the last): canary 8 bad of 2,000, baseline 40 of 10,000",
		},
		{
			name: "no traffic yet: the canary's series appear after three minutes", canary: "canary-late", wantPhase: api.PhaseSuccessful,
			wantValues: []string{
				"continue (no data) at look 1: canary 0 bad of 0, baseline 4 of 1,000",
				"continue (no data) at look 2: canary 0 bad of 0",
				"continue at look 3: canary 0 bad of 50", "continue at look 4: canary 1 bad of 250",
			},
			wantLast: "Successful at look 10 (the last): canary 6 bad of 1,450",
		},
		{
			name: "no data: a canary that matches nothing ends Inconclusive", canary: "canary-typo", wantPhase: api.PhaseInconclusive,
			wantValues: []string{
				"continue (no data) at look 1: canary 0 bad of 0, baseline 4 of 1,000", "continue (no data) at look 2",
				"continue (no data) at look 3", "continue (no data) at look 4", "continue (no data) at look 5",
				"continue (no data) at look 6", "continue (no data) at look 7", "continue (no data) at look 8",
				"continue (no data) at look 9",
			},
			wantLast: "Inconclusive at look 10 (the last): canary 0 bad of 0, baseline 40 of 10,000",
		},
		{
			// Look 1's e-value is far under 1000, and the test fails
			// (e-value ≥ 20) a look or more before it passes 1000.
			name: "conditions of the spec's own see the evidence: fail only past an e-value of 1000", canary: "canary-bad",
			extra:      "    successCondition: result.ratio.upper == nil || result.eValue < 1000\n",
			wantPhase:  api.PhaseFailed,
			wantValues: []string{"continue at look 1"},
			wantLast:   "Failed at look ",
			check: func(ms []api.Measurement) error {
				first := slices.IndexFunc(ms, func(m api.Measurement) bool { return strings.HasPrefix(m.Value, "Failed") })
				if first < 0 || first == len(ms)-1 || ms[first].Phase != api.PhaseSuccessful || ms[len(ms)-1].Phase != api.PhaseFailed {
					return fmt.Errorf("want a Failed decision measured Successful (e-value under 1000), then Failed")
				}
				return nil
			},
		},
		{
			name: "dryRun: a failing canary's verdict does not count", canary: "canary-bad", wantPhase: api.PhaseSuccessful,
			wantLast: "Failed at look ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := "metrics:\n" + countsMetric(tt.canary, tt.extra)
			if strings.HasPrefix(tt.name, "dryRun") {
				doc += "dryRun: [{metricName: errors}]\n"
			}
			plan := compilePlan(t, srv.URL, doc)
			a := analysis.Backtest(context.Background(), plan, countsStart, countsStart.Add(time.Hour), analysis.Options{ID: "counts"})
			if a.Phase != tt.wantPhase {
				t.Errorf("phase %s (%s), want %s", a.Phase, a.Message, tt.wantPhase)
			}
			ms := a.MetricResults[0].Measurements
			var got []string
			for _, m := range ms {
				got = append(got, m.Value)
			}
			if len(ms) < len(tt.wantValues) {
				t.Fatalf("measurements:\n%s", strings.Join(got, "\n"))
			}
			if testing.Verbose() {
				t.Logf("measurements:\n%s", strings.Join(got, "\n"))
			}
			for i, want := range tt.wantValues {
				if !strings.HasPrefix(ms[i].Value, want) {
					t.Errorf("measurement %d: %q, want %q…", i+1, ms[i].Value, want)
				}
				if ms[i].Metadata["reason"] == "" || ms[i].Metadata["classification"] == "" {
					t.Errorf("measurement %d: metadata %v", i+1, ms[i].Metadata)
				}
			}
			if last := ms[len(ms)-1].Value; !strings.HasPrefix(last, tt.wantLast) {
				t.Errorf("the last measurement: %q, want %q…", last, tt.wantLast)
			}
			if tt.check != nil {
				if err := tt.check(ms); err != nil {
					t.Errorf("%v:\n%s", err, strings.Join(got, "\n"))
				}
			}
			if want := countsStart.Format(time.RFC3339) + "/"; !strings.HasPrefix(ms[0].Metadata["canaryWindow"], want) {
				t.Errorf("window %q, want from the analysis' start", ms[0].Metadata["canaryWindow"])
			}
		})
	}
}
