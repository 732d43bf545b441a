package harness

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/canaryd/canaryd/internal/promtest"
)

// fatalRecorder stands in for a test, to see what a helper fails with.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestMissingGo checks that a machine without Go fails the test with where
// to get it, and does not skip it.
func TestMissingGo(t *testing.T) {
	t.Setenv(BinaryEnv, "")
	t.Setenv("PATH", t.TempDir())
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	// Ends when CanarydBinary fails, through runtime.Goexit.
	go func() {
		defer close(done)
		CanarydBinary(r)
	}()
	<-done
	want := "harness: go not found on PATH; install Go from https://go.dev/dl/ or your distribution"
	if r.msg != want {
		t.Errorf("CanarydBinary failed with %q, want %q", r.msg, want)
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
