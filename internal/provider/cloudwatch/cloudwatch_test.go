package cloudwatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
)

// at is the instant of the tests' measurements.
var at = time.Unix(1599076435, 0)

// newProvider builds a provider that sends to b.
func newProvider(t testing.TB, b *cloudwatchtest.Backend, o cloudwatch.Options) *cloudwatch.Provider {
	t.Helper()
	o.Load = append(cloudwatchtest.Config(b.URL()), o.Load...)
	p, err := cloudwatch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// outcome is what Argo's measurement shows: the phase, the value, and
// (for an Error) the message.
type outcome struct {
	phase   api.Phase
	value   string
	message string
}

// run measures config once at at and judges the result with the
// conditions, as the engine does: an error is an Error measurement.
func run(t *testing.T, p *cloudwatch.Provider, config, success, failure string) (analysis.Observation, outcome) {
	t.Helper()
	src, _, errs := p.Source(json.RawMessage(config))
	if len(errs) > 0 {
		t.Fatalf("Source(%s): %v", config, errs)
	}
	obs := src.Measure(context.Background(), at)
	if obs.Err != nil {
		return obs, outcome{phase: api.PhaseError, message: obs.Err.Error()}
	}
	c, cerrs := condition.Compile(success, failure)
	if len(cerrs) > 0 {
		t.Fatal(cerrs)
	}
	phase, err := c.Judge(obs.Value)
	o := outcome{phase: phase, value: obs.Display}
	if err != nil {
		o.phase, o.message = api.PhaseError, err.Error()
	}
	return obs, o
}

// The configurations of the tests: Argo's documented template (a rate of
// two metrics), and one metric.
const (
	rateConfig = `{"interval": "30m", "metricDataQueries": [
		{"id": "rate", "expression": "errors / requests"},
		{"id": "errors", "metricStat": {"metric": {"namespace": "app", "metricName": "errors"}, "period": 300, "stat": "Sum", "unit": "Count"}, "returnData": false},
		{"id": "requests", "metricStat": {"metric": {"namespace": "app", "metricName": "requests"}, "period": 300, "stat": "Sum", "unit": "Count"}, "returnData": false}]}`
	oneConfig = `{"metricDataQueries": [{"id": "rate", "metricStat": {"metric": {"namespace": "AWS/ApplicationELB", "metricName": "HTTPCode_Target_5XX_Count",
		"dimensions": [{"name": "LoadBalancer", "value": "app/web/0123456789abcdef"}]}, "period": "60", "stat": "Sum"}}]}`
)

// TestArgoCases holds each recorded answer to the result a condition sees
// and the phase Argo Rollouts v1.10.0 gives (metricproviders/cloudwatch:
// Run passes GetMetricData's MetricDataResults to the conditions and
// writes each result's Values with %+v; an error of the client is an Error
// measurement with its message; docs/analysis/cloudwatch.md's template).
func TestArgoCases(t *testing.T) {
	const (
		argoOK    = "result[0].Values[0] == 0.1" // cloudwatch_test.go TestRunSuccessfully
		argoNotOK = "result[0].Values[0] != 0.1"
		docs      = "len(result[0].Values) >= 5 and all(result[0].Values, {# <= 0.01})" // docs/analysis/cloudwatch.md
	)
	tests := []struct {
		name, file, config, success, failure string
		want                                 outcome
	}{
		// Values: result[i] is the i-th query's result, its Values newest first.
		{"one result meets the condition: Successful", "values.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseSuccessful, value: "[[0.1 0.2 0.3]]"}},
		{"the documented condition, a value over 0.01: Failed", "values_high.json", rateConfig, docs, "",
			outcome{phase: api.PhaseFailed, value: "[[0.0029476787030213707 0.006100422336931018 0.01020408163265306 0.007932573128408527 0.00589622641509434 0.006339144215530904]]"}},
		{"the documented condition, all under 0.01: Successful", "values_low.json", rateConfig, docs, "",
			outcome{phase: api.PhaseSuccessful, value: "[[0.004484304932735426 0.0058374494836102376 0.006736068585425597 0.008444444444444444 0.006859756097560976 0.0045385779122541605]]"}},
		{"several queries: a result each, in the answer's order, values as %v writes them", "several.json", rateConfig,
			"result[2].Values[0] < 0.01 && result[1].Values[1] > 1000", "",
			outcome{phase: api.PhaseSuccessful, value: "[[3 1] [1200 1e+06] [0.0025 1e-06]]"}},
		{"several queries: a failure condition on one of them: Failed", "several.json", rateConfig,
			"", "result[0].Values[0] > 2",
			outcome{phase: api.PhaseFailed, value: "[[3 1] [1200 1e+06] [0.0025 1e-06]]"}},
		{"a result's fields: Id and Label are pointers, which expr dereferences", "several.json", rateConfig,
			`result[2].Id == "rate" && result[0].Label == "errors" && len(result[0].Timestamps) == 2`, "",
			outcome{phase: api.PhaseSuccessful, value: "[[3 1] [1200 1e+06] [0.0025 1e-06]]"}},
		{"no conditions: Successful", "values.json", oneConfig, "", "",
			outcome{phase: api.PhaseSuccessful, value: "[[0.1 0.2 0.3]]"}},
		// No data.
		{"no results, indexed: Error, nil or empty", "empty.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, value: "[]", message: "metric result is nil or empty: no data returned from the metric provider"}},
		{"no results, len(result) == 0: Successful", "empty.json", rateConfig, "len(result) == 0", "",
			outcome{phase: api.PhaseSuccessful, value: "[]"}},
		{"a result without values, the documented condition: Failed", "no_values.json", rateConfig, docs, "",
			outcome{phase: api.PhaseFailed, value: "[[]]"}},
		{"a result without values, indexed: Error, out of range", "no_values.json", rateConfig, argoOK, "",
			outcome{phase: api.PhaseError, value: "[[]]", message: "index out of range"}},
		{"partial data: the values there are, StatusCode says so", "partial.json", rateConfig,
			`result[0].Values[0] < 1 && len(result[0].Messages) == 1`, "",
			outcome{phase: api.PhaseSuccessful, value: "[[0.5]]"}},
		// Error answers: the AWS SDK's message, as Argo's measurement has it
		// (the SDK's error code is the query protocol's, X-Amzn-Query-Error;
		// an error CloudWatch's API declares reads "Code: message", another
		// "api error Code: message").
		{"400 ValidationError: Error", "error_400_validation.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "operation error CloudWatch: GetMetricData, https response error StatusCode: 400, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, ValidationError: 1 validation error detected: Value null at 'metricDataQueries' failed to satisfy constraint: Member must not be null"}},
		{"400 InvalidParameterValue (a bad expression): Error", "error_400_invalid_parameter.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 400, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, InvalidParameterValue: Error in expression 'rate': Unrecognized token"}},
		{"400 Throttling: Error (the analysis retries 10s later)", "error_400_throttling.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 400, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, api error Throttling: Rate exceeded"}},
		{"403 AccessDenied: Error", "error_403.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 403, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, api error AccessDenied: User: arn:aws:iam::123456789012:user/canary is not authorized"}},
		{"500 InternalServiceError: Error", "error_500.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 500, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, InternalServiceError: Internal service error"}},
		{"502 from a proxy, HTML: Error", "error_502_html.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 502, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, deserialization failed, failed to decode response body"}},
		// Malformed answers.
		{"200, not CBOR: Error", "not_cbor.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "StatusCode: 200, RequestID: 030a8061-95f5-4a39-8ef8-fd3dc2da8a82, deserialization failed, expected map for struct"}},
		{"200, truncated: Error", "truncated.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "deserialization failed, unexpected end of CBOR data"}},
		{"200, values that are not numbers: Error", "values_not_numbers.json", rateConfig, argoOK, argoNotOK,
			outcome{phase: api.PhaseError, message: "deserialization failed, expected float"}},
	}
	// Every recorded answer is a case here, but the one TestNoCredentialInErrors
	// has (test/argo runs Argo's provider on all of them).
	cases := map[string]bool{"error_403_signature.json": true}
	for _, tt := range tests {
		cases[tt.file] = true
	}
	for _, name := range cloudwatchtest.Answers() {
		if !cases[name] {
			t.Errorf("the recorded answer %s is no case of TestArgoCases", name)
		}
	}
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.Set(tt.file, 0)
			obs, got := run(t, p, tt.config, tt.success, tt.failure)
			if got.phase != tt.want.phase || got.value != tt.want.value || !strings.Contains(got.message, tt.want.message) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if got.phase != api.PhaseError || obs.Err == nil {
				if _, ok := obs.Value.([]types.MetricDataResult); !ok {
					t.Errorf("the result is a %T, want Argo's []types.MetricDataResult", obs.Value)
				}
			}
			if strings.Contains(got.message, cloudwatchtest.SecretKey) || strings.Contains(got.value, cloudwatchtest.SecretKey) {
				t.Errorf("the message shows the secret key: %s", got.message)
			}
		})
	}
}

