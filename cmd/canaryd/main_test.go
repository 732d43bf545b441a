package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/canaryd/canaryd/api"
)

// TestInterruptedExitCodes runs run and backtest in-process with a context
// that a signal ended: each prints its result and exits with the signal's
// code, whatever the phase.
func TestInterruptedExitCodes(t *testing.T) {
	spec := writeSpec(t, "forever.yaml", "metrics: [{name: m, interval: 1m, successCondition: 'result[0] > 0', provider: {prometheus: {query: up}}}]\n")
	for _, tc := range []struct {
		args []string
		sig  syscall.Signal
		want int
	}{
		{[]string{"run", "-f", spec}, syscall.SIGINT, 130},
		{[]string{"run", "-f", spec}, syscall.SIGTERM, 143},
		{[]string{"backtest", "-f", spec, "--start", "-1h"}, syscall.SIGINT, 130},
		{[]string{"backtest", "-f", spec, "--start", "-1h", "--every", "10m"}, syscall.SIGTERM, 143},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&interrupted{signal: tc.sig})
		var stdout, stderr strings.Builder
		getenv := func(k string) string {
			return map[string]string{"CANARYD_PROMETHEUS_URL": "http://127.0.0.1:9"}[k]
		}
		code := run(ctx, tc.args, getenv, strings.NewReader(""), &stdout, &stderr)
		if code != tc.want {
			t.Errorf("%v after %s: exit code %d, want %d\n%s", tc.args, signalName(tc.sig), code, tc.want, stderr.String())
		}
		if !json.Valid([]byte(stdout.String())) {
			t.Errorf("%v after %s: stdout is not the result as JSON: %q", tc.args, signalName(tc.sig), stdout.String())
		}
		if want := "interrupted by " + signalName(tc.sig); !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.args, want, stderr.String())
		}
	}

	// Cancelled without a signal (a context's own end), a run exits by
	// its phase.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout strings.Builder
	code := run(ctx, []string{"run", "-f", spec, "-q", "--prometheus-url", "http://127.0.0.1:9"}, func(string) string { return "" }, nil, &stdout, io.Discard)
	var a api.Analysis
	if err := json.Unmarshal([]byte(stdout.String()), &a); err != nil || code != exitCode(a.Phase) {
		t.Errorf("run with a cancelled context: exit code %d for phase %s (%v)", code, a.Phase, err)
	}
}

// TestHelpAndBadFlags: every command's -h and --help print its usage and
// exit 0; a flag it does not define, or a stray argument, prints the
// problem and the usage and exits 64.
func TestHelpAndBadFlags(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, command := range []string{"serve", "run", "validate", "backtest", "version", "help"} {
		for _, help := range []string{"-h", "--help", "-help"} {
			var stdout, stderr strings.Builder
			code := run(context.Background(), []string{command, help}, getenv, strings.NewReader(""), &stdout, &stderr)
			if code != 0 {
				t.Errorf("canaryd %s %s: exit code %d, want 0\n%s", command, help, code, stderr.String())
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(out, "Usage") {
				t.Errorf("canaryd %s %s: no usage printed:\n%s", command, help, out)
			}
		}
		for _, bad := range [][]string{{"--no-such-flag"}, {"-f"}, {"stray"}} {
			if command == "serve" && bad[0] == "-f" {
				continue // serve has no -f
			}
			args := append([]string{command}, bad...)
			var stdout, stderr strings.Builder
			code := run(context.Background(), args, getenv, strings.NewReader(""), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("canaryd %s: exit code %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Usage") {
				t.Errorf("canaryd %s: no usage on stderr:\n%s", strings.Join(args, " "), stderr.String())
			}
			if stdout.String() != "" {
				t.Errorf("canaryd %s: stdout %q, want nothing", strings.Join(args, " "), stdout.String())
			}
		}
	}
	// help COMMAND is COMMAND -h.
	var stdout strings.Builder
	if code := run(context.Background(), []string{"help", "run"}, getenv, nil, &stdout, io.Discard); code != 0 || !strings.Contains(stdout.String(), "canaryd run -f FILE") {
		t.Errorf("canaryd help run: exit code %d, stdout:\n%s", code, stdout.String())
	}
}
