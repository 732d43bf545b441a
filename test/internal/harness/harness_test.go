package harness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestMissingPrometheus checks that a machine without Prometheus fails the
// test with the install command, and does not skip it.
func TestMissingPrometheus(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	// Ends when StartPrometheus fails, through runtime.Goexit.
	go func() {
		defer close(done)
		StartPrometheus(r)
	}()
	<-done
	want := "harness: prometheus not found on PATH; install it with: apt-get install -y prometheus"
	if r.msg != want {
		t.Errorf("StartPrometheus failed with %q, want %q", r.msg, want)
	}
	if t.Skipped() {
		t.Error("StartPrometheus skipped the test")
	}
}

// TestFixture checks the OpenMetrics text promtool backfills: each series'
// samples together, in time order, and the file closed by # EOF.
func TestFixture(t *testing.T) {
	text := fixture(testNow)
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Error("the fixture does not end with # EOF")
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	series := map[string]bool{}
	last := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		name := l[:strings.Index(l, "}")+1]
		if name != last && series[name] {
			t.Fatalf("series %s is split", name)
		}
		series[name], last = true, name
	}
	if got, want := len(series), len(EchoGood.perStep)+len(EchoBad.perStep); got != want {
		t.Errorf("%d series, want %d", got, want)
	}
}

var testNow = mustTime("2026-01-02T03:04:05Z")

func mustTime(s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return v
}
