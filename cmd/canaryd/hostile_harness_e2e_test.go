package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/proctest"
)

// The bounds the hostile-input suite holds canaryd to. docs/security.md
// quotes them.
const (
	// hostileAddressSpace is the address-space cap (RLIMIT_AS, as
	// `ulimit -v` or `prlimit --as` sets it) the binary runs under. The Go
	// runtime reserves about 1.3 GiB of address space at start (arena
	// hints and the page allocator's index, reserved but never touched),
	// so a healthy canaryd needs a cap above that: 2 GiB leaves it some
	// 700 MiB to map, and an attack that allocates without bound ends in
	// "out of memory" within seconds instead of eating the machine.
	hostileAddressSpace = 2 << 30
	// hostileRSSBound is the most resident memory (VmHWM, the peak) the
	// process may reach while an attack runs: the memory limit of the
	// container the shipped Deployment runs canaryd in.
	hostileRSSBound = 256 << 20
	// healthDeadline is how long a /healthz request may take while an
	// attack runs. It is generous on purpose (a healthy canaryd answers in
	// a millisecond): the suite makes no timed assertion on speed, only
	// that the process keeps answering. On two cores at a load average
	// near 20, the web metrics' round of 50 answers left /healthz
	// unanswered for a little over 2 s: a process that has stopped
	// answering misses 10 s whatever the machine.
	healthDeadline = 10 * time.Second
	// goMemLimit is the GOMEMLIMIT the process runs with: the one the
	// shipped Deployment sets (deploy/kustomize), about 80% of its
	// container's memory limit, which hostileRSSBound is.
	goMemLimit = "200MiB"
	// healthEvery is how often /healthz is asked, and VmRSS read.
	healthEvery = 100 * time.Millisecond
)

// staticBinary builds canaryd as `make build` and the container image do
// (CGO_ENABLED=0), once. The suite measures that binary: a cgo
// build maps glibc's malloc arenas (64 MiB of address space each, up to
// eight per core) on top of the Go runtime's, and its address space would
// say more about the threads glibc saw than about canaryd.
func staticBinary(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, ".", "CGO_ENABLED=0")
}

// capped is one `canaryd serve` under the address-space cap, with a prober
// asking /healthz and reading the process' resident memory throughout.
type capped struct {
	t      *testing.T
	cmd    *exec.Cmd
	pid    int
	base   string
	logs   *serveLogs
	exited <-chan int
	probe  *prober
}

// startCapped starts the static binary's serve under hostileAddressSpace
// (through the shell's `ulimit -v`, so that the limit is in force from the
// first instruction; exec keeps the pid) and starts its prober. The
// process is killed at the end of the test if it still runs.
func startCapped(t *testing.T, args ...string) *capped {
	t.Helper()
	script := fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, hostileAddressSpace>>10)
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, staticBinary(t), "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+goMemLimit)
	logs, exited := followProcess(t, cmd)
	c := &capped{t: t, cmd: cmd, pid: cmd.Process.Pid, logs: logs, exited: exited}
	// Before followProcess' cleanup, which kills the process.
	t.Cleanup(func() { c.probe.stop() })
	c.base = "http://" + logs.waitAddress(t, exited)
	if limit := c.status("Max address space", "/proc/%d/limits"); !strings.Contains(limit, strconv.Itoa(hostileAddressSpace)) {
		t.Fatalf("the process runs without the address-space cap: %q", limit)
	}
	c.probe = startProber(c)
	return c
}

// status returns the line of /proc/PID/<file> that starts with key.
func (c *capped) status(key, file string) string {
	data, err := os.ReadFile(fmt.Sprintf(file, c.pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			return line
		}
	}
	return ""
}

// memory reads a kB field of /proc/PID/status (VmRSS, VmHWM) in bytes; 0
// when the process is gone.
func (c *capped) memory(field string) int64 {
	f := strings.Fields(strings.TrimPrefix(c.status(field+":", "/proc/%d/status"), field+":"))
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(f[0], 10, 64)
	return kb << 10
}

// alive fails the test if the process has exited.
func (c *capped) alive(t *testing.T) {
	t.Helper()
	select {
	case code := <-c.exited:
		t.Fatalf("canaryd exited with %d during the attack:\n%s", code, tail(c.logs.text(), 3000))
	default:
	}
}

