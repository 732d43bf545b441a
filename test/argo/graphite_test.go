package argo

import (
	"encoding/json"
	"strings"
	"testing"

	argographite "github.com/argoproj/argo-rollouts/metricproviders/graphite"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"

	"github.com/canaryd/canaryd/internal/provider/graphite"
)

// TestGraphiteProvider runs Argo Rollouts' Graphite provider
// (metricproviders/graphite, its client built as the controller builds
// it, from the template's address) and canaryd's on every recorded answer
// of canaryd's Graphite tests, with several conditions, and holds canaryd
// to Argo's phase, value and message, but for the rows of
// docs/differences.md that say where canaryd differs.
func TestGraphiteProvider(t *testing.T) {
	t.Parallel()
	s := newStandIn(t)
	answers := recorded(t, "graphite")
	templates := make([]string, len(answers))
	for i, a := range answers {
		b, _ := json.Marshal(map[string]string{"address": s.address("graphite", a), "query": "target=sumSeries(app.http.*.*.count)&from=-2min"})
		templates[i] = string(b)
	}
	ours, err := graphite.New(graphite.Options{Allow: []string{s.srv.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.CloseIdleConnections()

	conditions := [][2]string{
		{"10.000000 in result", "10.000000 not in result"}, // Argo's tests'
		{"result[0] >= 0.1", ""},
		{"result[0] == 0.1 && result[1] == 0.25 && len(result) == 2", ""},
		{"len(result) == 0", ""},
		{"len(result) == 2 && result[1] == 2", ""},
		{"", ""},
	}
	for i, a := range answers {
		t.Run(a.String(), func(t *testing.T) {
			t.Parallel()
			src, _, errs := ours.Source(json.RawMessage(templates[i]))
			if len(errs) > 0 {
				t.Fatalf("canaryd refuses Argo's template %s: %v", templates[i], errs)
			}
			var provider v1alpha1.GraphiteMetric
			if err := json.Unmarshal([]byte(templates[i]), &provider); err != nil {
				t.Fatal(err)
			}
			for _, conds := range conditions {
				metric := v1alpha1.Metric{Name: "rate", SuccessCondition: conds[0], FailureCondition: conds[1],
					Provider: v1alpha1.MetricProvider{Graphite: &provider}}
				client, err := argographite.NewAPIClient(metric, quiet())
				if err != nil {
					t.Fatal(err)
				}
				want := argoOutcome(argographite.NewGraphiteProvider(client, quiet()).Run(&v1alpha1.AnalysisRun{}, metric))
				got := measureOnce(t, src, conds[0], conds[1])
				compare(t, a, conds, got, want, graphiteDiffers)
			}
		})
	}
}

// graphiteDiffers: a body that does not decode is the same Error, its
// message saying what canaryd expected after "the answer is not
// Graphite's JSON: ", where Argo's gives encoding/json's or strconv's
// words alone.
func graphiteDiffers(_ answer, _ [2]string, got, want outcome) (string, bool) {
	if want.phase != "Error" || want.value != "" {
		return "", false
	}
	return typesRow, got.phase == want.phase && got.value == "" && strings.HasPrefix(got.message, "the answer is not Graphite's JSON: ")
}
