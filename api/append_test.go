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
