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

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The history fixture: a day of a baseline's counters before
// historyStart, one sample a minute, 1,000 requests a minute of which 5 on
// average fail, and ten minutes after it:
//
//   - baseline-poisson: independent errors, Poisson(5) a minute, before
//     and after the start;
//   - baseline-bursty: the same mean before the start, in bursts: a tenth
//     of the minutes has Poisson(50) errors, the others none; Poisson(5)
//     after;
//   - baseline-new: no series before the start (a new baseline);
//   - canary: 200 requests a minute from the start, Poisson(1) errors.
var historyStart = time.Date(2024, 4, 2, 0, 0, 0, 0, time.UTC)

func historyFixture() string {
	rng := rand.New(rand.NewPCG(20261128, 1))
	poisson := func(mean float64) int { // Knuth's: the means are small
		l, k, p := math.Exp(-mean), 0, 1.0
		for {
			p *= rng.Float64()
			if p <= l {
				return k
			}
			k++
		}
	}
	var requests, errs strings.Builder
	requests.WriteString("# TYPE app_requests counter\n# HELP app_requests Requests (canaryd counts history fixture).\n")
	errs.WriteString("# TYPE app_errors counter\n# HELP app_errors Failed requests (canaryd counts history fixture).\n")
	for _, track := range []string{"baseline-poisson", "baseline-bursty", "baseline-new", "canary"} {
		var total, bad int
		for at := historyStart.Add(-24 * time.Hour); !at.After(historyStart.Add(10 * time.Minute)); at = at.Add(time.Minute) {
			before := at.Before(historyStart)
			if before && (track == "baseline-new" || track == "canary") {
				continue
			}
			if !at.Equal(historyStart.Add(-24*time.Hour)) && (!at.Equal(historyStart) || !(track == "baseline-new" || track == "canary")) {
				switch {
				case track == "canary":
					total, bad = total+200, bad+poisson(1)
				case track == "baseline-bursty" && before:
					total += 1000
					if rng.IntN(10) == 0 {
						bad += poisson(50)
					}
				default:
					total, bad = total+1000, bad+poisson(5)
				}
			}
			fmt.Fprintf(&requests, "app_requests_total{track=%q} %d %d\n", track, total, at.Unix())
			fmt.Fprintf(&errs, "app_errors_total{track=%q} %d %d\n", track, bad, at.Unix())
		}
	}
	return requests.String() + errs.String() + "# EOF\n"
}

// TestCountsHistoryPrometheus runs docs/judge.md's recipe with a history
// (counts.history) against a real Prometheus holding a day of the
// baseline's counters before the analysis: at the first look, the
// dispersion is near 1 after a day of independent errors and well above
// it after a day of bursts; a baseline without data before the start is
// judged as without a history, and its measurements say so.
func TestCountsHistoryPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.Start(t, historyFixture())
	metric := func(baseline, history string) string {
		side := func(track string) string {
			return fmt.Sprintf("{bad: 'sum(app_errors_total{track=%q})', total: 'sum(app_requests_total{track=%q})'}", track, track)
		}
		return "metrics:\n  - name: errors\n    interval: 1m\n    initialDelay: 1m\n    count: 3\n    provider:\n      judge:\n        counts:\n" +
			"          canary: " + side("canary") + "\n          baseline: " + side(baseline) + "\n" + history
	}
	const day = "          history: {lookback: 24h, step: 5m}\n"
	first := func(t *testing.T, doc string) map[string]string {
		t.Helper()
		a := analysis.Backtest(context.Background(), compilePlan(t, srv.URL, doc), historyStart, historyStart.Add(10*time.Minute), analysis.Options{ID: "history"})
		ms := a.MetricResults[0].Measurements
		if len(ms) == 0 || ms[0].Metadata["looks"] != "1" {
			t.Fatalf("%s: %s; measurements %+v", a.Phase, a.Message, ms)
		}
		return ms[0].Metadata
	}
	dispersion := func(md map[string]string) float64 {
		phi, err := strconv.ParseFloat(md["dispersion"], 64)
		if err != nil {
			t.Fatalf("dispersion %q: %v", md["dispersion"], err)
		}
		t.Logf("the first look: %s", md["reason"]+"; dispersion "+md["dispersion"]+", history intervals "+md["historyIntervals"])
		return phi
	}
	without := dispersion(first(t, metric("baseline-poisson", "")))
	if without < 10 {
		t.Errorf("without a history, the first look's dispersion is %v; want the default prior's, above 10", without)
	}
	md := first(t, metric("baseline-poisson", day))
	if phi := dispersion(md); phi < 1 || phi > 1.5 || md["historyIntervals"] != "288" || md["history"] != "" {
		t.Errorf("a day of independent errors: dispersion %v, want near 1; metadata %v", phi, md)
	}
	md = first(t, metric("baseline-bursty", day))
	if phi := dispersion(md); phi < 3 || md["historyIntervals"] != "288" {
		t.Errorf("a day of bursts: dispersion %v, want above 3; metadata %v", phi, md)
	}
	md = first(t, metric("baseline-new", day))
	if phi := dispersion(md); phi != without || md["historyIntervals"] != "0" || !strings.HasPrefix(md["history"], "no data: ") {
		t.Errorf("a new baseline: dispersion %v, want %v as without a history; metadata %v", phi, without, md)
	}
}