// TestRequest: the window ends at the measurement's instant and is the
// interval long (5m by default, Argo's), and the queries are sent as Argo
// converts them: ids, expressions, metrics with their dimensions, periods
// (a string period read as a number), stats, units, returnData.
func TestRequest(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{})
	for _, tt := range []struct {
		config string
		window time.Duration
		want   string
	}{
		{rateConfig, 30 * time.Minute, `[{"Expression":"errors / requests","Id":"rate"},` +
			`{"Id":"errors","MetricStat":{"Metric":{"MetricName":"errors","Namespace":"app"},"Period":300,"Stat":"Sum","Unit":"Count"},"ReturnData":false},` +
			`{"Id":"requests","MetricStat":{"Metric":{"MetricName":"requests","Namespace":"app"},"Period":300,"Stat":"Sum","Unit":"Count"},"ReturnData":false}]`},
		{oneConfig, 5 * time.Minute, `[{"Id":"rate","MetricStat":{"Metric":{"Dimensions":[{"Name":"LoadBalancer","Value":"app/web/0123456789abcdef"}],` +
			`"MetricName":"HTTPCode_Target_5XX_Count","Namespace":"AWS/ApplicationELB"},"Period":60,"Stat":"Sum"}}]`},
	} {
		b.Set("values.json", 0)
		if _, got := run(t, p, tt.config, "true", ""); got.phase != api.PhaseSuccessful {
			t.Fatalf("%+v", got)
		}
		sent, _ := b.Sent()
		start, err1 := cloudwatchtest.Timestamp(sent["StartTime"])
		end, err2 := cloudwatchtest.Timestamp(sent["EndTime"])
		if err1 != nil || err2 != nil || !end.Equal(at) || end.Sub(start) != tt.window {
			t.Errorf("the window is %v to %v (%v, %v); want %v ending at %v", start, end, err1, err2, tt.window, at)
		}
		if got := plain(sent["MetricDataQueries"]); got != tt.want {
			t.Errorf("queries:\n got %s\nwant %s", got, tt.want)
		}
		if _, ok := sent["NextToken"]; ok {
			t.Error("a NextToken is sent: only the first page is read, as Argo reads it")
		}
	}
}

