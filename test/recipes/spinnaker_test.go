package recipes

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/test/internal/harness"
)

// spinnakerStage is a webhook stage with the fields of Orca's
// WebhookStage.StageData that the recipe uses, and a stage's common ones;
// decoding refuses any other field.
type spinnakerStage struct {
	Name                 string            `json:"name"`
	Type                 string            `json:"type"`
	RefID                string            `json:"refId"`
	RequisiteStageRefIDs []string          `json:"requisiteStageRefIds"`
	Method               string            `json:"method"`
	URL                  string            `json:"url"`
	CustomHeaders        map[string]string `json:"customHeaders"`
	Payload              json.RawMessage   `json:"payload"`
	FailFastStatusCodes  []int             `json:"failFastStatusCodes"`
	WaitForCompletion    bool              `json:"waitForCompletion"`
	StatusURLResolution  string            `json:"statusUrlResolution"`
	StatusJSONPath       string            `json:"statusJsonPath"`
	SuccessStatuses      string            `json:"successStatuses"`
	CanceledStatuses     string            `json:"canceledStatuses"`
	TerminalStatuses     string            `json:"terminalStatuses"`
	RetryStatusCodes     []int             `json:"retryStatusCodes"`
	CancelEndpoint       string            `json:"cancelEndpoint"`
	CancelMethod         string            `json:"cancelMethod"`
}

// orcaPreconfigured is one of Orca's webhook.preconfigured entries
// (WebhookProperties.PreconfiguredWebhook), as orca-local.yml holds it.
type orcaPreconfigured struct {
	Label               string              `yaml:"label"`
	Type                string              `yaml:"type"`
	Enabled             bool                `yaml:"enabled"`
	Description         string              `yaml:"description"`
	Method              string              `yaml:"method"`
	URL                 string              `yaml:"url"`
	CustomHeaders       map[string][]string `yaml:"customHeaders"`
	Payload             string              `yaml:"payload"`
	FailFastStatusCodes []int               `yaml:"failFastStatusCodes"`
	WaitForCompletion   bool                `yaml:"waitForCompletion"`
	StatusURLResolution string              `yaml:"statusUrlResolution"`
	StatusJSONPath      string              `yaml:"statusJsonPath"`
	SuccessStatuses     string              `yaml:"successStatuses"`
	CanceledStatuses    string              `yaml:"canceledStatuses"`
	TerminalStatuses    string              `yaml:"terminalStatuses"`
	CancelEndpoint      string              `yaml:"cancelEndpoint"`
	CancelMethod        string              `yaml:"cancelMethod"`
	Parameters          []struct {
		Name         string `yaml:"name"`
		Label        string `yaml:"label"`
		Type         string `yaml:"type"`
		DefaultValue string `yaml:"defaultValue"`
	} `yaml:"parameters"`
}

// spinnakerExpression is a SpEL expression, ${…}.
var spinnakerExpression = regexp.MustCompile(`\$\{\s*([^}]*?)\s*\}`)

// Orca's statuses of a stage.
const (
	orcaSucceeded = "SUCCEEDED"
	orcaTerminal  = "TERMINAL"
	orcaCanceled  = "CANCELED"
)

// orcaPoll is how often the test polls; Orca polls every second for the
// first minute. The test polls faster so the suite stays quick.
const orcaPoll = 100 * time.Millisecond

// orcaMonitorTimeout bounds the monitoring; Orca's is an hour.
const orcaMonitorTimeout = time.Minute

// runWebhookStage does what Orca's CreateWebhookTask and MonitorWebhookTask
// do with a webhook stage whose expressions are already evaluated: send
// the request; on 2xx take the status URL from the Location header,
// resolved against the stage's url; GET it with the same headers until
// statusJsonPath's value, upper-cased, is one of the statuses; a status in
// failFastStatusCodes, or another 4xx, is TERMINAL. It returns Orca's
// status and the last body read.
func runWebhookStage(t *testing.T, s spinnakerStage) (string, string) {
	t.Helper()
	statusURL, status, body := startWebhookStage(t, s)
	if statusURL == "" {
		return status, body
	}
	return monitorWebhookStage(t, s, statusURL)
}

