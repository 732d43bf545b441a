package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
)

// The credentials of TestProviderSecretsNeverLeak, each a value found
// nowhere else.
const (
	secretDatadogAPI     = "qz1ddapi-5c1e9a7b"
	secretDatadogApp     = "qz2ddapp-8f2d4c6e"
	secretNewRelicKey    = "NRAK-QZ3B7E1D9F"
	secretInfluxToken    = "qz4influx-token-2a6c"
	secretAWSSecretKey   = "qz5awssecret-key-7d3f0b"
	secretAWSSessionTok  = "qz6awssession-token-4e8a1c"
	providerSecretOffset = 505 // where an echoed credential starts in a quoted answer: across its 512-byte cut
)

// providerEcho is a stand-in for Datadog, InfluxDB, New Relic (NerdGraph)
// and CloudWatch at once, told apart by the path: every request gets an
// error answer of the provider's own shape whose message quotes the
// request's URL and headers, as a misbehaving proxy or server might,
// padded so that the first credential in it starts at
// providerSecretOffset of the text the provider quotes, across the cut it
// makes at 512 bytes. It keeps what it got, to prove the credentials were
// sent at all.
type providerEcho struct {
	srv        *httptest.Server
	mu         sync.Mutex
	got        strings.Builder
	cloudWatch atomic.Int64
}

func newProviderEcho(t *testing.T) *providerEcho {
	e := &providerEcho{}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

// padded is dump behind the padding that puts its first credential at
// providerSecretOffset of a text that starts with prefix and then holds it.
func padded(prefix, dump string) string {
	first := -1
	for _, s := range []string{secretDatadogAPI, secretDatadogApp, secretNewRelicKey, secretInfluxToken, secretAWSSessionTok} {
		if i := strings.Index(dump, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if n := providerSecretOffset - len(prefix) - first; first >= 0 && n > 0 {
		return strings.Repeat("x", n) + dump
	}
	return dump
}

func (e *providerEcho) serve(w http.ResponseWriter, r *http.Request) {
	dump := fmt.Sprintf("%s %s headers %v", r.Method, r.URL, r.Header)
	e.mu.Lock()
	e.got.WriteString(dump + "\n")
	e.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v1/query"): // Datadog: the start of the body is quoted
		prefix := `{"errors":["`
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, prefix+padded(prefix, dump)+`"]}`)
	case r.URL.Path == "/api/v2/query": // InfluxDB: "code: message"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": "invalid", "message": padded("invalid: ", dump)})
	case r.URL.Path == "/graphql": // NerdGraph: its errors' messages
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"message": padded("", dump)}}})
	default: // CloudWatch's GetMetricData, rpc-v2-cbor
		e.cloudWatch.Add(1)
		w.Header().Set("Content-Type", "application/cbor")
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		w.Header().Set("X-Amzn-Query-Error", "InvalidParameterValue;Sender")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(cbor.Encode(cbor.Map{
			"__type":  cbor.String("com.amazonaws.cloudwatch#InvalidParameterValueException"),
			"message": cbor.String(dump),
		}))
	}
}

func (e *providerEcho) received() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got.String()
}

// providerMetrics are a metric of each provider that reads credentials,
// each ended by its first Error.
const providerMetrics = `
  - name: datadog
    consecutiveErrorLimit: 0
    provider: {datadog: {query: "avg:trace.http.request.errors{service:checkout}", interval: 5m}}
  - name: influxdb
    consecutiveErrorLimit: 0
    provider: {influxdb: {query: 'from(bucket: "app") |> range(start: -5m)'}}
  - name: newrelic
    consecutiveErrorLimit: 0
    provider: {newRelic: {query: "FROM Transaction SELECT count(*) SINCE 5 minutes ago"}}
  - name: cloudwatch
    consecutiveErrorLimit: 0
    provider:
      cloudWatch:
        metricDataQueries:
          - {id: errors, metricStat: {metric: {namespace: app, metricName: errors}, period: 300, stat: Sum}}
`

