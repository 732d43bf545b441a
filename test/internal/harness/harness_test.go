package harness

import (
	"testing"

	"github.com/canaryd/canaryd/internal/proctest"
	"github.com/canaryd/canaryd/internal/promtest"
)

// TestMissingGo checks that a machine without Go fails the test with where
// to get it, and does not skip it.
func TestMissingGo(t *testing.T) {
	t.Setenv(BinaryEnv, "")
	t.Setenv("PATH", t.TempDir())
	msg := proctest.FailureOf(t, func(tb testing.TB) { CanarydBinary(tb) })
	want := "harness: go not found on PATH; install Go from https://go.dev/dl/ or your distribution"
	if msg != want {
		t.Errorf("CanarydBinary failed with %q, want %q", msg, want)
	}
	if t.Skipped() {
		t.Error("CanarydBinary skipped the test")
	}
}

// TestNamespaces checks that EchoGood and EchoBad are namespaces of
// promtest's fixture on either side of the templates' 99% threshold.
func TestNamespaces(t *testing.T) {
	rates := map[string]float64{}
	for _, ns := range promtest.Namespaces() {
		rates[ns.Name] = ns.SuccessRate
	}
	if r, ok := rates[EchoGood]; !ok || r < 0.99 {
		t.Errorf("%s: success rate %v (in the fixture: %v), want one of at least 0.99", EchoGood, r, ok)
	}
	if r, ok := rates[EchoBad]; !ok || r >= 0.99 {
		t.Errorf("%s: success rate %v (in the fixture: %v), want one under 0.99", EchoBad, r, ok)
	}
}
