package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ddKeys are the Datadog keys of the tests of --credentials-dir.
const (
	ddAPIKey = "dd-api-c4e1f7"
	ddAppKey = "dd-app-9b02d3"
)

// datadogBackend is a Datadog stand-in: /api/v1/query answers a value
// when the request carries the keys ddAPIKey and ddAppKey, and otherwise
// a 403 that quotes every header of the request, as a misbehaving proxy
// might. It counts the requests with the keys.
func datadogBackend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var keyed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/query" && r.Header.Get("DD-API-KEY") == ddAPIKey && r.Header.Get("DD-APPLICATION-KEY") == ddAppKey {
			keyed.Add(1)
			_, _ = io.WriteString(w, `{"status":"ok","series":[{"pointlist":[[1598867910000,0.002]]}]}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"errors":["Forbidden: headers %v"]}`, r.Header)
	}))
	t.Cleanup(srv.Close)
	return srv, &keyed
}

// writeSecrets lays out a credentials directory, as Kubernetes mounts
// Secrets: files["datadog/api-key"] is the key api-key of the Secret
// datadog.
func writeSecrets(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, v := range files {
		path := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// datadogSecret is the Secret datadog of a credentials directory whose
// address is backend.
func datadogSecret(backend string) map[string]string {
	return map[string]string{"datadog/api-key": ddAPIKey, "datadog/app-key": ddAppKey, "datadog/address": backend}
}

const datadogMetric = `
  - name: errors
    successCondition: result < 0.01
    provider:
      datadog:
        query: avg:trace.http.request.errors{service:checkout}
        interval: 5m
`

// datadogTemplate is a template of one Datadog metric, named name.
func datadogTemplate(name string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: " + name + "}\nspec:\n  metrics:" + datadogMetric
}

const newRelicTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: nr}
spec:
  metrics:
  - name: throughput
    successCondition: result > 0
    provider:
      newRelic:
        query: FROM Transaction SELECT count(*) SINCE 5 minutes ago
