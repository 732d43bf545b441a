package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The incident fixture: a day of requests to namespace "shop" on
// 2024-03-01, 0.5% of them 5xx, except from 14:00 to 14:30 UTC, when 5%
// are. Its verdicts at known times are known.
var (
	dayStart      = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	incidentStart = time.Date(2024, 3, 1, 14, 0, 0, 0, time.UTC)
	incidentEnd   = time.Date(2024, 3, 1, 14, 30, 0, 0, time.UTC)
)

// incidentFixture writes the day as OpenMetrics: counters of the seed's
// istio_requests_total, 200 requests every 15 s.
func incidentFixture() string {
	var b strings.Builder
	b.WriteString("# TYPE istio_requests counter\n")
	labels := `reporter="destination",destination_workload_namespace="shop",response_code=%q`
	for _, code := range []string{"200", "500"} {
		total := 0.0
		for at := dayStart; at.Before(dayStart.Add(24 * time.Hour)); at = at.Add(15 * time.Second) {
			errors := 1.0
			if !at.Before(incidentStart) && at.Before(incidentEnd) {
				errors = 10
			}
			if code == "200" {
				total += 200 - errors
			} else {
				total += errors
			}
			fmt.Fprintf(&b, "istio_requests_total{"+labels+"} %g %d\n", code, total, at.Unix())
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

func TestBacktestEndToEnd(t *testing.T) {
	prom := promtest.StartConfig(t, promtest.Config{Fixtures: []string{incidentFixture()}})
	seed := fastSeed(t) // interval 100ms; backtests run the seed's own 30 s below
	seed30 := writeSpec(t, "seed30.yaml", strings.Replace(readFile(t, seed), "interval: 100ms", "interval: 30s", 1))

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantPhases []api.Phase
		wantStarts []string
	}{
		{"a good hour passes", []string{"--start", "2024-03-01T10:00:00Z", "--end", "2024-03-01T11:00:00Z"},
			0, []api.Phase{api.PhaseSuccessful}, []string{"2024-03-01T10:00:00Z"}},
		{"the incident is caught", []string{"--start", "2024-03-01T14:10:00Z", "--end", "2024-03-01T15:00:00Z"},
			1, []api.Phase{api.PhaseFailed}, []string{"2024-03-01T14:10:00Z"}},
		{"sliding across the afternoon shows where it fires", []string{"--start", "2024-03-01T13:00:00Z", "--end", "2024-03-01T16:00:00Z", "--every", "30m"},
			1,
			// 14:30 still fails: its rate[1m] windows reach back into the incident.
			[]api.Phase{api.PhaseSuccessful, api.PhaseSuccessful, api.PhaseFailed, api.PhaseFailed, api.PhaseSuccessful, api.PhaseSuccessful},
			[]string{"2024-03-01T13:00:00Z", "2024-03-01T13:30:00Z", "2024-03-01T14:00:00Z", "2024-03-01T14:30:00Z", "2024-03-01T15:00:00Z", "2024-03-01T15:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"backtest", "-f", seed30, "--arg", "namespace=shop", "--prometheus-url", prom.URL}, tt.args...)
			got := runCLI(t, "", args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", got.code, tt.wantCode, got.stderr)
			}
			var phases []api.Phase
			var starts []string
			if strings.Contains(strings.Join(tt.args, " "), "--every") {
				var series struct {
					Results []struct {
						Start    time.Time    `json:"start"`
						Analysis api.Analysis `json:"analysis"`
					} `json:"results"`
				}
				if err := json.Unmarshal([]byte(got.stdout), &series); err != nil {
					t.Fatalf("stdout: %v\n%s", err, got.stdout)
				}
				for _, r := range series.Results {
					phases = append(phases, r.Analysis.Phase)
					starts = append(starts, r.Start.UTC().Format(time.RFC3339))
				}
			} else {
				var a api.Analysis
				if err := json.Unmarshal([]byte(got.stdout), &a); err != nil {
					t.Fatalf("stdout: %v\n%s", err, got.stdout)
				}
				phases = append(phases, a.Phase)
				starts = append(starts, a.StartedAt.UTC().Format(time.RFC3339))
				if a.Phase == api.PhaseSuccessful && a.MetricResults[0].Count != 3 {
					t.Errorf("count %d, want the seed's 3", a.MetricResults[0].Count)
				}
				for _, m := range a.MetricResults[0].Measurements {
					var v []float64
					if err := json.Unmarshal([]byte(m.Value), &v); err != nil || len(v) != 1 {
						t.Fatalf("value %q: %v", m.Value, err)
					}
					// The fixture's rates: 0.995 outside the incident, 0.95 in it.
					if healthy := v[0] > 0.99; healthy != (a.Phase == api.PhaseSuccessful) {
						t.Errorf("measured %v at %v in a %s analysis", v[0], m.StartedAt, a.Phase)
					}
				}
			}
			if fmt.Sprint(phases) != fmt.Sprint(tt.wantPhases) || fmt.Sprint(starts) != fmt.Sprint(tt.wantStarts) {
				t.Errorf("got %v at %v\nwant %v at %v\n%s", phases, starts, tt.wantPhases, tt.wantStarts, got.stderr)
			}
			if !strings.Contains(got.stderr, "START") || !strings.Contains(got.stderr, "PHASE") {
				t.Errorf("no table on stderr:\n%s", got.stderr)
			}
		})
	}
}

func TestBacktestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"backtest", "-f", "x.yaml"}, "--start: required"},
		{[]string{"backtest", "-f", "x.yaml", "--start", "yesterday"}, `--start: "yesterday" is not a time`},
		{[]string{"backtest", "-f", "x.yaml", "--start", "-1h", "--end", "-2h"}, "must be after --start"},
	}
	for _, tt := range tests {
		got := runCLI(t, "", tt.args...)
		if got.code != exitUsage || !strings.Contains(got.stderr, tt.want) {
			t.Errorf("%v: exit %d stderr %q, want 64 and %q", tt.args, got.code, got.stderr, tt.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := readAll(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
