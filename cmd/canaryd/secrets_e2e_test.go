package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
)

// The secrets of TestSecretsNeverLeak: every kind canaryd handles, each a
// value found nowhere else.
const (
	secretAuthToken      = "auth-tok-7f3a9c0b4d6e21"
	secretWebhookKey     = "whk-secret-51d2e8"
	secretBearerFile     = "ds-bearer-93b1c7"
	secretBasicFile      = "ds-basic-pass-2c8e4f"
	secretDSUserinfo     = "dsuserinfopass6a1b"
	secretMetricHeader   = "s3cr3t-hdr-8e2d1a"
	secretSpecBasic      = "spec-basic-pass-4f7c"
	secretClientSecret   = "oauth-client-secret-1e9d"
	secretAccessToken    = "oauth-access-token-5b3a"
	secretAddrUserinfo   = "addrpass7d2c"
	secretArgUserinfo    = "argpass3e8f"
	secretArgToken       = "arg-token-value-6c1d"
	secretHookQuery      = "hookquerytoken9a4b"
	secretHookUserinfo   = "hookpass2f6e"
	secretTemplateHeader = "tmpl-hdr-secret-0b7e"
	secretTemplateBasic  = "tmpl-basic-pass-3d5a"
	secretTemplateClient = "tmpl-client-secret-8f1c"
	secretTemplateAddr   = "tmpladdrpass5e2a"
	secretJudgeAddr      = "judgeaddrpass1a7f"
	secretJudgeHeader    = "judge-hdr-secret-4c9b"
)

// echoProm is a Prometheus stand-in that answers the query "echo" with a
// 400 whose error repeats every header and form value it got, as a
// misbehaving proxy or server might: canaryd must scrub what it sent from
// the error it reports. It keeps what it got, to prove the credentials
// were sent at all.
type echoProm struct {
	srv *httptest.Server
	mu  sync.Mutex
	got strings.Builder
}

func newEchoProm(t *testing.T) *echoProm {
	p := &echoProm{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		dump := fmt.Sprintf("headers %v form %v", r.Header, r.PostForm)
		p.mu.Lock()
		p.got.WriteString(dump + "\n")
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("query") != "echo" {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(dump)
		_, _ = fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%s}`, msg)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *echoProm) received() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got.String()
}

// hostPort is a server's 127.0.0.1:PORT.
func hostPort(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// TestSecretsNeverLeak configures every secret canaryd handles at once —
// the auth token file, the webhook secret, a datasource's bearer token file,
// basic-auth password file and URL userinfo, a metric's Authorization
// header, basic-auth password, OAuth2 client secret (and the access token
// it buys), addresses with userinfo in the spec and through an argument, a
// secret argument, a webhook URL with a token in its query, credentials in a
// named template — runs the built binary through every endpoint that could
// show them, with Prometheus servers that echo credentials back in their
// errors, and looks for each secret's value in every response body, the
// webhook deliveries, /metrics and the debug log. None may appear.
func TestSecretsNeverLeak(t *testing.T) {
	bearer, basic, userinfo, open := newEchoProm(t), newEchoProm(t), newEchoProm(t), newEchoProm(t)
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "Bearer", "expires_in": 3600}`, secretAccessToken)
	}))
	defer tokenEndpoint.Close()
	var hookMu sync.Mutex
	var hookText strings.Builder
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hookMu.Lock()
		h := r.Header.Clone()
		h.Del("Webhook-Signature") // an HMAC of the body, not the key
		fmt.Fprintf(&hookText, "%s %v %s\n", r.URL.Path, h, body)
		hookMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hooks.Close()

	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("tokens", "# the pipeline's token\n"+secretAuthToken+"\n")
	write("webhook-secret", secretWebhookKey+"\n")
	write("bearer-token", secretBearerFile+"\n")
	write("basic-password", secretBasicFile+"\n")
	write("templates/with-secrets.yaml", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: with-secrets}
spec:
  args:
    - {name: api-token, value: %s}
  metrics:
    - name: m
      consecutiveErrorLimit: 0
      provider:
        prometheus:
          address: http://tmpluser:%s@%s
          query: echo
          headers: [{key: Authorization, value: "Bearer %s"}, {key: X-Api-Token, value: "{{args.api-token}}"}]
          authentication:
            basicAuth: {username: tmpl, password: %s}
            oauth2: {tokenUrl: %s/oauth/token, clientId: tmpl, clientSecret: %s}
`, secretArgToken+"-default", secretTemplateAddr, hostPort(open.srv), secretTemplateHeader, secretTemplateBasic, tokenEndpoint.URL, secretTemplateClient))
	write("templates/judge-secrets.yaml", fmt.Sprintf(`apiVersion: canaryd.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: judge-secrets}
spec:
  metrics:
    - name: j
      provider:
        judge:
          address: http://judgeuser:%s@%s
          headers: [{key: Authorization, value: "Bearer %s"}]
          canary: echo
          baseline: echo
          lookback: 10m
          step: 1m
