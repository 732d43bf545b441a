package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"
	"go.uber.org/zap/zapcore"
	yaml "go.yaml.in/yaml/v2"
)

// env returns a getenv over a fixed set of variables.
func env(vars ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		m[vars[i]] = vars[i+1]
	}
	return func(k string) string { return m[k] }
}

// writeFile writes a file into dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadProblems loads args, with file as the --config file (written into
// dir) when it is not empty, and getenv over vars; it returns the
// problems of the *Error Load fails with, or fails the test (naming the
// case, name) and returns false when Load fails otherwise or not at all.
func loadProblems(t *testing.T, name, dir string, args []string, file string, vars ...string) ([]string, bool) {
	t.Helper()
	if file != "" {
		args = append(args, "--config", writeFile(t, dir, "c.yaml", file))
	}
	_, err := Load(args, env(vars...), io.Discard)
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Errorf("%s: error %v, want an *Error", name, err)
		return nil, false
	}
	return cerr.Problems, true
}

func TestDefaults(t *testing.T) {
	got, err := Load(nil, env(), io.Discard)
	if err != nil {
		t.Fatalf("Load with nothing set: %v", err)
	}
	want := Default()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load with nothing set:\n got %+v\nwant %+v", got, want)
	}
	if got.Listen != ":8080" || got.Datasources[0].URL != "http://localhost:9090" || got.Retention != time.Hour || got.ShutdownGrace != 30*time.Second {
		t.Errorf("defaults differ from api.md: %+v", got)
	}
}

// TestPrecedence checks flag over environment over file over default, for
// a scalar and a list.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.yaml", "retention: 3h\nwebhookAllow: [https://file.example/]\n")
	for _, tc := range []struct {
		name      string
		args      []string
		env       []string
		retention time.Duration
		allow     []string
	}{
		{"default", nil, nil, time.Hour, nil},
		{"file", []string{"--config", file}, nil, 3 * time.Hour, []string{"https://file.example/"}},
		{"config file from the environment", nil, []string{"CANARYD_CONFIG", file}, 3 * time.Hour, []string{"https://file.example/"}},
		{"environment over file", []string{"--config", file},
			[]string{"CANARYD_RETENTION", "2h", "CANARYD_WEBHOOK_ALLOW", "https://a.example/, https://b.example/"},
			2 * time.Hour, []string{"https://a.example/", "https://b.example/"}},
		{"flag over environment", []string{"--config", file, "--retention", "90m", "--webhook-allow", "https://flag.example/", "--webhook-allow=https://flag2.example/"},
			[]string{"CANARYD_RETENTION", "2h", "CANARYD_WEBHOOK_ALLOW", "https://a.example/"},
			90 * time.Minute, []string{"https://flag.example/", "https://flag2.example/"}},
		{"an empty variable is unset", []string{"--config", file}, []string{"CANARYD_RETENTION", " "}, 3 * time.Hour, []string{"https://file.example/"}},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.Retention != tc.retention || !reflect.DeepEqual(c.WebhookAllow, tc.allow) {
			t.Errorf("%s: retention %s, webhook-allow %v; want %s, %v", tc.name, c.Retention, c.WebhookAllow, tc.retention, tc.allow)
		}
	}
}