// check is what every attack must leave true: the process alive, its peak
// resident memory under hostileRSSBound, every /healthz answered within
// healthDeadline, and /healthz answering now.
func (c *capped) check(t *testing.T) {
	t.Helper()
	c.alive(t)
	hwm := c.memory("VmHWM")
	t.Logf("peak RSS %d MiB (bound %d MiB); %d health probes", hwm>>20, hostileRSSBound>>20, c.probe.asked.Load())
	if hwm > hostileRSSBound {
		t.Errorf("peak RSS %d MiB, over the bound of %d MiB", hwm>>20, hostileRSSBound>>20)
	}
	if fails := c.probe.failures(); len(fails) > 0 {
		t.Errorf("/healthz failed %d times while the attack ran (deadline %s): %s", len(fails), healthDeadline, strings.Join(fails, "; "))
	}
	resp, err := c.probe.client.Get(c.base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after the attack: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz after the attack: %d", resp.StatusCode)
	}
}

// prober asks /healthz every healthEvery, each within healthDeadline, and
// records what failed.
type prober struct {
	client *http.Client
	asked  atomic.Int64
	mu     sync.Mutex
	fails  []string
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func startProber(c *capped) *prober {
	p := &prober{
		client: &http.Client{Timeout: healthDeadline, Transport: &http.Transport{}},
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	// Ends when stop closes quit.
	go func() {
		defer close(p.done)
		tick := time.NewTicker(healthEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
			p.asked.Add(1)
			began := time.Now()
			resp, err := p.client.Get(c.base + "/healthz")
			if err != nil {
				p.fail(fmt.Sprintf("%s after %s", err, time.Since(began).Round(time.Millisecond)))
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				p.fail(fmt.Sprintf("status %d", resp.StatusCode))
			}
		}
	}()
	return p
}

func (p *prober) fail(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.fails) < 5 {
		p.fails = append(p.fails, msg)
	} else if len(p.fails) == 5 {
		p.fails = append(p.fails, "…")
	}
}

func (p *prober) failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.fails...)
}

// stop ends the prober and waits for it.
func (p *prober) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.quit) })
	<-p.done
}

// answer is one response of the attack: its status, body and how long it
// took.
type answer struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	err    error
}

// do sends one request and reads the whole answer, within deadline.
func do(method, url, contentType string, body []byte, deadline time.Duration, headers ...string) answer {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if body == nil {
		req.Body = http.NoBody
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: deadline, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(began)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data, took: time.Since(began), err: err}
}

// String describes the answer for a failure message.
func (a answer) String() string {
	if a.err != nil {
		return fmt.Sprintf("no answer after %s: %v", a.took.Round(time.Millisecond), a.err)
	}
	return fmt.Sprintf("%d after %s: %s", a.status, a.took.Round(time.Millisecond), tail(string(a.body), 600))
}

// problem decodes the answer as a problem document with the given status,
// or fails the test.
func (a answer) problem(t *testing.T, status int) api.Problem {
	t.Helper()
	var p api.Problem
	if a.err != nil || a.status != status || json.Unmarshal(a.body, &p) != nil || p.Status != status {
		t.Fatalf("want a %d problem, got %s", status, a)
	}
	return p
}

// fieldError returns the problem's error on field whose message mentions
// each of texts (case-insensitively), or fails the test.
func fieldError(t *testing.T, p api.Problem, field string, texts ...string) api.FieldError {
	t.Helper()
	for _, e := range p.Errors {
		if e.Field == field && mentions(e.Message, texts...) {
			return e
		}
	}
	t.Fatalf("no error on %s mentioning %q in %s", field, texts, errorList(p))
	return api.FieldError{}
}

// mentions reports whether s holds each of texts, case-insensitively.
func mentions(s string, texts ...string) bool {
	for _, text := range texts {
		if !strings.Contains(strings.ToLower(s), strings.ToLower(text)) {
			return false
		}
	}
	return true
}

// errorList is a problem's errors for a failure message, each shortened.
func errorList(p api.Problem) string {
	var b strings.Builder
	for i, e := range p.Errors {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(p.Errors)-i)
			break
		}
		fmt.Fprintf(&b, "[%s: %s] ", e.Field, tail(e.Message, 200))
	}
	return b.String()
}

// metricValue reads one sample of canaryd's /metrics; -1 when it is
// missing.
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	a := do(http.MethodGet, base+"/metrics", "", nil, 5*time.Second)
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("GET /metrics: %s", a)
	}
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return -1
}

// signal sends sig to the process.
func (c *capped) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
