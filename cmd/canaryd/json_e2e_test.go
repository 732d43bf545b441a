package main

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
)

// TestOutputAsWritten checks that canaryd run and canaryd backtest print
// <, > and & as they are: a Failed analysis' message reads "failed (2) >
// failureLimit (1)" in a pipeline's log, not "\u003e".
func TestOutputAsWritten(t *testing.T) {
	prom := promtest.Start(t)
	const message = `failed (2) > failureLimit (1)`
	for name, args := range map[string][]string{
		"run":      {"run", "-f", fastSeed(t), "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL},
		"backtest": {"backtest", "-f", fastSeed(t), "--arg", "namespace=echo-bad", "--prometheus-url", prom.URL, "--start", "-10m"},
	} {
		got := runCLI(t, "", args...)
		if got.code != 1 {
			t.Errorf("%s: exit %d, want 1 (Failed)\nstdout %s\nstderr %s", name, got.code, got.stdout, got.stderr)
		}
		if !strings.Contains(got.stdout, message) {
			t.Errorf("%s: the output does not read %q:\n%s", name, message, got.stdout)
		}
		for _, escaped := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(got.stdout, escaped) {
				t.Errorf("%s: the output has %s:\n%s", name, escaped, got.stdout)
			}
		}
	}
}
