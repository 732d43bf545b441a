package argo

import (
	"encoding/json"
	"strconv"
	"testing"

	argoinflux "github.com/argoproj/argo-rollouts/metricproviders/influxdb"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"

	"github.com/canaryd/canaryd/internal/provider/influxdb"
)

// TestInfluxDBProvider runs Argo Rollouts' InfluxDB provider
// (metricproviders/influxdb, its client built as the controller builds
// it, from the profile's Secret, with influxdb-client-go) and canaryd's
// on every recorded answer of canaryd's InfluxDB tests, with several
// conditions, and holds canaryd to Argo's phase, value and message, but
// for the rows of docs/differences.md that say where canaryd differs.
func TestInfluxDBProvider(t *testing.T) {
	t.Parallel()
	s := newStandIn(t)
	keys := newSecrets(t)
	answers := recorded(t, "influxdb",
		answer{file: "empty.csv", status: 204},
		answer{file: "empty.csv", status: 429},
		answer{file: "not_csv.html", status: 500, ctype: "application/json"})
	templates := make([]string, len(answers))
	for i, a := range answers {
		name := "influx-" + strconv.Itoa(i)
		keys.add(t, name, map[string]string{"address": s.address("influxdb", a), "authToken": "s3cr3t-influx-token-0123456789", "org": "my-org"})
		b, _ := json.Marshal(map[string]string{"profile": name,
			"query": `from(bucket: "app") |> range(start: -5m) |> filter(fn: (r) => r._field == "success_rate") |> last()`})
		templates[i] = string(b)
	}
	kube := keys.kube()
	ours, err := influxdb.New(influxdb.Options{Credentials: keys.dir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.CloseIdleConnections()

	conditions := [][2]string{
		{"result[0] >= 0.99", "result[0] < 0.99"},
		{"all(result, {# >= 0.9})", "any(result, {# < 0.9})"},
		{"len(result) == 3 && result[2] > 0.95", "result[2] <= 0.95"},
		{"result[0] == 42", "result[0] != 42"},
		{"result[0] == nil", "result[0] != nil"},
		{"", ""},
		// A string compared with a number: false, for Argo's
		// []interface{} and for canaryd's list of doubles alike.
		{`result[0] == 'said "ok", twice'`, ""},
	}
	for i, a := range answers {
		t.Run(a.String(), func(t *testing.T) {
			t.Parallel()
			src, _, errs := ours.Source(json.RawMessage(templates[i]))
			if len(errs) > 0 {
				t.Fatalf("canaryd refuses Argo's template %s: %v", templates[i], errs)
			}
			var provider v1alpha1.InfluxdbMetric
			if err := json.Unmarshal([]byte(templates[i]), &provider); err != nil {
				t.Fatal(err)
			}
			for _, conds := range conditions {
				metric := v1alpha1.Metric{Name: "rate", SuccessCondition: conds[0], FailureCondition: conds[1],
					Provider: v1alpha1.MetricProvider{Influxdb: &provider}}
				client, err := argoinflux.NewInfluxdbAPI(metric, kube)
				if err != nil {
					t.Fatal(err)
				}
				want := argoOutcome(argoinflux.NewInfluxdbProvider(client, quiet()).Run(&v1alpha1.AnalysisRun{}, metric))
				got := measureOnce(t, src, conds[0], conds[1])
				compare(t, a, conds, got, want, influxDiffers)
			}
		})
	}
}

// influxDiffers: an answer that is not valid annotated CSV, or that
// holds an error table, is an Error with its reason in canaryd, where
// Argo judges the records read before the fault.
func influxDiffers(a answer, conds [2]string, got, want outcome) (string, bool) {
	switch a.file {
	case "not_csv.html", "no_annotations.csv", "error_table.csv", "malformed.csv", "truncated.csv":
		if a.status == 200 {
			return "an InfluxDB answer that is not valid annotated CSV", got.phase == "Error" && got.message != ""
		}
	}
	return "", false
}
