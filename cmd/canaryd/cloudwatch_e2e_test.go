package main

import (
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
)

// cloudWatchSpec is Argo's documented CloudWatch template, measured once.
const cloudWatchSpec = `metrics:
- name: success-rate
  successCondition: "len(result[0].Values) >= 3 and all(result[0].Values, {# <= 0.01})"
  provider:
    cloudWatch:
      interval: 30m
      metricDataQueries:
      - id: rate
        expression: errors / requests
      - id: errors
        metricStat: {metric: {namespace: app, metricName: errors}, period: 300, stat: Sum, unit: Count}
        returnData: false
      - id: requests
        metricStat: {metric: {namespace: app, metricName: requests}, period: 300, stat: Sum, unit: Count}
        returnData: false
`

// TestCloudWatchEndToEnd: canaryd run and backtest query CloudWatch with
// the AWS SDK's default chain, region and AWS_ENDPOINT_URL from the
// environment, and give Argo's value and phase; an error answer is an
// Error measurement.
func TestCloudWatchEndToEnd(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	for k, v := range cloudwatchtest.Env(b.URL(), t.TempDir()) {
		t.Setenv(k, v)
	}
	spec := writeSpec(t, "cloudwatch.yaml", cloudWatchSpec)

	b.Set("values_low.json", 0)
	r := runCLI(t, "", "run", "-f", spec)
	if r.code != 0 || r.analysis.Phase != api.PhaseSuccessful || !strings.Contains(r.stderr, "value=[[0.004484304932735426 0.0058374494836102376 ") {
		t.Errorf("run: exit %d, %s\n%s", r.code, r.analysis.Phase, r.stderr)
	}

	b.Set("values_high.json", 0)
	if r := runCLI(t, "", "run", "-f", spec); r.code != 1 || r.analysis.Phase != api.PhaseFailed {
		t.Errorf("run, a value over 0.01: exit %d, %s\n%s", r.code, r.analysis.Phase, r.stderr)
	}

	// One Error ends the metric (Argo's default limit, 4, would take 40s of
	// retries).
	once := writeSpec(t, "cloudwatch-once.yaml", strings.Replace(cloudWatchSpec, "  provider:", "  consecutiveErrorLimit: 0\n  provider:", 1))
	b.Set("error_403.json", 0)
	if r := runCLI(t, "", "run", "-f", once); r.code == 0 || !strings.Contains(r.stderr, "api error AccessDenied") || strings.Contains(r.stderr, cloudwatchtest.SecretKey) {
		t.Errorf("run, access denied: exit %d\n%s", r.code, r.stderr)
	}

	b.Set("values_low.json", 0)
	start := time.Unix(1599076435, 0).UTC()
	r = runCLIRaw(t, "", "backtest", "-f", spec, "--start", start.Format(time.RFC3339))
	sent, _ := b.Sent()
	end, err := cloudwatchtest.Timestamp(sent["EndTime"])
	if r.code != 0 || err != nil || !end.Equal(start) {
		t.Errorf("backtest: exit %d, the window ends at %v (%v), want %v\n%s", r.code, end, err, start, r.stderr)
	}
}
