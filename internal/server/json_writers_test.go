package server

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// jsonWriter is one of the writers that answer without encoding/json's
// reflection (writeRound, writeAnalysis): its appender, its writer, what
// writeJSON would write in its place, and the status it is tested with.
type jsonWriter struct {
	name    string
	append  func([]byte, *api.Analysis) ([]byte, bool)
	write   func(http.ResponseWriter, int, api.Analysis)
	encoded func(api.Analysis) any
	status  int
}

var jsonWriters = []jsonWriter{
	{"appendRound", appendRound, writeRound, func(a api.Analysis) any { return roundOf(a) }, http.StatusOK},
	{"appendAnalysis", appendAnalysis, writeAnalysis, func(a api.Analysis) any { return a }, http.StatusAccepted},
}

// encodedBy is what writeJSON writes in w's place for a.
func encodedBy(t *testing.T, w jsonWriter, a api.Analysis) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := api.NewEncoder(&buf).Encode(w.encoded(a)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jsonCases are analyses of every shape: phases, omitted and present
// times, zones, empty and nil lists and maps, metadata of none, one and
// several keys, measurements running, pending and in error, and strings
// with every kind of character encoding/json escapes, random bytes
// included.
func jsonCases() []api.Analysis {
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

// TestAppendJSON holds each writer to encoding/json's bytes for analyses
// of every shape (jsonCases).
func TestAppendJSON(t *testing.T) {
	cases := jsonCases()
	for _, w := range jsonWriters {
		for _, a := range cases {
			got, ok := w.append(nil, &a)
			if want := encodedBy(t, w, a); !ok || !bytes.Equal(got, want) {
				t.Errorf("%s(%+v) = %v\n%s\nwant\n%s", w.name, a, ok, got, want)
			}
		}
	}
}

// TestAppendJSONHandsOver checks that what a writer does not write goes
// to encoding/json, and that the writer answers the same bytes either way.
func TestAppendJSONHandsOver(t *testing.T) {
	now := time.Now()
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	odd := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("LMT", 17*60+30))
	for _, w := range jsonWriters {
		for name, a := range map[string]api.Analysis{
			"a webhook":                    {Webhook: &api.WebhookStatus{URL: "http://x"}},
			"a score":                      {Score: &api.Score{}},
			"a reason":                     {Reason: "why"},
			"phases in the list":           {Measured: []api.MetricPhases{{Metric: "m", Phases: "S"}}},
			"a year past 9999":             {StartedAt: &far},
			"an offset with seconds":       {CompletedAt: &odd},
			"a measurement's year":         {MetricResults: []api.MetricResult{{Measurements: []api.Measurement{{FinishedAt: &far}}}}},
			"a measurement's odd offset":   {MetricResults: []api.MetricResult{{Measurements: []api.Measurement{{StartedAt: &odd}}}}},
			"nothing unknown (the writer)": {StartedAt: &now},
		} {
			_, ok := w.append(nil, &a)
			if want := name == "nothing unknown (the writer)"; ok != want {
				t.Errorf("%s: %s ok = %v, want %v", name, w.name, ok, want)
			}
			if a.StartedAt == &far || a.CompletedAt == &odd || len(a.MetricResults) > 0 {
				continue // encoding/json refuses these or writes them its way: no body to compare
			}
			rec := httptest.NewRecorder()
			w.write(rec, w.status, a)
			if want := encodedBy(t, w, a); !bytes.Equal(rec.Body.Bytes(), want) || rec.Header().Get("Content-Type") != jsonContentType ||
				rec.Code != w.status {
				t.Errorf("%s: %s's writer wrote %d %s (%s), want %s", name, w.name, rec.Code, rec.Body, rec.Header().Get("Content-Type"), want)
			}
		}
	}
}

// TestAppendJSONKnowsEveryField fails when the api types gain a field:
// the writers must then write it (and TestAppendJSON cover it), or hand
// an analysis that has it to encoding/json.
func TestAppendJSONKnowsEveryField(t *testing.T) {
	for typ, known := range map[reflect.Type][]string{
		reflect.TypeFor[api.Analysis](): {"ID", "Phase", "Message", "StartedAt", "CompletedAt", "MetricResults", "RunSummary",
			"DryRunSummary", "Template", "Args", "Kind", "Series", "Webhook", "Score", "Reason", "Measured"},
		reflect.TypeFor[api.MetricResult](): {"Name", "Phase", "Message", "Count", "Successful", "Failed", "Inconclusive", "Error",
			"ConsecutiveError", "ConsecutiveSuccess", "DryRun", "Metadata", "Measurements"},
		reflect.TypeFor[api.Measurement](): {"Phase", "Message", "StartedAt", "FinishedAt", "Value", "Metadata"},
		reflect.TypeFor[api.RunSummary]():  {"Count", "Successful", "Failed", "Inconclusive", "Error"},
	} {
		var fields []string
		for i := range typ.NumField() {
			fields = append(fields, typ.Field(i).Name)
		}
		slices.Sort(fields)
		slices.Sort(known)
		if !slices.Equal(fields, known) {
			t.Errorf("%s has the fields %v; appendRound and appendAnalysis know %v: teach them the new ones", typ, fields, known)
		}
	}
}