`, secretJudgeAddr, hostPort(open.srv), secretJudgeHeader))
	config := write("canaryd.yaml", fmt.Sprintf(`prometheus:
  - {name: bearer, url: %s, bearerTokenFile: bearer-token}
  - {name: basic, url: %s, basicAuth: {username: canaryd, passwordFile: basic-password}}
  - {name: userinfo, url: "http://dsuser:%s@%s"}
  - {name: open, url: %s}
prometheusOauth2TokenUrl: [%s/oauth/]
authTokenFile: tokens
webhookSecretFile: webhook-secret
webhookAllow: [%s/hooks]
templates: templates
errorRetry: 100ms
`, bearer.srv.URL, basic.srv.URL, secretDSUserinfo, hostPort(userinfo.srv), open.srv.URL, tokenEndpoint.URL, hooks.URL))

	cmd, base, logs, exited := startServe(t, "--config", config)

	spec := fmt.Sprintf(`args:
  - {name: prom}
  - {name: token}
metrics:
  - {name: bearer-ds, consecutiveErrorLimit: 0, provider: {prometheus: {address: %[1]s, query: echo}}}
  - {name: basic-ds, consecutiveErrorLimit: 0, provider: {prometheus: {address: %[2]s, query: echo}}}
  - {name: userinfo-ds, consecutiveErrorLimit: 0, provider: {prometheus: {address: "http://%[3]s", query: echo}}}
  - name: header
    consecutiveErrorLimit: 0
    provider: {prometheus: {address: %[4]s, query: echo, headers: [{key: Authorization, value: "Bearer %[5]s"}]}}
  - name: arg-header
    consecutiveErrorLimit: 0
    provider: {prometheus: {address: %[4]s, query: echo, headers: [{key: X-Api-Token, value: "{{args.token}}"}]}}
  - name: spec-basic
    consecutiveErrorLimit: 0
    provider: {prometheus: {address: %[4]s, query: echo, authentication: {basicAuth: {username: specuser, password: %[6]s}}}}
  - name: oauth
    consecutiveErrorLimit: 0
    provider: {prometheus: {address: %[4]s, query: echo, authentication: {oauth2: {tokenUrl: "%[7]s/oauth/token", clientId: cid, clientSecret: %[8]s}}}}
  - {name: addr-userinfo, consecutiveErrorLimit: 0, provider: {prometheus: {address: "http://addruser:%[9]s@%[10]s", query: echo}}}
  - {name: arg-address, consecutiveErrorLimit: 0, provider: {prometheus: {address: "{{args.prom}}", query: echo}}}