// plain writes a CBOR value as JSON, for comparisons.
func plain(v cbor.Value) string {
	var conv func(cbor.Value) any
	conv = func(v cbor.Value) any {
		switch x := v.(type) {
		case cbor.Map:
			m := map[string]any{}
			for k, e := range x {
				m[k] = conv(e)
			}
			return m
		case cbor.List:
			l := []any{}
			for _, e := range x {
				l = append(l, conv(e))
			}
			return l
		case cbor.String:
			return string(x)
		case cbor.Uint:
			return uint64(x)
		case cbor.Bool:
			return bool(x)
		case cbor.Float64:
			return float64(x)
		}
		return fmt.Sprintf("%#v", v)
	}
	out, _ := json.Marshal(conv(v))
	return string(out)
}

// TestMessages: the answer's messages are the measurement's metadata,
// each "Code: Value" (Argo writes the addresses of its pointers there).
func TestMessages(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{})
	b.Set("partial.json", 0)
	obs, _ := run(t, p, rateConfig, "true", "")
	if want := "[MaxQueryTimeRangeExceed: The time range of the query is longer than the data kept.]"; obs.Metadata[cloudwatch.MetadataMessages] != want {
		t.Errorf("metadata %v, want messages %q", obs.Metadata, want)
	}
	b.Set("values.json", 0)
	if obs, _ := run(t, p, rateConfig, "true", ""); obs.Metadata != nil {
		t.Errorf("metadata %v without messages", obs.Metadata)
	}
}

