package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds how long a process gets to exit after SIGTERM before
// its group is killed.
const stopTimeout = 10 * time.Second

// readyTimeout bounds the start of canaryd.
const readyTimeout = 60 * time.Second

// process is a started child whose output is kept for failure messages.
type process struct {
	cmd    *exec.Cmd
	output *lockedBuffer
	// exited is closed when the process has been waited for; err is then
	// its exit error.
	exited chan struct{}
	err    error
	once   sync.Once
}

// start starts cmd in a process group of its own, its standard output and
// error going to one buffer unless cmd already has them set.
func start(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, output: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.SysProcAttr = sysProcAttr()
	if cmd.Stdout == nil {
		cmd.Stdout = p.output
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.output
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// Ends when the process exits: stop makes sure it does.
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, waits up to stopTimeout, then
// kills the group. It is safe to call more than once.
func (p *process) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	})
}

// exitErr returns the exit error once the process has exited, or
// errRunning.
func (p *process) exitErr() error {
	select {
	case <-p.exited:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return errRunning
	}
}

var errRunning = errors.New("still running")

// waitReady polls url until it answers 200, the process exits, or
// readyTimeout passes.
func waitReady(proc *process, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := proc.exitErr(); !errors.Is(err, errRunning) {
			return fmt.Errorf("%v before it was ready:\n%s", err, proc.output.String())
		}
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
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v:\n%s", url, readyTimeout, proc.output.String())
		case <-tick.C:
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutines of
// exec.Cmd and a reading test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