// TestProviderSecretsNeverLeak is TestSecretsNeverLeak for the providers
// whose credentials are not in the document: Datadog's api-key and
// app-key, New Relic's personal-api-key and InfluxDB's authToken from
// --credentials-dir, and the AWS secret key and session token from the
// environment. serve runs them, posted and from a template, against a
// stand-in whose every answer is an error quoting the request's headers;
// no credential may appear in any answer (rounds, analyses, streams, HTML
// reports, backtests, refusals), in /metrics or in the debug log.
func TestProviderSecretsNeverLeak(t *testing.T) {
	echo := newProviderEcho(t)
	creds, templates := t.TempDir(), t.TempDir()
	writeSecrets(t, creds, map[string]string{
		"datadog/api-key": secretDatadogAPI, "datadog/app-key": secretDatadogApp, "datadog/address": echo.srv.URL,
		"influxdb/address": echo.srv.URL, "influxdb/authToken": secretInfluxToken, "influxdb/org": "canaryd",
		"newrelic/personal-api-key": secretNewRelicKey, "newrelic/account-id": "1234567", "newrelic/base-url-nerdgraph": echo.srv.URL + "/graphql",
	})
	writeSecrets(t, templates, map[string]string{"providers.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: providers}\nspec:\n  metrics:" + providerMetrics})
	env := []string{"DD_API_KEY=", "DD_APP_KEY=", "DD_ADDRESS=", "CANARYD_CREDENTIALS_DIR="}
	for k, v := range cloudwatchtest.Env(echo.srv.URL, t.TempDir()) {
		switch k {
		case "AWS_SECRET_ACCESS_KEY":
			v = secretAWSSecretKey
		case "AWS_SESSION_TOKEN":
			v = secretAWSSessionTok
		}
		env = append(env, k+"="+v)
	}
	cmd, logs, exited := startProcess(t, []string{"serve", "--listen", "127.0.0.1:0", "--prometheus-url", "http://127.0.0.1:9",
		"--templates", templates, "--credentials-dir", creds, "--error-retry", "100ms"}, env...)
	base := "http://" + logs.waitAddress(t, exited)
	spec := "metrics:" + providerMetrics

	var seen strings.Builder
	call := func(method, path, contentType, body string, headers ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(&seen, "%d %v %s\n", resp.StatusCode, resp.Header, data)
		return resp.StatusCode, string(data)
	}

	if status, body := call(http.MethodPost, "/v1/evaluate", "application/yaml", spec); status != http.StatusServiceUnavailable ||
		!strings.Contains(body, "received non 2xx response code: 400") || !strings.Contains(body, "InvalidParameterValue") {
		t.Errorf("the echoing round: %d %s, want a 503 Error round quoting the error answers", status, body)
	}
	status, body := call(http.MethodPost, "/v1/analyses?wait=true", "application/yaml", spec)
	var a api.Analysis
	if err := json.Unmarshal([]byte(body), &a); err != nil || status != http.StatusOK || a.Phase != api.PhaseError {
		t.Fatalf("the echoing analysis: %d %s, want 200 with phase Error", status, body)
	}
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "application/x-ndjson")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "text/event-stream")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "text/html")
	call(http.MethodGet, "/v1/analyses", "", "")
	// New Relic cannot be backtested: the others alone, then all.
	backtest := "metrics:" + strings.Replace(providerMetrics, "  - name: newrelic\n    consecutiveErrorLimit: 0\n    provider: {newRelic: {query: \"FROM Transaction SELECT count(*) SINCE 5 minutes ago\"}}\n", "", 1)
	if status, body := call(http.MethodPost, "/v1/backtests?start=-10m&end=-9m", "application/yaml", backtest, "Accept", "text/html"); status != http.StatusOK {
		t.Errorf("the echoing backtest: %d %.300s", status, body)
	}
	if status, body := call(http.MethodPost, "/v1/backtests?start=-10m&end=-9m", "application/yaml", spec); status != http.StatusBadRequest || !strings.Contains(body, "cannot be backtested") {
		t.Errorf("a backtest of New Relic: %d %.300s, want a 400 saying it cannot be backtested", status, body)
	}
	call(http.MethodPost, "/v1/gates", "application/yaml", spec)
	call(http.MethodGet, "/v1/templates", "", "")
	call(http.MethodGet, "/v1/templates/providers", "", "")
	if status, body := call(http.MethodPost, "/v1/templates/providers/evaluate", "", ""); status != http.StatusServiceUnavailable {
		t.Errorf("the template's round: %d %.300s, want a 503 Error round", status, body)
	}
	call(http.MethodPost, "/v1/templates/providers/analyses?wait=true", "", "")
	// A Secret named by a metric that is not there: a 400 naming its file.
	if status, body := call(http.MethodPost, "/v1/evaluate", "application/yaml", strings.Replace(spec, "{influxdb: {query:", "{influxdb: {profile: missing, query:", 1)); status != http.StatusBadRequest || !strings.Contains(body, "missing/") {
		t.Errorf("a missing Secret: %d %.300s, want a 400 naming its file", status, body)
	}
	_, metrics := call(http.MethodGet, "/metrics", "", "")
	if !strings.Contains(metrics, "canaryd_analyses_finished_total") {
		t.Errorf("/metrics: %.200s", metrics)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("canaryd did not exit after SIGTERM")
	}

	// The credentials did go out, and were echoed: the test is not vacuous.
	got := echo.received()
	for _, s := range []string{secretDatadogAPI, secretDatadogApp, secretNewRelicKey, secretInfluxToken, secretAWSSessionTok} {
		if !strings.Contains(got, s) {
			t.Errorf("the stand-in never got %q: the test does not exercise it", s)
		}
	}
	if echo.cloudWatch.Load() == 0 {
		t.Error("CloudWatch got no request (signed with the secret key)")
	}
	places := map[string]string{"responses": seen.String(), "log": logs.text()}
	for _, secret := range []string{secretDatadogAPI, secretDatadogApp, secretNewRelicKey, secretInfluxToken, secretAWSSecretKey, secretAWSSessionTok} {
		// A credential's start, left by a cut (7 bytes of it: it starts
		// at providerSecretOffset), is a leak too.
		start := secret[:6]
		for where, text := range places {
			if i := strings.Index(text, start); i >= 0 {
				t.Errorf("%q (or its start) appears in the %s: …%s…", secret, where, text[max(0, i-200):min(len(text), i+len(secret)+50)])
			}
		}
	}
}