// TestBounds: an answer too large, one of too many values, and one too
// slow for the timeout are Error measurements naming the bound; each
// measurement is one request (no retry).
func TestBounds(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{MaxResultValues: 2, MaxTimeout: 300 * time.Millisecond})
	b.Set("values.json", 0)
	if _, got := run(t, p, rateConfig, "true", ""); got.phase != api.PhaseError || !strings.Contains(got.message, "the answer has 3 values, more than the 2 a measurement may have (--max-result-values)") {
		t.Errorf("too many values: %+v", got)
	}
	huge := cbor.List{}
	for range 20_000 {
		huge = append(huge, cbor.Float64(0.5))
	}
	hugeBody := cbor.Encode(cbor.Map{"MetricDataResults": cbor.List{cbor.Map{"Id": cbor.String("rate"), "Values": huge}}})
	b.SetBody(hugeBody)
	// Without the short timeout: on a busy machine, reading the answer's
	// first bytes can outlast 300 ms, and the bound tested here is the
	// bytes'.
	roomy := newProvider(t, b, cloudwatch.Options{MaxResultValues: 2})
	const tooLarge = "the answer is longer than the 67584 bytes canaryd reads of a CloudWatch answer (1024 for each of --max-result-values, and 65536)"
	if _, got := run(t, roomy, rateConfig, "true", ""); got.phase != api.PhaseError || got.message != tooLarge {
		t.Errorf("too large: %+v", got)
	}
	// Without its length, the answer is found too large as it is read,
	// at its first byte over the bound, every time: the transport once
	// closed the connection under it now and then (see TestChunkedTooLarge).
	b.SetChunkedBody(hugeBody)
	if _, got := run(t, roomy, rateConfig, "true", ""); got.phase != api.PhaseError || got.message != tooLarge {
		t.Errorf("too large, chunked: %+v", got)
	}
	b.Set("values.json", 5*time.Second)
	start := time.Now()
	_, got := run(t, p, rateConfig, "true", "")
	if got.phase != api.PhaseError || !strings.Contains(got.message, "no answer within the timeout (300ms, capped by --max-query-timeout)") {
		t.Errorf("slow: %+v", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the slow answer took %v to give up", d)
	}
	b.Set("error_500.json", 0)
	_, before := b.Sent()
	run(t, p, rateConfig, "true", "")
	if _, after := b.Sent(); after != before+1 {
		t.Errorf("%d requests for one measurement, want 1: the SDK does not retry", after-before)
	}
}

