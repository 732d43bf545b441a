// Package apitest holds analyses of every shape, for the tests of what
// writes the api types as JSON without encoding/json's reflection
// (api.AppendAnalysis, api.AppendRound) and of the answers written with
// them (internal/server).
package apitest

import (
	"math/rand/v2"
	"time"

	"github.com/canaryd/canaryd/api"
)

// Analyses are analyses of every shape: phases, omitted and present
// times, zones, empty and nil lists and maps, metadata of none, one and
// several keys, measurements running, pending and in error, and strings
// with every kind of character encoding/json escapes, random bytes
// included.
func Analyses() []api.Analysis {
	utc := time.Date(2026, 11, 28, 14, 4, 21, 348814389, time.UTC)
	zoned := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	whole := time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.FixedZone("", -(5*3600+30*60)))
	strs := []string{"", "plain", `quote " and \ backslash`, "<html> & more", "line\nfeed\r\ttab\b\f", "\x00\x01\x1f\x7f",
		"héllo wörld ✓ 🐤", "bad \xff utf-8 \xc3", "line\u2028sep\u2029", "Metric \"non-5xx-rate\" assessed Failed: [0.94]"}
	var cases []api.Analysis
	for i, s := range strs {
		at := []*time.Time{&utc, &zoned, &whole, nil}[i%4]
		for _, meta := range []map[string]string{
			[]map[string]string{nil, {}, {"k": s}, {s: s, "b" + s: "", "a": s}}[i%4],
			{s: s, "b" + s: "", "a": s},
		} {
			cases = append(cases, api.Analysis{ID: s, Phase: api.PhaseSuccessful, Message: s, StartedAt: at, CompletedAt: at,
				RunSummary: api.RunSummary{Count: 1, Successful: 1}, DryRunSummary: api.RunSummary{Count: int32(i), Error: -1},
				Template: s, Kind: s, Series: s, Args: meta,
				MetricResults: []api.MetricResult{{Name: s, Phase: api.PhaseFailed, Message: s, Count: 1, Failed: 1, ConsecutiveError: 2,
					ConsecutiveSuccess: 3, Inconclusive: 4, Error: 5, Successful: 6, DryRun: i%2 == 0, Metadata: meta,
					Measurements: []api.Measurement{{Phase: api.PhaseFailed, Message: s, StartedAt: at, FinishedAt: &utc, Value: s,
						Metadata: meta}, {Phase: api.PhaseRunning, StartedAt: &utc}, {Phase: api.PhaseError}}},
					{Name: "pending", Phase: api.PhasePending, Measurements: []api.Measurement{}}, {Name: "nil"}},
			})
		}
	}
	cases = append(cases, api.Analysis{}, api.Analysis{ID: "r", Phase: api.PhaseError, MetricResults: []api.MetricResult{}})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 400 {
		raw := make([]byte, rng.IntN(24))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		s := string(raw)
		cases = append(cases, api.Analysis{ID: s, Message: s, Args: map[string]string{s: s},
			MetricResults: []api.MetricResult{{Name: s, Measurements: []api.Measurement{{Value: s, Metadata: map[string]string{"x": s}}}}}})
	}
	return cases
}

// HandedOver are analyses, by what is in them, that api.AppendAnalysis
// and api.AppendRound leave to encoding/json: fields they do not write,
// and times that encoding/json refuses (a year past 9999) or writes its
// own way (an offset with seconds).
func HandedOver() []Case {
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	odd := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("LMT", 17*60+30))
	return []Case{
		{Name: "a webhook", Analysis: api.Analysis{Webhook: &api.WebhookStatus{URL: "http://x"}}},
		{Name: "a score", Analysis: api.Analysis{Score: &api.Score{}}},
		{Name: "a reason", Analysis: api.Analysis{Reason: "why"}},
		{Name: "phases in the list", Analysis: api.Analysis{Measured: []api.MetricPhases{{Metric: "m", Phases: "S"}}}},
		{Name: "a year past 9999", Analysis: api.Analysis{StartedAt: &far}, Refused: true},
		{Name: "an offset with seconds", Analysis: api.Analysis{CompletedAt: &odd}, Refused: true},
		{Name: "a measurement's year", Refused: true,
			Analysis: api.Analysis{MetricResults: []api.MetricResult{{Measurements: []api.Measurement{{FinishedAt: &far}}}}}},
		{Name: "a measurement's odd offset", Refused: true,
			Analysis: api.Analysis{MetricResults: []api.MetricResult{{Measurements: []api.Measurement{{StartedAt: &odd}}}}}},
	}
}

// Case is an analysis of HandedOver.
type Case struct {
	Name     string
	Analysis api.Analysis
	// Refused is set on the times: encoding/json refuses them or writes
	// them its own way, so there is no body to compare.
	Refused bool
}
