package proctest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopEndsTheGroup: Stop ends the process and the children it started,
// and a second Stop is harmless.
func TestStopEndsTheGroup(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "sleep 60 & echo $!; wait"))
	if err != nil {
		t.Fatal(err)
	}
	// The child's pid, once the shell has printed it.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output.String(), "\n") {
		if time.Now().After(deadline) {
			t.Fatal("the shell printed no pid")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(p.Err(), ErrRunning) {
		t.Fatalf("Err before Stop = %v, want ErrRunning", p.Err())
	}
	p.Stop()
	p.Stop()
	select {
	case <-p.Exited():
	default:
		t.Fatal("the process has not exited after Stop")
	}
	if errors.Is(p.Err(), ErrRunning) {
		t.Error("Err after Stop is ErrRunning")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(p.Output.String()))
	if err != nil {
		t.Fatalf("pid %q: %v", p.Output.String(), err)
	}
	// The child is gone, or a zombie that init reaps: signal 0 says so
	// only for a live process of ours.
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if b, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output(); err != nil || strings.HasPrefix(strings.TrimSpace(string(b)), "Z") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the shell's child %d still runs after Stop", pid)
}

// TestWaitReady: ready when the address answers 200; an error, not a wait
// for the timeout, when the process exits first.
func TestWaitReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := p.WaitReady(srv.URL, time.Minute); err != nil {
		t.Errorf("WaitReady on a ready address: %v", err)
	}

	exits, err := Start(exec.Command("sh", "-c", "echo bye; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	defer exits.Stop()
	start := time.Now()
	err = exits.WaitReady("http://127.0.0.1:1/", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("WaitReady on a process that exits: %v, want its exit status", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("WaitReady waited %v for a process that had exited", time.Since(start))
	}
	if got := exits.Output.String(); got != "bye\n" {
		t.Errorf("output %q, want %q", got, "bye\n")
	}
}

// TestBuild: Build builds a main package once for each environment, the
// binary named after its directory, and fails the test on a package that does not build.
func TestBuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hello")
	write := func(name, content string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.22\n")
	write("main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"hello\") }\n")

	bin := Build(t, dir)
	if filepath.Base(bin) != "hello" {
		t.Errorf("binary %s, want it named hello", bin)
	}
	write("main.go", "package main\n\nfunc main() { not go }\n")
	if again := Build(t, dir); again != bin {
		t.Errorf("a second Build built again: %s, want %s", again, bin)
	}
	if out, err := exec.Command(bin).Output(); err != nil || string(out) != "hello" {
		t.Errorf("the binary: %q, %v", out, err)
	}

	// Another environment is another build: of the broken source now.
	fatal := FailureOf(t, func(tb testing.TB) { Build(tb, dir, "CGO_ENABLED=0") })
	if !strings.Contains(fatal, "go build") || !strings.Contains(fatal, "not go") && !strings.Contains(fatal, "syntax error") {
		t.Errorf("a broken package: fatal %q, want go build's error", fatal)
	}
}

// TestFailureOf: the message a helper fails the test with, through Fatal
// or Fatalf, and none from a helper that returns.
func TestFailureOf(t *testing.T) {
	if got := FailureOf(t, func(tb testing.TB) { tb.Fatalf("no %s", "prometheus"); t.Error("Fatalf returned") }); got != "no prometheus" {
		t.Errorf("Fatalf: %q, want %q", got, "no prometheus")
	}
	if got := FailureOf(t, func(tb testing.TB) { tb.Fatal("no ", "go"); t.Error("Fatal returned") }); got != "no go" {
		t.Errorf("Fatal: %q, want %q", got, "no go")
	}
	if got := FailureOf(t, func(testing.TB) {}); got != "" {
		t.Errorf("a helper that returns: %q, want none", got)
	}
}