func TestPrometheusSources(t *testing.T) {
	dir := t.TempDir()
	token := writeFile(t, dir, "token", "s3cret\n")
	password := writeFile(t, dir, "password", "pa55word\n")
	file := writeFile(t, dir, "c.yaml", `
prometheus:
  - name: mimir
    url: http://mimir/prometheus
    headers: {X-Scope-OrgID: team-a}
    authorization: {credentials_file: token}
  - url: http://prometheus:9090
  - name: old-keys
    url: https://old:9090
    bearerTokenFile: token
    tls: {caFile: ca.pem, serverName: prometheus.example, insecureSkipVerify: true}
  - name: old-basic
    url: http://old-basic:9090
    basicAuth: {username: u, passwordFile: password}
  - name: amp
    url: https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1
    follow_redirects: false
    sigv4: {region: eu-west-1, access_key: AKID, secret_key: s3cret-key}
`)
	writeFile(t, dir, "ca.pem", "")
	c, err := Load([]string{"--config", file}, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	http := func(set func(*promconfig.HTTPClientConfig)) *promconfig.HTTPClientConfig {
		h := promconfig.DefaultHTTPClientConfig
		set(&h)
		return &h
	}
	want := []Datasource{
		{Name: "mimir", URL: "http://mimir/prometheus", Headers: map[string]string{"X-Scope-OrgID": "team-a"}, HTTP: http(func(h *promconfig.HTTPClientConfig) {
			h.Authorization = &promconfig.Authorization{CredentialsFile: token}
		})},
		{URL: "http://prometheus:9090", HTTP: http(func(*promconfig.HTTPClientConfig) {})},
		{Name: "old-keys", URL: "https://old:9090", HTTP: http(func(h *promconfig.HTTPClientConfig) {
			h.Authorization = &promconfig.Authorization{Type: "Bearer", CredentialsFile: token}
			h.TLSConfig = promconfig.TLSConfig{CAFile: filepath.Join(dir, "ca.pem"), ServerName: "prometheus.example", InsecureSkipVerify: true}
		})},
		{Name: "old-basic", URL: "http://old-basic:9090", HTTP: http(func(h *promconfig.HTTPClientConfig) {
			h.BasicAuth = &promconfig.BasicAuth{Username: "u", PasswordFile: password}
		})},
		{Name: "amp", URL: "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1", HTTP: http(func(h *promconfig.HTTPClientConfig) { h.FollowRedirects = false }),
			SigV4: &sigv4.SigV4Config{Region: "eu-west-1", AccessKey: "AKID", SecretKey: "s3cret-key"}},
	}
	if !reflect.DeepEqual(c.Datasources, want) {
		t.Errorf("datasources from the file (paths relative to it):\n got %s\nwant %s", show(c.Datasources), show(want))
	}
	// The secrets read from the file never print.
	if out := show(c.Datasources); strings.Contains(out, "s3cret-key") {
		t.Errorf("the datasources show a secret: %s", out)
	}

	c, err = Load([]string{"--config", file, "--prometheus-url", "http://a:9090", "--prometheus-url", "http://b:9090"}, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{c.Datasources[0].URL, c.Datasources[1].URL}; len(c.Datasources) != 2 || got[0] != "http://a:9090" || got[1] != "http://b:9090" {
		t.Errorf("--prometheus-url did not replace the file's datasources: %+v", c.Datasources)
	}
}

// show is the datasources as YAML, as Prometheus shows its own
// configuration: secrets as <secret>.
func show(ds []Datasource) string {
	out, err := yaml.Marshal(ds)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// TestDatasourceProblems: what a datasource's configuration may not say,
// each named with its datasource and key.
func TestDatasourceProblems(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, datasource, want string }{
		{"old and new spelling", "basicAuth: {username: a, password: b}\n    basic_auth: {username: a, password: b}",
			"prometheus[0].basicAuth: the old spelling of basic_auth; give only one of them"},
		{"old and new tls", "tls: {caFile: x}\n    tls_config: {ca_file: x}", "prometheus[0].tls: the old spelling of tls_config; give only one of them"},
		{"old bearer and authorization", "bearerTokenFile: x\n    authorization: {credentials: y}", "prometheus[0].bearerTokenFile: the old spelling of authorization.credentials_file; give only one of them"},
		{"proxy from the environment", "proxy_from_environment: true",
			"prometheus[0]: proxy_from_environment: canaryd never takes a proxy from the environment (HTTP_PROXY and friends); name one with proxy_url"},
		{"missing file", "authorization: {credentials_file: nope}", "prometheus[0].authorization.credentials_file: " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"sigv4 with basic auth", "sigv4: {region: eu-west-1}\n    basic_auth: {username: a, password: s3cret-pw}",
			"prometheus[0]: sigv4 signs every query: it cannot be combined with basic_auth, authorization or oauth2"},
		{"two credentials", "basic_auth: {username: a, password: s3cret-pw}\n    authorization: {credentials: s3cret-tok}",
			"prometheus[0]: at most one of basic_auth, oauth2 & authorization must be configured"},
		{"unknown key", "tls_config: {ca_fil: x}", "line 4: unknown key ca_fil"},
		{"unknown sigv4 key", "sigv4: {regio: x}", "line 4: unknown key regio (in sigv4)"},
	} {
		file := writeFile(t, dir, "c.yaml", "prometheus:\n  - name: x\n    url: http://p:9090\n    "+tc.datasource+"\n")
		_, err := Load([]string{"--config", file}, env(), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant a problem containing %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v shows a secret", tc.name, err)
		}
	}
}

// TestExamples loads every example configuration under testdata/config.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("example configurations: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := Load([]string{"--config", f}, env(), io.Discard); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestInvalid checks that every problem of a configuration is reported at
// once, each naming where it is.
func TestInvalid(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty-tokens", "# no tokens\n\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		file string
		want []string
	}{
		{name: "bad values from every source",
			args: []string{"--listen", "nowhere", "--max-analyses", "0", "--retention", "forever"},
			env:  []string{"CANARYD_SHUTDOWN_GRACE", "-1s", "CANARYD_MAX_FINISHED", "many", "CANARYD_LOG_LEVEL", "loud"},
			want: []string{
				`--listen: "nowhere" is not host:port`,
				"--max-analyses: must be at least 1, got 0",
				`--retention: invalid duration "forever"`,
				"--shutdown-grace: must not be negative, got -1s",
				`CANARYD_MAX_FINISHED: invalid integer "many"`,
				`CANARYD_LOG_LEVEL: invalid log level "loud"`,
			}},
		{name: "bad URLs",
			args: []string{"--prometheus-url", "localhost:9090", "--webhook-allow", "hooks", "--webhook-allow", "https://hooks.example.com/ci?token=x", "--prometheus-oauth2-token-url", "ftp://x"},
			want: []string{
				`prometheus[0].url: "localhost:9090" is not an http or https URL`,
				`--webhook-allow[0]: "hooks" is not an http or https URL`,
				`--webhook-allow[1]: webhook: allow prefix "https://hooks.example.com/ci?token=x" has a query or fragment`,
				`--prometheus-oauth2-token-url[0]: "ftp://x" is not an http or https URL`,
			}},
		{name: "bad external URL",
			args: []string{"--prometheus-external-url", "prometheus.example.com"},
			want: []string{`--prometheus-external-url: "prometheus.example.com" is not an http or https URL`}},
		{name: "external URL with a password",
			args: []string{"--prometheus-external-url", "https://u:p@prometheus.example.com"},
			want: []string{"--prometheus-external-url: must have no userinfo, query or fragment"}},
		{name: "missing files",
			args: []string{"--auth-token-file", filepath.Join(dir, "nope"), "--webhook-secret-file", filepath.Join(dir, "nope2"), "--templates", filepath.Join(dir, "nope3")},
			want: []string{"--auth-token-file: " + filepath.Join(dir, "nope") + ": no such file or directory", "--webhook-secret-file:", "--templates:"}},
		{name: "timeouts",
			args: []string{"--templates-poll-interval", "-1s", "--evaluate-timeout", "0s", "--webhook-max-elapsed", "0s", "--webhook-timeout", "-1s"},
			want: []string{
				"--templates-poll-interval: must not be negative (0 checks only on SIGHUP), got -1s",
				"--evaluate-timeout: must be positive, got 0s",
				"--webhook-max-elapsed: must be positive, got 0s",
				"--webhook-timeout: must be positive, got -1s",
			}},
		{name: "a token file without tokens",
			args: []string{"--auth-token-file", empty},
			want: []string{"--auth-token-file: " + empty + " holds no token"}},
		{name: "unknown and mistyped keys in the file",
			file: "listen: :80\nretension: 1h\nprometheus: {url: x}\nmaxAnalyses: [1]\n",
			want: []string{"line 2: unknown key retension", "line 3: a mapping cannot be a list of datasources", "line 4: a list cannot be a string"}},
		{name: "datasource problems",
			file: `prometheus:
  - {name: a, url: "http://a:9090?x=1", basicAuth: {password: p}}
  - {name: a, url: "http://b:9090", bearerTokenFile: nope, tls: {certFile: c.pem}}
  - {name: c, url: "http://c:9090", basicAuth: {username: u, password: p, passwordFile: p}}
`,
			want: []string{
				"prometheus[0].url: must not have a query string or fragment",
				`prometheus[1].name: duplicate name "a"`,
				"prometheus[1].authorization.credentials_file:",
				"prometheus[1].tls_config.cert_file:",
				"prometheus[1]: tls_config: exactly one of key or key_file must be configured when a client certificate is configured",
				"prometheus[2]: at most one of basic_auth password, password_file & password_ref must be configured",
			}},
		{name: "both forms of datasources",
			file: "prometheus: [{url: 'http://a:9090'}]\nprometheusUrl: ['http://b:9090']\n",
			want: []string{"give prometheus (datasources) or prometheusUrl (plain URLs), not both"}},
		{name: "a missing file", args: []string{"--config", filepath.Join(dir, "missing.yaml")},
			want: []string{"--config: " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"}},
		{name: "positional arguments", args: []string{"extra"}, want: []string{`unexpected arguments ["extra"]`}},
		{name: "an unknown flag", args: []string{"--listne", ":1"}, want: []string{"flag provided but not defined: -listne"}},
	} {
		problems, ok := loadProblems(t, tc.name, dir, tc.args, tc.file, tc.env...)
		if !ok {
			continue
		}
		for _, want := range tc.want {
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, want)
			}
			if !found {
				t.Errorf("%s: no problem contains %q; got:\n  %s", tc.name, want, strings.Join(problems, "\n  "))
			}
		}
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens", "# comment\ntoken-one-0123456789\n\n  token-two-0123456789  \n")
	secret := writeFile(t, dir, "secret", "hmac-key\n")
	c, err := Load([]string{"--auth-token-file", tokens, "--webhook-secret-file", secret}, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AuthTokens) != 2 || c.AuthTokens[0].Reveal() != "token-one-0123456789" || c.AuthTokens[1].Reveal() != "token-two-0123456789" || c.WebhookSecret.Reveal() != "hmac-key" {
		t.Fatalf("secrets read wrongly: %d tokens", len(c.AuthTokens))
	}
	js, _ := json.Marshal(c)
	for _, printed := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), string(js)} {
		for _, s := range []string{"token-one", "token-two", "hmac-key"} {
			if strings.Contains(printed, s) {
				t.Errorf("the configuration prints the secret %q: %s", s, printed)
			}
		}
	}
}

