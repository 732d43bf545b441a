// Package proctest runs the child processes of tests: a real Prometheus
// (internal/promtest), the canaryd binary (the nested test/ module). A
// child gets a process group of its own, which Stop ends (SIGTERM, then
// SIGKILL), and its output is kept for failure messages.
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
	"os/exec"
	"sync"
	"syscall"
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

// Start starts cmd in a process group of its own, its standard output and
// error going to Output unless cmd already has them set.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Output: &Buffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.SysProcAttr = sysProcAttr()
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
// kills the group. Only the first call does anything.
func (p *Process) Stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
		// Anything else left in the group (there should be nothing).
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
