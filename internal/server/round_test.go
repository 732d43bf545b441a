package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// TestRoundKeys checks that a round has every key, and otherwise the
// analysis' JSON unchanged.
func TestRoundKeys(t *testing.T) {
	now := time.Date(2026, 8, 12, 9, 14, 3, 0, time.UTC)
	a := api.Analysis{
		ID: "x", Phase: api.PhaseSuccessful, StartedAt: &now, CompletedAt: &now,
		MetricResults: []api.MetricResult{{Name: "m", Phase: api.PhaseSuccessful, Count: 1, Successful: 1,
			Measurements: []api.Measurement{{Phase: api.PhaseSuccessful, Value: "1", StartedAt: &now, FinishedAt: &now}}}},
		RunSummary: api.RunSummary{Count: 1, Successful: 1},
	}
	var got, want map[string]any
	data, err := json.Marshal(roundOf(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	plain, _ := json.Marshal(a)
	_ = json.Unmarshal(plain, &want)
	want["message"], want["template"], want["args"] = "", "", map[string]any{}
	m := want["metricResults"].([]any)[0].(map[string]any)
	m["message"], m["metadata"] = "", map[string]any{}
	ms := m["measurements"].([]any)[0].(map[string]any)
	ms["message"], ms["metadata"] = "", map[string]any{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round:\n got %s\nwant %v", data, want)
	}
}