// TestEnvironment: with no options, the AWS SDK's default chain finds the
// credentials and the region in the environment, and AWS_ENDPOINT_URL
// sends the requests to the stand-in; without a region, a metric is
// refused when it is compiled, on provider.cloudWatch.
func TestEnvironment(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	for k, v := range cloudwatchtest.Env(b.URL(), t.TempDir()) {
		t.Setenv(k, v)
	}
	p, err := cloudwatch.New(cloudwatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseIdleConnections()
	b.Set("values.json", 0)
	if _, got := run(t, p, rateConfig, "result[0].Values[0] == 0.1", ""); got.phase != api.PhaseSuccessful {
		t.Errorf("%+v", got)
	}
	if _, n := b.Sent(); n != 1 {
		t.Errorf("%d requests reached AWS_ENDPOINT_URL", n)
	}

	t.Setenv("AWS_REGION", "")
	p, err = cloudwatch.New(cloudwatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, errs := p.Source(json.RawMessage(rateConfig))
	if len(errs) != 1 || errs[0].Field != "provider.cloudWatch" || !strings.Contains(errs[0].Message, "no AWS region: set AWS_REGION") {
		t.Errorf("no region: %v", errs)
	}
	p, _ = cloudwatch.New(cloudwatch.Options{CheckOnly: true})
	if src, _, errs := p.Source(json.RawMessage(rateConfig)); src != nil || len(errs) != 0 {
		t.Errorf("CheckOnly: %v %v; want nothing built, no problem", src, errs)
	}
}

// TestBadInput: a field of the wrong type, an unknown field and what
// CloudWatch would refuse are problems on their fields, and no source is
// built.
func TestBadInput(t *testing.T) {
	p, err := cloudwatch.New(cloudwatch.Options{CheckOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	const q = `{"id": "m", "metricStat": {"metric": {"metricName": "x"}, "period": 60, "stat": "Sum"}}`
	for _, tt := range []struct{ config, field string }{
		{`{"interval": 5, "metricDataQueries": [` + q + `]}`, "provider.cloudWatch.interval"},
		{`{"interval": "1d", "metricDataQueries": [` + q + `]}`, "provider.cloudWatch.interval"},
		{`{"interval": "0s", "metricDataQueries": [` + q + `]}`, "provider.cloudWatch.interval"},
		{`{"metricDataQueries": [` + q + `], "region": "eu-west-1"}`, "provider.cloudWatch.region"},
		{`{"metricDataQueries": [{"id": "m", "expression": "1", "query": "x"}]}`, "provider.cloudWatch.metricDataQueries[0].query"},
		{`{"metricDataQueries": {"id": "m"}}`, "provider.cloudWatch.metricDataQueries"},
		{`{"metricDataQueries": [{"id": 1, "expression": "1"}]}`, "provider.cloudWatch.metricDataQueries[0].id"},
		{`{"metricDataQueries": [{"id": "m", "expression": "1", "returnData": "yes"}]}`, "provider.cloudWatch.metricDataQueries[0].returnData"},
		{`{"metricDataQueries": [{"id": "m", "metricStat": {"metric": {"metricName": "x", "dimensions": [{"name": "a", "value": 1}]}, "period": 60, "stat": "Sum"}}]}`,
			"provider.cloudWatch.metricDataQueries[0].metricStat.metric.dimensions[0].value"},
		{`{}`, "provider.cloudWatch.metricDataQueries"},
		{`{"metricDataQueries": []}`, "provider.cloudWatch.metricDataQueries"},
		{`{"metricDataQueries": [{"expression": "1"}]}`, "provider.cloudWatch.metricDataQueries[0].id"},
		{`{"metricDataQueries": [{"id": "Rate", "expression": "1"}]}`, "provider.cloudWatch.metricDataQueries[0].id"},
		{`{"metricDataQueries": [{"id": "m", "expression": "1"}, {"id": "m", "expression": "2"}]}`, "provider.cloudWatch.metricDataQueries[1].id"},
		{`{"metricDataQueries": [{"id": "m"}]}`, "provider.cloudWatch.metricDataQueries[0]"},
		{`{"metricDataQueries": [{"id": "m", "expression": "1", "metricStat": {"metric": {"metricName": "x"}, "period": 60, "stat": "Sum"}}]}`, "provider.cloudWatch.metricDataQueries[0]"},
		{`{"metricDataQueries": [{"id": "m", "expression": "1", "period": "abc"}]}`, "provider.cloudWatch.metricDataQueries[0].period"},
		{`{"metricDataQueries": [{"id": "m", "metricStat": {"metric": {"metricName": "x"}, "stat": "Sum"}}]}`, "provider.cloudWatch.metricDataQueries[0].metricStat.period"},
		{`{"metricDataQueries": [{"id": "m", "metricStat": {"metric": {"metricName": "x"}, "period": 60}}]}`, "provider.cloudWatch.metricDataQueries[0].metricStat.stat"},
		{`{"metricDataQueries": [{"id": "m", "metricStat": {"metric": {}, "period": 60, "stat": "Sum"}}]}`, "provider.cloudWatch.metricDataQueries[0].metricStat.metric.metricName"},
		{`{"metricDataQueries": [{"id": "m", "metricStat": {"metric": {"metricName": "x"}, "period": 60, "stat": "Sum", "unit": "Furlongs"}}]}`, "provider.cloudWatch.metricDataQueries[0].metricStat.unit"},
	} {
		src, _, errs := p.Source(json.RawMessage(tt.config))
		if src != nil || len(errs) == 0 || errs[0].Field != tt.field || errs[0].Message == "" {
			t.Errorf("Source(%s) = %v; want a problem on %s", tt.config, errs, tt.field)
		}
		if d := p.Decode(json.RawMessage(tt.config)); strings.Contains(tt.config, `"value": 1`) && len(d) == 0 {
			t.Errorf("Decode(%s) finds no problem", tt.config)
		}
	}
	if _, _, errs := p.Source(json.RawMessage(rateConfig)); len(errs) != 0 {
		t.Errorf("Argo's template: %v", errs)
	}
}

// TestDisplay: the measurement's value is written as Argo's fmt.Sprintf("%+v")
// writes the results' values.
func TestDisplay(t *testing.T) {
	values := [][]float64{{0.1, 1e21, 1e20, 123456789, 1e-5, 0.0001, -0, math.Inf(1), math.Inf(-1), math.NaN(), -2.5}, {}, {3}}
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{})
	results := cbor.List{}
	for i, vs := range values {
		l := cbor.List{}
		for _, v := range vs {
			l = append(l, cbor.Float64(v))
		}
		results = append(results, cbor.Map{"Id": cbor.String(fmt.Sprintf("q%d", i)), "Values": l})
	}
	b.SetBody(cbor.Encode(cbor.Map{"MetricDataResults": results}))
	_, got := run(t, p, rateConfig, "true", "")
	if want := fmt.Sprintf("%+v", values); got.value != want {
		t.Errorf("value %q, want Argo's %q", got.value, want)
	}
}

// TestBacktest: GetMetricData queries any window CloudWatch keeps, so a
// measurement as of a past instant queries the window ending then, and the
// provider never says it measures the present only (provider.Present).
func TestBacktest(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{})
	if _, ok := any(p).(provider.Present); ok {
		t.Error("the provider implements provider.Present: backtests would refuse its metrics")
	}
	src, _, errs := p.Source(json.RawMessage(oneConfig))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	b.Set("values.json", 0)
	for _, past := range []time.Time{at, at.Add(-24 * time.Hour), at.Add(-90 * 24 * time.Hour)} {
		if obs := src.Measure(context.Background(), past); obs.Err != nil {
			t.Fatal(obs.Err)
		}
		sent, _ := b.Sent()
		end, err := cloudwatchtest.Timestamp(sent["EndTime"])
		if err != nil || !end.Equal(past) {
			t.Errorf("measured as of %v, the window ends at %v (%v)", past, end, err)
		}
	}
}

// TestNoCredentialInErrors: an error answer that quotes the session token
// (a SignatureDoesNotMatch quotes the headers signed) is an Error whose
// message holds neither it nor the secret key.
func TestNoCredentialInErrors(t *testing.T) {
	const token = "IQoJb3JpZ2luX2VjECanarydTestSessionToken0000"
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{Load: []func(*config.LoadOptions) error{
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cloudwatchtest.AccessKey, cloudwatchtest.SecretKey, token)),
	}})
	b.Set("error_403_signature.json", 0)
	_, got := run(t, p, rateConfig, "true", "")
	if got.phase != api.PhaseError || !strings.Contains(got.message, "SignatureDoesNotMatch: The request signature we calculated") {
		t.Errorf("%+v", got)
	}
	if strings.Contains(got.message, token) || strings.Contains(got.message, cloudwatchtest.SecretKey) {
		t.Errorf("the message shows a credential: %s", got.message)
	}
}

