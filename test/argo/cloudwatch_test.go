package argo

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	argocw "github.com/argoproj/argo-rollouts/metricproviders/cloudwatch"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	log "github.com/sirupsen/logrus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
)

// TestCloudWatchProvider runs Argo Rollouts' CloudWatch provider
// (metricproviders/cloudwatch, its client built as the controller builds
// it, from the AWS SDK's default chain) and canaryd's on every recorded
// GetMetricData answer, with Argo's documented template and conditions on
// each part of the result, and holds canaryd to Argo's phase, value and
// message.
func TestCloudWatchProvider(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	for k, v := range cloudwatchtest.Env(b.URL(), t.TempDir()) {
		t.Setenv(k, v)
	}
	// Argo's client retries a throttled or failed request up to three
	// times, canaryd's never (docs/differences.md): one attempt each here,
	// so that both see one answer. The SDK's message of an error it would
	// retry then says how many attempts were made, which canaryd's, making
	// one, does not.
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	const attempts = "exceeded maximum number of attempts, 1, "

	var provider v1alpha1.CloudWatchMetric
	if err := json.Unmarshal([]byte(`{"interval": "30m", "metricDataQueries": [
		{"id": "rate", "expression": "errors / requests"},
		{"id": "errors", "metricStat": {"metric": {"namespace": "app", "metricName": "errors"}, "period": 300, "stat": "Sum", "unit": "Count"}, "returnData": false},
		{"id": "requests", "metricStat": {"metric": {"namespace": "app", "metricName": "requests", "dimensions": [{"name": "Service", "value": "checkout"}]}, "period": "300", "stat": "Sum", "unit": "Count"}, "returnData": false}]}`), &provider); err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(provider)
	ours, err := cloudwatch.New(cloudwatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.CloseIdleConnections()
	src, _, errs := ours.Source(config)
	if len(errs) > 0 {
		t.Fatalf("canaryd refuses Argo's template %s: %v", config, errs)
	}

	for _, conds := range [][2]string{
		{"result[0].Values[0] == 0.1", "result[0].Values[0] != 0.1"},
		{"len(result[0].Values) >= 5 and all(result[0].Values, {# <= 0.01})", ""},
		{"", "any(result, {len(.Values) > 0 && .Values[0] > 1})"},
		{"len(result) == 0", ""},
		{`result[0].StatusCode == "PartialData"`, ""},
		{`result[0].Id == "rate" && result[0].Label == "rate"`, ""},
		{"len(result[0].Timestamps) == len(result[0].Values)", ""},
		{"", ""},
	} {
		metric := v1alpha1.Metric{Name: "rate", SuccessCondition: conds[0], FailureCondition: conds[1],
			Provider: v1alpha1.MetricProvider{CloudWatch: &provider}}
		client, err := argocw.NewCloudWatchAPIClient(metric)
		if err != nil {
			t.Fatal(err)
		}
		argo := argocw.NewCloudWatchProvider(client, *log.NewEntry(log.New()))
		judge, cerrs := condition.Compile(conds[0], conds[1])
		if len(cerrs) > 0 {
			t.Fatal(cerrs)
		}
		for _, name := range cloudwatchtest.Answers() {
			b.Set(name, 0)
			want := argo.Run(&v1alpha1.AnalysisRun{}, metric)

			obs := src.Measure(context.Background(), time.Now())
			phase, value, message := api.PhaseError, "", ""
			if obs.Err != nil {
				message = obs.Err.Error()
			} else {
				value = obs.Display
				if phase, err = judge.Judge(obs.Value); err != nil {
					phase, message = api.PhaseError, err.Error()
				}
			}
			want.Message = strings.Replace(want.Message, attempts, "", 1)
			if string(phase) != string(want.Phase) || value != want.Value || message != want.Message {
				t.Errorf("%s, %q / %q:\ncanaryd %s %q %q\nArgo    %s %q %q", name, conds[0], conds[1],
					phase, value, message, want.Phase, want.Value, want.Message)
			}
		}
	}
}