// startWebhookStage is Orca's CreateWebhookTask: it sends the request and
// returns the status URL (Orca's statusEndpoint), or, when the request
// failed, "" and Orca's status and the body.
func startWebhookStage(t *testing.T, s spinnakerStage) (statusURL, status, body string) {
	t.Helper()
	if !s.WaitForCompletion || s.StatusURLResolution != "locationHeader" {
		t.Fatalf("the stage should wait for completion with statusUrlResolution locationHeader: %+v", s)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(s.Method, s.URL, bytes.NewReader(s.Payload))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.CustomHeaders {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.URL, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case contains(intStrings(s.FailFastStatusCodes), itoa(code)):
		return "", orcaTerminal, string(b)
	case code >= 500 || code == http.StatusTooManyRequests:
		t.Fatalf("POST answered %d, which Orca would retry: %s", code, b)
	case code >= 400:
		return "", orcaTerminal, string(b)
	}
	// Orca uses the Location as it is: a relative one would be requested
	// without a host.
	location, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !location.IsAbs() {
		t.Fatalf("POST answered %d without an absolute Location (%q, %v): %s", resp.StatusCode, resp.Header.Get("Location"), err, b)
	}
	return location.String(), "", string(b)
}

// monitorWebhookStage is Orca's MonitorWebhookTask: it polls statusURL.
func monitorWebhookStage(t *testing.T, s spinnakerStage, statusURL string) (string, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	statuses := map[string]string{}
	for list, status := range map[string]string{s.SuccessStatuses: orcaSucceeded, s.CanceledStatuses: orcaCanceled, s.TerminalStatuses: orcaTerminal} {
		for _, v := range strings.Split(list, ",") {
			if v = strings.TrimSpace(v); v != "" {
				statuses[strings.ToUpper(v)] = status
			}
		}
	}
	deadline := time.Now().Add(orcaMonitorTimeout)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, statusURL, nil)
		for k, v := range s.CustomHeaders {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", statusURL, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s answered %d: %s", statusURL, resp.StatusCode, body)
		}
		value := jsonPath(t, s.StatusJSONPath, body)
		if status, ok := statuses[strings.ToUpper(value)]; ok {
			return status, string(body)
		}
		time.Sleep(orcaPoll) // the poll interval, not an assertion
	}
	t.Fatalf("the stage was still running after %v", orcaMonitorTimeout)
	return "", ""
}

