package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// startServe starts the built binary's serve with args and returns its
// base URL, its logs and a channel of its exit code. The process is killed
// at the end of the test if it is still running.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string, *serveLogs, <-chan int) {
	t.Helper()
	cmd, logs, exited := startProcess(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	return cmd, "http://" + logs.waitAddress(t, exited), logs, exited
}

// waitLog waits until the log has a line containing text.
func waitLog(t *testing.T, logs *serveLogs, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.text(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the log has no %s:\n%s", text, logs.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// getTemplate reads GET /v1/templates/{name}.
func getTemplate(t *testing.T, base, name string) (int, server.TemplateDetail) {
	t.Helper()
	resp, err := http.Get(base + "/v1/templates/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d server.TemplateDetail
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("GET /v1/templates/%s: %v: %s", name, err, data)
		}
	}
	return resp.StatusCode, d
}

// countOf returns the count of the template's first metric, as loaded.
func countOf(d server.TemplateDetail) string {
	metrics, _ := d.Spec["metrics"].([]any)
	if len(metrics) == 0 {
		return ""
	}
	m, _ := metrics[0].(map[string]any)
	return strings.TrimSpace(jsonText(m["count"]))
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestServeTemplatesReload serves testdata/templates' success-rate from a
// directory with polling off, then changes the file and sends SIGHUP: the
// new version must be served; then breaks it and sends SIGHUP: the last good
// version must stay, listed as stale with the errors.
func TestServeTemplatesReload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	prom := promtest.Start(t)
	dir := t.TempDir()
	original, err := os.ReadFile("../../testdata/templates/success-rate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "success-rate.yaml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(string(original))

	cmd, base, logs, exited := startServe(t, "--prometheus-url", prom.URL, "--templates", dir, "--templates-poll-interval", "0")

	status, d := getTemplate(t, base, "success-rate")
	if status != http.StatusOK || d.Status != "ok" || countOf(d) != "3" {
		t.Fatalf("at start: %d, status %q, count %s; want 200, ok, 3", status, d.Status, countOf(d))
	}
	// The template runs: the server's Prometheus check passed at load.
	resp, err := http.Post(base+"/v1/templates/success-rate/evaluate", "application/json", strings.NewReader(`{"args": {"namespace": "echo-good"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var round map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&round)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || round["phase"] != "Successful" {
		t.Errorf("evaluate echo-good: %d %v, want 200 Successful", resp.StatusCode, round["phase"])
	}

	// A new version, picked up on SIGHUP (polling is off).
	changed := strings.Replace(string(original), "count: 3", "count: 5", 1)
	if changed == string(original) {
		t.Fatal("testdata/templates/success-rate.yaml no longer has count: 3; update the test")
	}
	write(changed)
	time.Sleep(200 * time.Millisecond)
	if _, d := getTemplate(t, base, "success-rate"); countOf(d) != "3" {
		t.Fatalf("the template changed without SIGHUP (count %s) although polling is off", countOf(d))
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, `"msg":"SIGHUP received; reloading the templates"`)
	waitTemplate(t, base, "the new version after SIGHUP", func(status int, d server.TemplateDetail) bool {
		return status == http.StatusOK && d.Status == "ok" && countOf(d) == "5"
	})

	// A broken version: the last good one stays, listed as stale.
	write(strings.Replace(changed, "successCondition: result[0] >= 0.99", "successCondition: result[0] >=", 1))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitTemplate(t, base, "the stale version after a broken SIGHUP", func(status int, d server.TemplateDetail) bool {
		return status == http.StatusOK && d.Status == "stale" && countOf(d) == "5" && len(d.Errors) > 0
	})
	resp, err = http.Get(base + "/v1/templates")
	if err != nil {
		t.Fatal(err)
	}
	var list server.TemplateList
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Templates) != 1 || list.Templates[0].Status != "stale" || !strings.Contains(jsonText(list.Templates[0].Errors), "successCondition") {
		t.Errorf("GET /v1/templates: %+v, want success-rate stale with the successCondition's error", list.Templates)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit code %d, want 0:\n%s", code, logs.text())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the process did not exit after SIGTERM:\n%s", logs.text())
	}
}

// waitTemplate polls GET /v1/templates/{name} until ok holds.
func waitTemplate(t *testing.T, base, name string, ok func(int, server.TemplateDetail) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, d := getTemplate(t, base, "success-rate")
		if ok(status, d) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: GET answers %d, status %q, count %s, errors %v", name, status, d.Status, countOf(d), d.Errors)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
