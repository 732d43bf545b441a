// Package proctest runs the child processes of tests: a real Prometheus
// (internal/promtest), the canaryd binary (cmd/canaryd's end-to-end tests,
// the nested test/ module), built once a test binary by Build. A child
// gets a process group of its own, which Stop ends (SIGTERM, then
// SIGKILL), and its output is kept for failure messages. FailureOf shows
// what a helper fails its test with, for the tests of such helpers.
//
// What it must not do: leave a process running after its test. The test
// stops each process in its cleanup, and on Linux the kernel kills the
// child if the test binary dies first.
package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StopTimeout bounds how long a process gets to exit after SIGTERM before
// its group is killed.
const StopTimeout = 10 * time.Second

// ErrRunning is Process.Err's answer while the process runs.
var ErrRunning = errors.New("still running")

// Process is a started child.
type Process struct {
	// Output holds what the process wrote to standard output and error,
	// unless the command had them set before Start.
	Output *Buffer

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	err    error         // Wait's result, set before exited is closed
	once   sync.Once     // Stop's
}

// Start starts cmd in a process group of its own (SysProcAttr, as the
// credential cmd.SysProcAttr names, if any), its standard output and error
// going to Output unless cmd already has them set.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Output: &Buffer{}, cmd: cmd, exited: make(chan struct{})}
	var cred *syscall.Credential
	if cmd.SysProcAttr != nil {
		cred = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = SysProcAttr(cred)
	if cmd.Stdout == nil {
		cmd.Stdout = p.Output
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.Output
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Ends when the process exits: Stop makes sure it does.
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Stop sends SIGTERM to the process group, waits up to StopTimeout, then
// kills the group. Only the first call of Stop or StopWith does anything.
func (p *Process) Stop() { p.StopWith(syscall.SIGTERM, StopTimeout) }

// StopWith sends sig to the process group, waits up to timeout for the
// process to exit, then kills the group, and anything left in it once it
// has (a server's children outliving it). Only the first call of Stop or
// StopWith does anything.
func (p *Process) StopWith(sig syscall.Signal, timeout time.Duration) {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, sig)
		select {
		case <-p.exited:
		case <-time.After(timeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err returns the process' exit error once it has exited ("exited with
// status 0" for a clean exit), or ErrRunning.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return ErrRunning
	}
}

// WaitReady polls url until it answers 200, and fails when the process
// exits first or timeout passes.
func (p *Process) WaitReady(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%v before %s was ready", p.Err(), url)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v", url, timeout)
		case <-tick.C:
		}
	}
}

// Buffer is a bytes.Buffer safe for a process' writers and a reading
// test.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a child process to listen on. Another process may take it in between;
// a caller starting a server on it retries with another when it is taken.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// builds holds Build's binaries, one per package and environment.
var builds struct {
	mu sync.Mutex
	m  map[string]*build
}

// build is one package built once.
type build struct {
	once sync.Once
	path string
	err  error
}

// Build builds the main package pkg (a directory as `go build` takes it,
// relative to the test's directory) with env added to the environment of
// `go build` (e.g. CGO_ENABLED=0), once per test binary for each pkg and
// env, and returns the binary's path. The binary is named after the
// package's directory. A failed build fails tb, at every call.
func Build(tb testing.TB, pkg string, env ...string) string {
	tb.Helper()
	key := strings.Join(append([]string{pkg}, env...), "\x00")
	builds.mu.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[key]
	if b == nil {
		b = &build{}
		builds.m[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "proctest-build-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(abs))
		cmd := exec.Command("go", "build", "-o", b.path, ".")
		cmd.Dir = abs // its own module's, even from another module's test
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// FailureOf runs f with a stand-in for tb and returns the message f fails
// it with through Fatal or Fatalf, or "" when f returns without; whatever
// else f does with it goes to tb. It is for testing what a helper fails a
// test with (a missing binary, a package that does not build): a failure
// the test can read, never a skip.
func FailureOf(tb testing.TB, f func(testing.TB)) string {
	tb.Helper()
	r := &fatalRecorder{TB: tb}
	done := make(chan struct{})
	// Ends when f returns, or when Fatal or Fatalf stops it.
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// fatalRecorder keeps the message of Fatal and Fatalf instead of failing
// the test, and stops the goroutine as they do.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
