package argo

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	argodd "github.com/argoproj/argo-rollouts/metricproviders/datadog"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"

	"github.com/canaryd/canaryd/internal/provider/datadog"
)

// TestDatadogProvider runs Argo Rollouts' Datadog provider
// (metricproviders/datadog, built as the controller builds it, its keys
// and address read from a Secret) and canaryd's on every recorded answer
// of canaryd's Datadog tests, v1 and v2, with several conditions, and
// holds canaryd to Argo's phase, value and message, but for the rows of
// docs/differences.md that say where canaryd differs.
func TestDatadogProvider(t *testing.T) {
	t.Parallel()
	s := newStandIn(t)
	keys := newSecrets(t)
	const apiKey, appKey = "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef01234567"
	type run struct {
		a        answer
		template string
	}
	// The templates are written with the fields Argo's CRD defaults
	// (apiVersion v1, interval 5m), which the controller's provider
	// reads as the API server stored them.
	templates := map[string]string{
		"v1": `{"query": "avg:kubernetes.cpu.user.total{*}", "apiVersion": "v1", "interval": "5m"}`,
		"v2": `{"queries": {"a": "avg:error_requests{*}", "b": "avg:total_requests{*}"}, "formula": "a/b", "apiVersion": "v2", "interval": "5m"}`,
	}
	var runs []run
	for _, a := range recorded(t, "datadog") {
		for _, v := range []string{"v1", "v2"} {
			if (strings.HasPrefix(a.file, "v1_") || strings.HasPrefix(a.file, "v2_")) && !strings.HasPrefix(a.file, v) {
				continue
			}
			name := "dd-" + strconv.Itoa(len(runs))
			keys.add(t, name, map[string]string{"api-key": apiKey, "app-key": appKey, "address": s.address("datadog", a)})
			var m map[string]any
			_ = json.Unmarshal([]byte(templates[v]), &m)
			m["secretRef"] = map[string]any{"name": name}
			b, _ := json.Marshal(m)
			runs = append(runs, run{a: a, template: string(b)})
		}
	}
	kube := keys.kube()
	ours, err := datadog.New(datadog.Options{Credentials: keys.dir(t), LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.CloseIdleConnections()

	conditions := [][2]string{
		{"result < 0.001", "result >= 0.001"},
		{"default(result, 0) < 0.05", ""},
		{"default(result, 1) < 0.05", ""},
		{"isNil(result)", ""},
		{"result < 0.05", ""},
		{"", ""},
	}
	for _, r := range runs {
		t.Run(r.a.String()+" "+r.template, func(t *testing.T) {
			t.Parallel()
			src, _, errs := ours.Source(json.RawMessage(r.template))
			if len(errs) > 0 {
				t.Fatalf("canaryd refuses Argo's template %s: %v", r.template, errs)
			}
			for _, conds := range conditions {
				// Argo's Run writes v2's query into its queries: a
				// template of its own for each measurement.
				var provider v1alpha1.DatadogMetric
				if err := json.Unmarshal([]byte(r.template), &provider); err != nil {
					t.Fatal(err)
				}
				metric := v1alpha1.Metric{Name: "rate", SuccessCondition: conds[0], FailureCondition: conds[1],
					Provider: v1alpha1.MetricProvider{Datadog: &provider}}
				argo, err := argodd.NewDatadogProvider(quiet(), kube, "", metric)
				if err != nil {
					t.Fatal(err)
				}
				want := argoOutcome(argo.Run(&v1alpha1.AnalysisRun{}, metric))
				got := measureOnce(t, src, conds[0], conds[1])
				compare(t, r.a, conds, got, want, datadogDiffers)
			}
		})
	}
}

// datadogDiffers says which row of docs/differences.md an answer's
// outcome in canaryd follows rather than Argo's, and checks canaryd's.
func datadogDiffers(a answer, _ [2]string, got, want outcome) (string, bool) {
	switch {
	case a.file == "v1_null_value.json":
		// Argo reads the null as 0; canaryd as no data, nil, written as
		// Datadog wrote it.
		return "a Datadog v1 point whose value is `null` is read as 0", want.value == "0" && got.value == "null"
	case strings.Contains(want.message, "cannot unmarshal"):
		return typesRow, sameButTypes(got, want)
	}
	return "", false
}