// cancelWebhookStage does what Orca does when a running webhook stage is
// cancelled (the pipeline cancelled by a person, or by a failed sibling
// stage): it evaluates cancelEndpoint, now that CreateWebhookTask has put
// statusEndpoint in the stage's context, and sends cancelMethod to it with
// the stage's headers. It returns the status of that request.
func cancelWebhookStage(t *testing.T, s spinnakerStage, statusURL string) int {
	t.Helper()
	if s.CancelEndpoint == "" || s.CancelMethod == "" {
		t.Fatalf("the stage sets no cancelEndpoint and cancelMethod: cancelling the pipeline would leave the analysis running")
	}
	endpoint := substitute(t, spinnakerExpression, s.CancelEndpoint, map[string]string{"statusEndpoint": statusURL})
	req, err := http.NewRequest(s.CancelMethod, endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.CustomHeaders {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", s.CancelMethod, endpoint, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// jsonPath reads a Jayway JsonPath of the form $.a.b from a JSON object:
// the only form the recipes use, and the test fails on any other.
func jsonPath(t *testing.T, path string, body []byte) string {
	t.Helper()
	if !regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$`).MatchString(path) {
		t.Fatalf("JSON path %q: the test reads only $.a.b paths", path)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	for _, key := range strings.Split(path, ".")[1:] {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("JSON path %q: not found in %s", path, body)
		}
		v = obj[key]
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("JSON path %q is %v, not a string: %s", path, v, body)
	}
	return s
}

// evaluate evaluates the stage's expressions in url, headers and payload.
func (s spinnakerStage) evaluate(t *testing.T, values map[string]string) spinnakerStage {
	t.Helper()
	s.URL = substitute(t, spinnakerExpression, s.URL, values)
	headers := map[string]string{}
	for k, v := range s.CustomHeaders {
		headers[k] = substitute(t, spinnakerExpression, v, values)
	}
	s.CustomHeaders = headers
	s.Payload = json.RawMessage(substitute(t, spinnakerExpression, string(s.Payload), values))
	if !json.Valid(s.Payload) {
		t.Fatalf("the payload is not JSON once evaluated: %s", s.Payload)
	}
	return s
}

func strictJSON(t *testing.T, name string, b []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestSpinnaker runs the webhook stage, the same stage inside the pipeline,
// and the preconfigured webhook of orca-local.yml, as Orca runs them:
// SUCCEEDED for a healthy namespace, TERMINAL for a failing one.
func TestSpinnaker(t *testing.T) {
	t.Parallel()
	var stage spinnakerStage
	strictJSON(t, "spinnaker/webhook-stage.json", readExample(t, "spinnaker/webhook-stage.json"), &stage)

	var pipeline struct {
		Application     string            `json:"application"`
		Name            string            `json:"name"`
		ParameterConfig []map[string]any  `json:"parameterConfig"`
		Stages          []json.RawMessage `json:"stages"`
	}
	strictJSON(t, "spinnaker/pipeline.json", readExample(t, "spinnaker/pipeline.json"), &pipeline)
	var inPipeline *spinnakerStage
	for _, raw := range pipeline.Stages {
		var probe struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &probe)
		if probe.Type == "webhook" {
			inPipeline = new(spinnakerStage)
			strictJSON(t, "spinnaker/pipeline.json webhook stage", raw, inPipeline)
		}
	}
	if inPipeline == nil || !reflect.DeepEqual(normalize(t, *inPipeline), normalize(t, stage)) {
		t.Errorf("the pipeline's webhook stage differs from webhook-stage.json")
	}
	if len(pipeline.ParameterConfig) != 1 || pipeline.ParameterConfig[0]["name"] != "namespace" || pipeline.ParameterConfig[0]["default"] != exampleNamespace {
		t.Errorf("parameterConfig = %v, want one parameter namespace defaulting to %q", pipeline.ParameterConfig, exampleNamespace)
	}

	var orca struct {
		Webhook struct {
			Preconfigured []orcaPreconfigured `yaml:"preconfigured"`
		} `yaml:"webhook"`
	}
	strictYAML(t, "spinnaker/orca-local.yml", readExample(t, "spinnaker/orca-local.yml"), &orca)
	if len(orca.Webhook.Preconfigured) != 1 {
		t.Fatalf("orca-local.yml has %d preconfigured webhooks, want 1", len(orca.Webhook.Preconfigured))
	}
	pre := orca.Webhook.Preconfigured[0]

	w := newWorld(t)
	// The ad hoc stage sends no token: it is for a canaryd without
	// --auth-token-file; the preconfigured one carries the token.
	adHoc := func(ns string) spinnakerStage {
		s := stage.evaluate(t, map[string]string{"parameters.namespace": ns})
		s.URL = inClusterToTest(t, s.URL, w.open)
		return s
	}
	preconfigured := func(ns, token string) spinnakerStage {
		values := map[string]string{}
		for _, p := range pre.Parameters {
			values["parameterValues['"+p.Name+"']"] = p.DefaultValue
		}
		if values["parameterValues['namespace']"] != exampleNamespace {
			t.Fatalf("the namespace parameter defaults to %q, want %q", values["parameterValues['namespace']"], exampleNamespace)
		}
		values["parameterValues['namespace']"] = ns
		s := spinnakerStage{
			Method: pre.Method, URL: pre.URL, Payload: json.RawMessage(pre.Payload),
			CustomHeaders:       map[string]string{},
			FailFastStatusCodes: pre.FailFastStatusCodes, WaitForCompletion: pre.WaitForCompletion,
			StatusURLResolution: pre.StatusURLResolution, StatusJSONPath: pre.StatusJSONPath,
			SuccessStatuses: pre.SuccessStatuses, CanceledStatuses: pre.CanceledStatuses, TerminalStatuses: pre.TerminalStatuses,
			CancelEndpoint: pre.CancelEndpoint, CancelMethod: pre.CancelMethod,
		}
		for k, v := range pre.CustomHeaders {
			if len(v) != 1 {
				t.Fatalf("header %s has %d values, want 1", k, len(v))
			}
			s.CustomHeaders[k] = v[0]
		}
		if s.CustomHeaders["Authorization"] != "Bearer replace-with-a-token-from-canaryd-auth-tokens" {
			t.Fatalf("the preconfigured webhook's Authorization is %q", s.CustomHeaders["Authorization"])
		}
		s.CustomHeaders["Authorization"] = "Bearer " + token
		s = s.evaluate(t, values)
		s.URL = inClusterToTest(t, s.URL, w.authed)
		return s
	}

	for _, tc := range []struct {
		name       string
		stage      func() spinnakerStage
		wantStatus string
		wantPhase  string // in the last body, "" to skip
	}{
		{"stage/echo-good", func() spinnakerStage { return adHoc(harness.EchoGood) }, orcaSucceeded, "Successful"},
		{"stage/echo-bad", func() spinnakerStage { return adHoc(harness.EchoBad) }, orcaTerminal, "Failed"},
		{"preconfigured/echo-good", func() spinnakerStage { return preconfigured(harness.EchoGood, w.authed.Token) }, orcaSucceeded, "Successful"},
		{"preconfigured/echo-bad", func() spinnakerStage { return preconfigured(harness.EchoBad, w.authed.Token) }, orcaTerminal, "Failed"},
		{"preconfigured/wrong token", func() spinnakerStage { return preconfigured(harness.EchoGood, "not-"+w.authed.Token) }, orcaTerminal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := runWebhookStage(t, tc.stage())
			if status != tc.wantStatus {
				t.Errorf("Orca status %s, want %s; last body: %s\n%s", status, tc.wantStatus, body, w.logs())
			}
			if tc.wantPhase != "" && !strings.Contains(body, `"phase":"`+tc.wantPhase+`"`) {
				t.Errorf("last body lacks phase %s: %s", tc.wantPhase, body)
			}
		})
	}
	// Cancelling the pipeline while the stage waits terminates the analysis
	// (Argo's terminate: it ends at once, Successful with "Run
	// Terminated"), instead of leaving it running.
	for _, tc := range []struct {
		name  string
		stage func() spinnakerStage
	}{
		{"stage/cancelled", func() spinnakerStage { return adHoc(harness.EchoGood) }},
		{"preconfigured/cancelled", func() spinnakerStage { return preconfigured(harness.EchoGood, w.authed.Token) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stage()
			statusURL, status, body := startWebhookStage(t, s)
			if statusURL == "" {
				t.Fatalf("the stage did not start: %s %s", status, body)
			}
			if code := cancelWebhookStage(t, s, statusURL); code != http.StatusOK {
				t.Fatalf("cancel answered %d, want 200", code)
			}
			status, body = monitorWebhookStage(t, s, statusURL)
			if status != orcaSucceeded || !strings.Contains(body, `"message":"Run Terminated"`) {
				t.Errorf("after the cancel: Orca status %s, want the analysis terminated; last body: %s", status, body)
			}
		})
	}
	t.Run("stage/prometheus down", func(t *testing.T) {
		w.prom.Stop()
		status, body := runWebhookStage(t, adHoc(harness.EchoGood))
		if status != orcaTerminal || !strings.Contains(body, `"phase":"Error"`) {
			t.Errorf("Orca status %s, want TERMINAL with phase Error; last body: %s", status, body)
		}
	})
}

// normalize turns a stage into a map for comparison, its payload decoded.
func normalize(t *testing.T, s spinnakerStage) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func intStrings(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = itoa(n)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
