package api_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/apitest"
)

// TestAppendAnalysis holds AppendAnalysis to NewEncoder's bytes for
// analyses of every shape (apitest.Analyses). AppendRound is held to the
// round's (internal/server's TestAppendJSON).
func TestAppendAnalysis(t *testing.T) {
	for _, a := range apitest.Analyses() {
		var want bytes.Buffer
		if err := api.NewEncoder(&want).Encode(a); err != nil {
			t.Fatal(err)
		}
		if got, ok := api.AppendAnalysis(nil, &a); !ok || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("AppendAnalysis(%+v) = %v\n%s\nwant\n%s", a, ok, got, want.Bytes())
		}
	}
}

// TestAppendHandsOver checks that both appenders leave to encoding/json
// what they do not write, and write an analysis that has none of it.
func TestAppendHandsOver(t *testing.T) {
	now := time.Now()
	cases := append(apitest.HandedOver(), apitest.Case{Name: "nothing unknown", Analysis: api.Analysis{StartedAt: &now}})
	for name, appendJSON := range map[string]func([]byte, *api.Analysis) ([]byte, bool){
		"AppendAnalysis": api.AppendAnalysis, "AppendRound": api.AppendRound,
	} {
		for _, c := range cases {
			_, ok := appendJSON(nil, &c.Analysis)
			if want := c.Name == "nothing unknown"; ok != want {
				t.Errorf("%s: %s ok = %v, want %v", c.Name, name, ok, want)
			}
		}
	}
}

// TestAppendJSONKnowsEveryField fails when the api types gain a field:
// the appenders must then write it (and TestAppendAnalysis and
// internal/server's TestAppendJSON cover it), or hand an analysis that has
// it to encoding/json.
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
			t.Errorf("%s has the fields %v; AppendRound and AppendAnalysis know %v: teach them the new ones", typ, fields, known)
		}
	}
}

// FuzzAppendTime holds the times AppendAnalysis and AppendRound write
// (UTC's without the general layout, appendUTC) to encoding/json's, at
// every instant, offset and year: a time they write is written as
// encoding/json writes it, and one they leave to it is one it refuses or
// writes otherwise (an offset with seconds).
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1795917056), int64(290135931), 0)
	f.Add(int64(1795917056), int64(0), 3600)
	f.Add(int64(1795917056), int64(120000000), -19800)
	f.Add(int64(-62135596800), int64(1), 0)         // year 1
	f.Add(int64(-62167219201), int64(0), 0)         // year -1
	f.Add(int64(253402300799), int64(999999999), 0) // the last instant of 9999
	f.Add(int64(253402300800), int64(0), 0)         // 10000
	f.Add(int64(0), int64(100), 61)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		at := time.Unix(sec, nsec).In(time.FixedZone("", offset%(100*3600)))
		for _, tm := range []time.Time{at, at.UTC()} {
			for name, appendJSON := range map[string]func([]byte, *api.Analysis) ([]byte, bool){
				"AppendAnalysis": api.AppendAnalysis, "AppendRound": api.AppendRound,
			} {
				a := api.Analysis{StartedAt: &tm, CompletedAt: &tm, MetricResults: []api.MetricResult{{
					Measurements: []api.Measurement{{StartedAt: &tm, FinishedAt: &tm}}}}}
				got, ok := appendJSON(nil, &a)
				want, err := tm.MarshalJSON()
				_, off := tm.Zone()
				switch {
				case ok && (err != nil || bytes.Count(got, want) != 4):
					t.Errorf("%s wrote %s as %s, encoding/json as %s (%v)", name, tm, got, want, err)
				case !ok && err == nil && off%60 == 0:
					t.Errorf("%s left %s to encoding/json, which writes it %s", name, tm, want)
				}
			}
		}
	})
}