`

// runCLIEnv is runCLIRaw with env added to the environment, and
// DD_API_KEY, DD_APP_KEY and DD_ADDRESS cleared (they would stand for the
// directory's Secret).
func runCLIEnv(t *testing.T, stdin string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), "DD_API_KEY=", "DD_APP_KEY=", "DD_ADDRESS=", "CANARYD_CREDENTIALS_DIR="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("canaryd %v: %v", args, err)
	}
	return cliResult{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// TestCredentialsDirOnTheCommandLine: run takes the Datadog keys from
// --credentials-dir or CANARYD_CREDENTIALS_DIR; run, backtest and validate
// refuse a directory that is not there, naming the flag, as serve does;
// validate given a directory checks that a metric's Secret files are in
// it; a backtest of a New Relic metric says that it cannot be backtested
// before anything of its credentials.
func TestCredentialsDirOnTheCommandLine(t *testing.T) {
	backend, keyed := datadogBackend(t)
	creds, empty := t.TempDir(), t.TempDir()
	writeSecrets(t, creds, datadogSecret(backend.URL))
	doc := datadogTemplate("dd")

	if got := runCLIEnv(t, doc, nil, "run", "-q", "-f", "-", "--credentials-dir", creds); got.code != 0 || !strings.Contains(got.stdout, `"Successful"`) {
		t.Errorf("run --credentials-dir: exit %d\n%s\n%s", got.code, got.stdout, got.stderr)
	}
	if got := runCLIEnv(t, doc, []string{"CANARYD_CREDENTIALS_DIR=" + creds}, "run", "-q", "-f", "-"); got.code != 0 || !strings.Contains(got.stdout, `"Successful"`) {
		t.Errorf("run with CANARYD_CREDENTIALS_DIR: exit %d\n%s\n%s", got.code, got.stdout, got.stderr)
	}
	if keyed.Load() != 2 {
		t.Errorf("%d requests with the directory's keys, want 2", keyed.Load())
	}
	if got := runCLIEnv(t, doc, nil, "run", "-q", "-f", "-", "--credentials-dir", empty); got.code != exitUsage || !strings.Contains(got.stderr, "datadog/") {
		t.Errorf("run, the Secret missing: exit %d, want %d naming datadog/\n%s", got.code, exitUsage, got.stderr)
	}

	missing := filepath.Join(empty, "nonexistent")
	for _, args := range [][]string{
		{"run", "-q", "-f", "-"},
		{"backtest", "-f", "-", "--start", "-1h"},
		{"validate", "-f", "-"},
	} {
		for _, how := range []struct {
			args []string
			env  []string
		}{{append(args, "--credentials-dir", missing), nil}, {args, []string{"CANARYD_CREDENTIALS_DIR=" + missing}}} {
			got := runCLIEnv(t, doc, how.env, how.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, "--credentials-dir") || !strings.Contains(got.stderr, "no such file or directory") ||
				strings.Contains(got.stderr, "reads no credentials directory") {
				t.Errorf("%s %v, a directory that is not there: exit %d, want %d naming --credentials-dir\n%s", args[0], how.env, got.code, exitUsage, got.stderr)
			}
		}
	}

	if got := runCLIEnv(t, doc, nil, "validate", "-f", "-"); got.code != 0 {
		t.Errorf("validate, no directory: exit %d, want 0 (the document only)\n%s", got.code, got.stderr)
	}
	if got := runCLIEnv(t, doc, nil, "validate", "-f", "-", "--credentials-dir", creds); got.code != 0 {
		t.Errorf("validate, the Secret there: exit %d\n%s", got.code, got.stderr)
	}
	if got := runCLIEnv(t, doc, nil, "validate", "-f", "-", "--credentials-dir", empty); got.code != exitUsage ||
		!strings.Contains(got.stderr, "metrics[0].provider.datadog") || !strings.Contains(got.stderr, "datadog/") {
		t.Errorf("validate, the Secret missing: exit %d, want %d naming the field and the file\n%s", got.code, exitUsage, got.stderr)
	}

	got := runCLIEnv(t, newRelicTemplate, nil, "backtest", "-f", "-", "--start", "-1h")
	if got.code != exitUsage || !strings.Contains(got.stderr, `metrics[0].provider.newRelic: metric "throughput" cannot be backtested`) ||
		strings.Contains(got.stderr, "credentials") || strings.Contains(got.stderr, "personal-api-key") {
		t.Errorf("backtest of New Relic without credentials: exit %d, want %d saying it cannot be backtested, and nothing of credentials\n%s", got.code, exitUsage, got.stderr)
	}
}

// evaluateTemplate is POST /v1/templates/{name}/evaluate's status and body.
func evaluateTemplate(t *testing.T, base, name string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/templates/"+name+"/evaluate", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestCredentialsDirOnServe: serve takes --credentials-dir from its flag,
// CANARYD_CREDENTIALS_DIR and the configuration key credentialsDir, and
// refuses to start on a directory that is not there.
func TestCredentialsDirOnServe(t *testing.T) {
	backend, keyed := datadogBackend(t)
	creds := t.TempDir()
	writeSecrets(t, creds, datadogSecret(backend.URL))
	templates := t.TempDir()
	writeSecrets(t, templates, map[string]string{"dd.yaml": datadogTemplate("dd")})
	config := filepath.Join(t.TempDir(), "canaryd.yaml")
	if err := os.WriteFile(config, []byte("credentialsDir: "+creds+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clear := []string{"DD_API_KEY=", "DD_APP_KEY=", "DD_ADDRESS=", "CANARYD_CREDENTIALS_DIR="}
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flag", []string{"--credentials-dir", creds}, nil},
		{"environment", nil, []string{"CANARYD_CREDENTIALS_DIR=" + creds}},
		{"configuration", []string{"--config", config}, nil},
	} {
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--prometheus-url", "http://127.0.0.1:9", "--templates", templates}, c.args...)
		cmd, logs, exited := startProcess(t, args, append(clear, c.env...)...)
		base := "http://" + logs.waitAddress(t, exited)
		before := keyed.Load()
		if status, body := evaluateTemplate(t, base, "dd"); status != http.StatusOK || !strings.Contains(body, "Successful") {
			t.Errorf("%s: evaluate: %d %s", c.name, status, body)
		}
		if keyed.Load() != before+1 {
			t.Errorf("%s: Datadog got no request with the directory's keys", c.name)
		}
		_ = cmd.Process.Kill()
		<-exited
	}

	got := runCLIEnv(t, "", nil, "serve", "--listen", "127.0.0.1:0", "--prometheus-url", "http://127.0.0.1:9", "--credentials-dir", filepath.Join(creds, "nonexistent"))
	if got.code != exitUsage || !strings.Contains(got.stderr, "--credentials-dir") {
		t.Errorf("serve, a directory that is not there: exit %d, want %d naming --credentials-dir\n%s", got.code, exitUsage, got.stderr)
	}
}

// TestTemplateBeforeItsSecret: a template loaded while its Secret is not
// in --credentials-dir yet (mounted optional, created after canaryd
// started) loads, is refused on use with a 400 naming the field and the
// file, and runs once the Secret is there, without a reload or a restart.
func TestTemplateBeforeItsSecret(t *testing.T) {
	backend, keyed := datadogBackend(t)
	creds, templates := t.TempDir(), t.TempDir()
	writeSecrets(t, templates, map[string]string{"dd.yaml": datadogTemplate("dd")})
	_, base, _, _ := startServe(t, "--prometheus-url", "http://127.0.0.1:9", "--templates", templates,
		"--templates-poll-interval", "0", "--credentials-dir", creds)

	if status, d := getTemplate(t, base, "dd"); status != http.StatusOK || d.Status != "ok" {
		t.Fatalf("the template, before its Secret: %d, status %q (%v); want 200, ok", status, d.Status, d.Errors)
	}
	if status, body := evaluateTemplate(t, base, "dd"); status != http.StatusBadRequest ||
		!strings.Contains(body, "metrics[0].provider.datadog") || !strings.Contains(body, "datadog/") {
		t.Errorf("evaluate, before the Secret: %d %s; want a 400 naming the field and the file", status, body)
	}

	writeSecrets(t, creds, datadogSecret(backend.URL))
	// The directory's Secrets are read again once they are older than
	// credentials.DefaultMaxAge (10 s): a missing one too.
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body := evaluateTemplate(t, base, "dd")
		if status == http.StatusOK && strings.Contains(body, "Successful") {
			break
		}
		if status != http.StatusBadRequest || time.Now().After(deadline) {
			t.Fatalf("evaluate, after the Secret was created: %d %s; want 200 Successful", status, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if keyed.Load() == 0 {
		t.Error("Datadog got no request with the Secret's keys")
	}
}