// TestChunkedTooLarge: an answer over the bound, sent without its length
// in flushed chunks, is an Error with the bound's message at every
// measurement, and an answer under it, longer than the transport
// buffers, is read whole at every measurement. The AWS SDK closes its
// request body once the answer's headers are in, and the transport,
// checking that body's end after the answer had begun, took the closed
// body for a failed request and closed the connection under the answer
// being read: now and then a measurement ended with "use of closed
// network connection" instead.
func TestChunkedTooLarge(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	p := newProvider(t, b, cloudwatch.Options{MaxResultValues: 2})
	src, _, errs := p.Source(json.RawMessage(rateConfig))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	values := func(n int) []byte {
		list := cbor.List{}
		for range n {
			list = append(list, cbor.Float64(0.5))
		}
		return cbor.Encode(cbor.Map{"MetricDataResults": cbor.List{cbor.Map{"Id": cbor.String("rate"), "Values": list}}})
	}
	const tooLarge = "the answer is longer than the 67584 bytes canaryd reads of a CloudWatch answer (1024 for each of --max-result-values, and 65536)"
	b.SetChunkedBody(values(20_000))
	for i := range 100 {
		if obs := src.Measure(context.Background(), at); obs.Err == nil || obs.Err.Error() != tooLarge {
			t.Fatalf("measurement %d: %v, want %q", i, obs.Err, tooLarge)
		}
	}

	roomy := newProvider(t, b, cloudwatch.Options{})
	src, _, errs = roomy.Source(json.RawMessage(rateConfig))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	b.SetChunkedBody(values(3_000))
	for i := range 100 {
		obs := src.Measure(context.Background(), at)
		results, _ := obs.Value.([]types.MetricDataResult)
		if obs.Err != nil || len(results) != 1 || len(results[0].Values) != 3_000 {
			t.Fatalf("measurement %d: %d results, %v; want 3000 values", i, len(results), obs.Err)
		}
	}
}
