package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/store"
)

// queriedSources measure at once the number the query is: "1" passes
// `result[0] >= 0.99`, "0.5" fails it.
func queriedSources(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	v, err := strconv.ParseFloat(m.Query, 64)
	if err != nil {
		return nil, nil, []api.FieldError{{Field: "query", Message: err.Error()}}
	}
	return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{Value: []float64{v}, Display: "[" + m.Query + "]"}
	}), nil, nil
}

// TestListReasonAndMeasured checks what the list gives in place of the
// measurements: each analysis' report sentence, the one GET
// /v1/analyses/{id} leads its HTML report with, and per metric the
// phases of its newest measurements, at most 30, with how many came
// before; with or without ?measurements=true, and as openapi.yaml says
// (every response of these tests is checked against it).
func TestListReasonAndMeasured(t *testing.T) {
	s := start(t, options{sources: queriedSources})
	failed := s.do(http.MethodPost, "/v1/analyses?wait=true", yamlType, `metrics:
- name: error-budget
  interval: 5ms
  count: 3
  failureLimit: 1
  successCondition: result[0] >= 0.99
  provider: {prometheus: {query: "0.5"}}
- name: latency
  interval: 5ms
  count: 2
  successCondition: result[0] >= 0.99
  provider: {prometheus: {query: "1"}}
`).analysis(t)
	long := s.do(http.MethodPost, "/v1/analyses?wait=true", yamlType, `metrics:
- name: steady
  interval: 2ms
  count: 40
  successCondition: result[0] >= 0.99
  provider: {prometheus: {query: "1"}}
- name: kept-ten
  interval: 2ms
  count: 12
  successCondition: result[0] >= 0.99
  provider: {prometheus: {query: "1"}}
measurementRetention:
- metricName: steady
  limit: 40
`).analysis(t)
	if failed.Phase != api.PhaseFailed || long.Phase != api.PhaseSuccessful {
		t.Fatalf("the analyses are %s and %s, want Failed and Successful", failed.Phase, long.Phase)
	}

	for _, query := range []string{"", "?measurements=true"} {
		var list server.AnalysisList
		mustJSON(t, s.do(http.MethodGet, "/v1/analyses"+query, "", "").body, &list)
		byID := map[string]api.Analysis{}
		for _, a := range list.Analyses {
			byID[a.ID] = a
		}
		f, l := byID[failed.ID], byID[long.ID]

		report := string(s.do(http.MethodGet, "/v1/analyses/"+failed.ID, "", "", "Accept", "text/html").body)
		if f.Reason == "" || !strings.Contains(report, `id="reason">`+htmlEscape(f.Reason)+`<`) {
			t.Errorf("list%s: the failed analysis' reason %q is not the sentence its report leads with", query, f.Reason)
		}
		for _, want := range []string{"Failed: ", `"error-budget"`, "0.5", `successCondition "result[0] >= 0.99" was false`, "failed (2) > failureLimit (1)"} {
			if !strings.Contains(f.Reason, want) {
				t.Errorf("list%s: the failed analysis' reason %q does not say %q", query, f.Reason, want)
			}
		}
		if !strings.HasPrefix(l.Reason, "Successful: all 2 metrics passed (52 measurements)") {
			t.Errorf("list%s: the successful analysis' reason %q", query, l.Reason)
		}

		want := []api.MetricPhases{{Metric: "error-budget", Phases: "FF"}, {Metric: "latency", Phases: "SS"}}
		if !equalPhases(f.Measured, want) {
			t.Errorf("list%s: the failed analysis measured %+v, want %+v", query, f.Measured, want)
		}
		want = []api.MetricPhases{
			{Metric: "steady", Phases: strings.Repeat("S", api.MaxListPhases), More: 40 - api.MaxListPhases},
			{Metric: "kept-ten", Phases: strings.Repeat("S", analysis.DefaultMeasurementRetention), More: 12 - analysis.DefaultMeasurementRetention},
		}
		if !equalPhases(l.Measured, want) {
			t.Errorf("list%s: the long analysis measured %+v, want %+v", query, l.Measured, want)
		}
	}

	// One analysis as GET gives it has neither: they stand in for the
	// measurements in the list only.
	if a := s.do(http.MethodGet, "/v1/analyses/"+failed.ID, "", "").analysis(t); a.Reason != "" || a.Measured != nil {
		t.Errorf("GET /v1/analyses/{id} has reason %q, measured %+v", a.Reason, a.Measured)
	}
}

// TestListReasonFromStore checks the list of a store's analyses: the
// replica that ran one gives its report's sentence, and another, which
// does not hold its plan, the sentence its report gives from the
// resource alone; both with its metric's phases.
func TestListReasonFromStore(t *testing.T) {
	st := store.NewMemory(store.Options{Shared: true})
	a := start(t, options{sources: queriedSources, store: st})
	b := start(t, options{sources: queriedSources, store: st})
	failed := a.do(http.MethodPost, "/v1/analyses?wait=true", yamlType, `metrics:
- name: error-budget
  interval: 5ms
  count: 3
  successCondition: result[0] >= 0.99
  provider: {prometheus: {query: "0.5"}}
`).analysis(t)
	for _, tc := range []struct {
		replica string
		s       *testServer
		want    string
	}{
		{"a, which ran it", a, `successCondition "result[0] >= 0.99" was false; failed (1) > failureLimit (0).`},
		{"b, without its plan", b, `Failed: metric "error-budget" measured [0.5] at `},
	} {
		var list server.AnalysisList
		mustJSON(t, tc.s.do(http.MethodGet, "/v1/analyses", "", "").body, &list)
		if len(list.Analyses) != 1 || list.Analyses[0].ID != failed.ID {
			t.Fatalf("replica %s lists %+v, want the failed analysis", tc.replica, list.Analyses)
		}
		got := list.Analyses[0]
		if !strings.Contains(got.Reason, tc.want) || strings.Contains(got.Reason, `Condition ""`) {
			t.Errorf("replica %s: reason %q, want it to say %q", tc.replica, got.Reason, tc.want)
		}
		if want := []api.MetricPhases{{Metric: "error-budget", Phases: "F"}}; !equalPhases(got.Measured, want) {
			t.Errorf("replica %s: measured %+v, want %+v", tc.replica, got.Measured, want)
		}
	}
}

func equalPhases(got, want []api.MetricPhases) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// htmlEscape escapes s as html/template writes text.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