`, bearer.srv.URL, basic.srv.URL, hostPort(userinfo.srv), open.srv.URL, secretMetricHeader, secretSpecBasic,
		tokenEndpoint.URL, secretClientSecret, secretAddrUserinfo, hostPort(open.srv))
	args := "arg.prom=" + url.QueryEscape("http://arguser:"+secretArgUserinfo+"@"+hostPort(open.srv)) + "&arg.token=" + secretArgToken
	hook := hooks.URL + "/hooks/deploy?token=" + secretHookQuery

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
		req.Header.Set("Authorization", "Bearer "+secretAuthToken)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		// The answer only: the request itself carries secrets.
		fmt.Fprintf(&seen, "%d %v %s\n", resp.StatusCode, resp.Header, data)
		return resp.StatusCode, string(data)
	}

	// A round, an analysis with a webhook, its reads and stream, a
	// backtest, the templates, refusals.
	if status, body := call(http.MethodPost, "/v1/evaluate?"+args, "application/yaml", spec); status != http.StatusServiceUnavailable || !strings.Contains(body, "bad_data") {
		t.Errorf("the echoing round: %d %s, want a 503 Error round of bad_data errors", status, body)
	}
	status, body := call(http.MethodPost, "/v1/analyses?wait=true&"+args+"&webhook="+url.QueryEscape(hook)+"&webhook.events=measurement,completed", "application/yaml", spec)
	var a api.Analysis
	if err := json.Unmarshal([]byte(body), &a); err != nil || status != http.StatusOK || a.Phase != api.PhaseError {
		t.Fatalf("the echoing analysis: %d %s, want 200 with phase Error", status, body)
	}
	if got := a.Args["prom"]; got != "http://*****@"+hostPort(open.srv) {
		t.Errorf("the address argument reads %q in the resource, want its credentials masked", got)
	}
	call(http.MethodGet, "/v1/analyses", "", "")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "application/x-ndjson")
	call(http.MethodGet, "/v1/analyses/"+a.ID, "", "", "Accept", "text/event-stream")
	call(http.MethodDelete, "/v1/analyses/"+a.ID, "", "")
	call(http.MethodPost, "/v1/backtests?start=-10m&end=-9m&"+args, "application/yaml", spec)
	call(http.MethodPost, "/v1/gates?"+args, "application/yaml", spec)
	call(http.MethodGet, "/v1/templates", "", "")
	if status, body := call(http.MethodGet, "/v1/templates/with-secrets", "", ""); status != http.StatusOK || !strings.Contains(body, "*****") {
		t.Errorf("GET /v1/templates/with-secrets: %d %s, want 200 with the credentials masked", status, body)
	}
	call(http.MethodPost, "/v1/templates/with-secrets/evaluate", "", "")
	if status, body := call(http.MethodGet, "/v1/templates/judge-secrets", "", ""); status != http.StatusOK || !strings.Contains(body, "*****") {
		t.Errorf("GET /v1/templates/judge-secrets: %d %s, want 200 with the credentials masked", status, body)
	}
	call(http.MethodPost, "/v1/templates/judge-secrets/evaluate", "", "")
	call(http.MethodPost, "/v1/templates/with-secrets/analyses?wait=true", "", "")
	if status, _ := call(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape("http://u:"+secretHookUserinfo+"@"+hostPort(hooks)+"/hooks"), "application/yaml", spec); status != http.StatusBadRequest {
		t.Errorf("a webhook with credentials: %d, want 400", status)
	}
	if status, _ := call(http.MethodPost, "/v1/evaluate?arg.prom="+url.QueryEscape("http://x:"+secretArgUserinfo+"@169.254.169.254")+"&arg.token=x", "application/yaml", spec); status != http.StatusBadRequest {
		t.Errorf("an address with credentials that is not allowed: %d, want 400", status)
	}
	if status, _ := call(http.MethodGet, "/v1/analyses", "", "", "Authorization", "Bearer "+secretAuthToken+"x"); status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", status)
	}
	_, metrics := call(http.MethodGet, "/metrics", "", "")
	if !strings.Contains(metrics, "canaryd_analyses_finished_total") {
		t.Errorf("/metrics: %.200s", metrics)
	}

	// Every webhook event delivered, then a clean stop.
	waitLog(t, logs, `"msg":"webhook delivered"`)
	waitLog(t, logs, `"event":"completed"`)
	time.Sleep(200 * time.Millisecond)
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

	// The credentials did go where they belong: the test is not vacuous.
	for _, c := range []struct {
		where *echoProm
		what  string
	}{
		{bearer, "Bearer " + secretBearerFile},
		{basic, basicAuth("canaryd", secretBasicFile)},
		{userinfo, basicAuth("dsuser", secretDSUserinfo)},
		{open, "Bearer " + secretMetricHeader},
		{open, secretArgToken},
		{open, basicAuth("specuser", secretSpecBasic)},
		{open, "Bearer " + secretAccessToken},
		{open, basicAuth("addruser", secretAddrUserinfo)},
		{open, basicAuth("arguser", secretArgUserinfo)},
		{open, "Bearer " + secretTemplateHeader},
		{open, "Bearer " + secretJudgeHeader},
	} {
		if !strings.Contains(c.where.received(), c.what) {
			t.Errorf("Prometheus never got %q: the test does not exercise it", c.what)
		}
	}

	hookMu.Lock()
	delivered := hookText.String()
	hookMu.Unlock()
	if !strings.Contains(delivered, `"type":"completed"`) {
		t.Errorf("the webhook got no completed event:\n%s", delivered)
	}
	places := map[string]string{"responses": seen.String(), "webhook deliveries": delivered, "log": logs.text()}
	for _, secret := range []string{
		secretAuthToken, secretWebhookKey, secretBearerFile, secretBasicFile, secretDSUserinfo, secretMetricHeader,
		secretSpecBasic, secretClientSecret, secretAccessToken, secretAddrUserinfo, secretArgUserinfo, secretArgToken,
		secretHookQuery, secretHookUserinfo, secretTemplateHeader, secretTemplateBasic, secretTemplateClient,
		secretTemplateAddr, secretJudgeAddr, secretJudgeHeader,
		base64.StdEncoding.EncodeToString([]byte(secretWebhookKey)),
		encodedCredentials("canaryd", secretBasicFile), encodedCredentials("dsuser", secretDSUserinfo),
		encodedCredentials("specuser", secretSpecBasic), encodedCredentials("addruser", secretAddrUserinfo),
		encodedCredentials("arguser", secretArgUserinfo), encodedCredentials("tmpl", secretTemplateBasic),
		encodedCredentials("cid", secretClientSecret), encodedCredentials("tmpl", secretTemplateClient),
	} {
		for where, text := range places {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%q appears in the %s: …%s…", secret, where, text[max(0, i-200):min(len(text), i+len(secret)+50)])
			}
		}
	}
}

// basicAuth is an Authorization header's value for basic authentication.
func basicAuth(user, password string) string { return "Basic " + encodedCredentials(user, password) }

// encodedCredentials is user:password as basic authentication sends it.
func encodedCredentials(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