// TestWebhookSecretFile reads the key as the webhook package does: a
// whsec_ key decoded, anything else as it is, the trailing newline off; a
// file that holds no key is a problem that never quotes what it holds.
func TestWebhookSecretFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, key, problem string
	}{
		{name: "raw", content: "hmac-key\n", key: "hmac-key"},
		{name: "Standard Webhooks", content: "whsec_" + base64.StdEncoding.EncodeToString([]byte("decoded key")) + "\r\n", key: "decoded key"},
		{name: "empty", content: "\n", problem: "the secret is empty"},
		{name: "whsec_ without base64", content: "whsec_not*base64-SECRET", problem: "not valid base64"},
	} {
		file := writeFile(t, dir, "secret", tc.content)
		c, err := Load([]string{"--webhook-secret-file", file}, env(), io.Discard)
		if tc.problem == "" {
			if err != nil || c.WebhookSecret.Reveal() != tc.key {
				t.Errorf("%s: key read wrongly (error %v)", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "--webhook-secret-file: ") || !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("%s: error %v, want one on --webhook-secret-file saying %q", tc.name, err, tc.problem)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error quotes the file's content: %v", tc.name, err)
		}
	}
	c, err := Load(nil, env(), io.Discard)
	if err != nil || c.WebhookSecret != "" || c.WebhookMaxElapsed != 2*time.Minute || c.WebhookTimeout != 10*time.Second {
		t.Errorf("defaults: secret set %v, max elapsed %s, timeout %s, error %v; want unsigned, 2m, 10s", c.WebhookSecret != "", c.WebhookMaxElapsed, c.WebhookTimeout, err)
	}
	file := writeFile(t, dir, "c.yaml", "webhookMaxElapsed: 30s\nwebhookTimeout: 2s\n")
	if c, err := Load([]string{"--config", file}, env(), io.Discard); err != nil || c.WebhookMaxElapsed != 30*time.Second || c.WebhookTimeout != 2*time.Second {
		t.Errorf("from the file: max elapsed %v, timeout %v, error %v; want 30s, 2s", c.WebhookMaxElapsed, c.WebhookTimeout, err)
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := Load([]string{"-h"}, env(), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-prometheus-url", "CANARYD_PROMETHEUS_URL", "-shutdown-grace", "-max-finished", "camelCase"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestLogLevel(t *testing.T) {
	c, err := Load([]string{"--log-level", "debug"}, env(), io.Discard)
	if err != nil || c.LogLevel != zapcore.DebugLevel {
		t.Errorf("--log-level debug: %v, %v", c, err)
	}
}

func TestCamelCase(t *testing.T) {
	for flagName, want := range map[string]string{
		"listen": "listen", "max-analyses": "maxAnalyses", "prometheus-oauth2-token-url": "prometheusOauth2TokenUrl",
	} {
		if got := camelCase(flagName); got != want {
			t.Errorf("camelCase(%q) = %q, want %q", flagName, got, want)
		}
	}
}
