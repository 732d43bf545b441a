package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
)

// The harness of the tests and benchmarks that run several `canaryd serve`
// replicas on one store and disturb them: replicas on
// fixed loopback ports that can be killed and started again, specs whose
// phases the fixture data decide, and the control that tells each spec's
// outcome undisturbed.

// chaosLogDirEnv names a directory where each replica's whole log is
// kept (NAME.log, appended to across its restarts), for a failure's
// diagnosis; without it only the tail is kept.
const chaosLogDirEnv = "CANARYD_CHAOS_LOG_DIR"

// chaosPort returns a port free on 127.0.0.1 now; a replica keeps it
// across its restarts.
func chaosPort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// chaosLogTail keeps the last bytes a process wrote, for a failure's message.
type chaosLogTail struct {
	mu   sync.Mutex
	buf  []byte
	keep int
}

func (l *chaosLogTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, line...)
	l.buf = append(l.buf, '\n')
	if len(l.buf) > 2*l.keep {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-l.keep:]...)
	}
}

func (l *chaosLogTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > l.keep {
		return string(l.buf[len(l.buf)-l.keep:])
	}
	return string(l.buf)
}

// chaosReplica is one `canaryd serve` on a fixed port, started again as often as
// a test likes. Up says whether it is meant to answer: false from just
// before it is signalled until it is ready again.
type chaosReplica struct {
	// name is the replica's name in the test's messages.
	name string
	port int
	base string
	args []string
	env  []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan int
	logs   *chaosLogTail
	starts int
	up     atomic.Bool
	// gen counts its starts and stops: a reader that saw it change knows
	// the replica went away in between.
	gen atomic.Int64
	// posting is held (read) by each POST to the replica and taken by
	// down, so that no analysis is being started on a replica when it is
	// signalled: a POST cut short would leave it unknown whether the
	// analysis exists.
	posting sync.RWMutex
}

// newChaosReplica starts a replica with args (besides --listen) and env, and
// waits until it is ready. It is killed at the end of the test if it still
// runs.
func newChaosReplica(tb testing.TB, name string, args []string, env ...string) *chaosReplica {
	tb.Helper()
	port := chaosPort(tb)
	r := &chaosReplica{name: name, port: port, base: fmt.Sprintf("http://127.0.0.1:%d", port), args: args, env: env}
	tb.Cleanup(r.kill)
	r.start(tb)
	return r
}

// start starts the process and waits until /readyz answers 200.
func (r *chaosReplica) start(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	cmd := exec.Command(binary(tb), append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", r.port)}, r.args...)...)
	cmd.Env = append(append(os.Environ(), "CANARYD_LOG_LEVEL=info"), r.env...)
	cmd.SysProcAttr = chaosProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		r.mu.Unlock()
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		tb.Fatal(err)
	}
	logs := &chaosLogTail{keep: 64 << 10}
	var whole *os.File
	if dir := os.Getenv(chaosLogDirEnv); dir != "" {
		if whole, err = os.OpenFile(filepath.Join(dir, r.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			r.mu.Unlock()
			tb.Fatal(err)
		}
	}
	exited := make(chan int, 1)
	// Ends when the process exits and its stderr closes.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if whole != nil {
				_, _ = fmt.Fprintln(whole, sc.Text())
			}
			// Requests are many and say little; those that failed stay.
			if line := sc.Text(); !strings.Contains(line, `"msg":"request"`) || strings.Contains(line, `"status":5`) {
				logs.add(line)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		if whole != nil {
			_ = whole.Close()
		}
		_ = cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
		close(exited)
	}()
	r.cmd, r.exited, r.logs = cmd, exited, logs
	r.starts++
	r.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(r.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-exited:
			tb.Fatalf("replica %s exited with %d before it was ready:\n%s", r.name, code, logs)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("replica %s not ready after a minute:\n%s", r.name, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.gen.Add(1)
	r.up.Store(true)
}

// down marks the replica as not meant to answer, before it is signalled.
func (r *chaosReplica) down() {
	r.posting.Lock()
	r.up.Store(false)
	r.gen.Add(1)
	r.posting.Unlock()
}

// post starts spec on the replica, if it is up; ok false when it is not.
func (r *chaosReplica) post(client *http.Client, spec chaosSpec, hook string) (a api.Analysis, ok bool, err error) {
	r.posting.RLock()
	defer r.posting.RUnlock()
	if !r.up.Load() {
		return a, false, nil
	}
	a, err = postChaos(client, r.base, spec, hook)
	return a, true, err
}

// signal sends sig to the running process.
func (r *chaosReplica) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signalling replica %s: %v", r.name, err)
	}
}

// wait waits for the process to exit and returns its exit code (-1 when
// killed by a signal).
func (r *chaosReplica) wait(tb testing.TB, within time.Duration) int {
	tb.Helper()
	r.mu.Lock()
	exited, logs := r.exited, r.logs
	r.mu.Unlock()
	select {
	case code := <-exited:
		return code
	case <-time.After(within):
		tb.Fatalf("replica %s did not exit within %s:\n%s", r.name, within, logs)
		return 0
	}
}

// log returns the tail of the current process' log.
func (r *chaosReplica) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// kill kills the process if it still runs, and waits for it.
func (r *chaosReplica) kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	r.up.Store(false)
	if cmd == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// chaosKind is what an analysis' spec makes of the fixture data.
type chaosKind int

const (
	// kindGood: echo-good's success rate (0.995) against >= 0.99, every
	// measurement: Successful after its count.
	kindGood chaosKind = iota
	// kindBad: echo-bad's (0.95) against >= 0.99, failureLimit count-2:
	// Failed at its last measurement but one.
	kindBad
	// kindUnsure: echo-good's against >= 0.999 with failure below 0.99:
	// neither, inconclusiveLimit count-2: Inconclusive at its last
	// measurement but one.
	kindUnsure
	chaosKinds
)

func (k chaosKind) String() string {
	return [...]string{"good", "bad", "inconclusive"}[k]
}

// phase is the phase the kind must end in.
func (k chaosKind) phase() api.Phase {
	return [...]api.Phase{api.PhaseSuccessful, api.PhaseFailed, api.PhaseInconclusive}[k]
}

// chaosSpec is one analysis' document and arguments: a kind and a count.
type chaosSpec struct {
	kind     chaosKind
	count    int
	interval time.Duration
}

func (s chaosSpec) key() string { return fmt.Sprintf("%s/%d/%s", s.kind, s.count, s.interval) }

func (s chaosSpec) namespace() string {
	if s.kind == kindBad {
		return "echo-bad"
	}
	return "echo-good"
}

// document is the spec as posted: the seed's query, the namespace an
// argument.
func (s chaosSpec) document() string {
	conditions := fmt.Sprintf("    successCondition: result[0] >= 0.99\n    failureLimit: %d\n", s.count-2)
	if s.kind == kindUnsure {
		conditions = fmt.Sprintf("    successCondition: result[0] >= 0.999\n    failureCondition: result[0] < 0.99\n    inconclusiveLimit: %d\n", s.count-2)
	}
	query := strings.ReplaceAll(strings.TrimSpace(promtest.SeedQuery("{{args.namespace}}")), "\n", "\n          ")
	return fmt.Sprintf(`args:
  - name: namespace
metrics:
  - name: success-rate
    interval: %s
    count: %d
%s    provider:
      prometheus:
        query: |
          %s
`, s.interval, s.count, conditions, query)
}

// chaosOutcome is how an analysis ended: its phase and its metrics' counters,
// which show a measurement counted twice or lost.
type chaosOutcome struct {
	phase    api.Phase
	counters string
}

func chaosOutcomeOf(a api.Analysis) chaosOutcome {
	o := chaosOutcome{phase: a.Phase}
	for _, m := range a.MetricResults {
		o.counters += fmt.Sprintf("%s: count %d, successful %d, failed %d, inconclusive %d, error %d; ",
			m.Name, m.Count, m.Successful, m.Failed, m.Inconclusive, m.Error)
	}
	return o
}

func (o chaosOutcome) String() string {
	return fmt.Sprintf("%s (%s)", o.phase, strings.TrimSuffix(o.counters, "; "))
}

// postChaos starts spec on base with a webhook to hook ("" for none); the
// answer must be 202 with the analysis.
func postChaos(client *http.Client, base string, spec chaosSpec, hook string) (api.Analysis, error) {
	q := url.Values{"arg.namespace": {spec.namespace()}}
	if hook != "" {
		q.Set("webhook", hook)
	}
	resp, err := client.Post(base+"/v1/analyses?"+q.Encode(), "application/yaml", strings.NewReader(spec.document()))
	if err != nil {
		return api.Analysis{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var a api.Analysis
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(data, &a) != nil || a.ID == "" {
		return a, fmt.Errorf("POST %s: %d %s", base, resp.StatusCode, bytes.TrimSpace(data))
	}
	return a, nil
}

// chaosGet reads an analysis; a status other than 200 comes back with
// the body's start and the Retry-After header.
func chaosGet(client *http.Client, base, id string) (status int, a api.Analysis, detail string, err error) {
	resp, err := client.Get(base + "/v1/analyses/" + url.PathEscape(id))
	if err != nil {
		return 0, a, "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, a, chaosDetail(resp, data), nil
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return resp.StatusCode, a, "", fmt.Errorf("GET %s: not an analysis: %.200s", id, data)
	}
	return resp.StatusCode, a, "", nil
}

// chaosDetail describes a refusal: its content type, Retry-After and body.
func chaosDetail(resp *http.Response, body []byte) string {
	return fmt.Sprintf("Content-Type %q, Retry-After %q: %.300s", resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), bytes.TrimSpace(body))
}

// chaosControl runs each distinct spec of specs once on one replica with
// args, undisturbed, and returns how each ends by its key. Each
// must be the phase its kind is made for, or the fixture data are not
// what the test thinks.
func chaosControl(t testing.TB, args []string, specs []chaosSpec) map[string]chaosOutcome {
	t.Helper()
	r := newChaosReplica(t, "control", args)
	defer r.kill()
	distinct := map[string]chaosSpec{}
	for _, s := range specs {
		distinct[s.key()] = s
	}
	client := &http.Client{Timeout: 30 * time.Second}
	outcomes := map[string]chaosOutcome{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, s := range distinct {
		wg.Add(1)
		// Ends when the analysis has.
		go func() {
			defer wg.Done()
			a, err := postChaos(client, r.base, s, "")
			deadline := time.Now().Add(time.Minute)
			for err == nil && !a.Phase.Completed() && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				var status int
				var detail string
				status, a, detail, err = chaosGet(client, r.base, a.ID)
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("GET: %d %s", status, detail)
				}
			}
			if err != nil || !a.Phase.Completed() {
				t.Errorf("control %s: %v, phase %s", key, err, a.Phase)
				return
			}
			if want := s.kind.phase(); a.Phase != want {
				t.Errorf("control %s ended %s (%s), want %s", key, a.Phase, a.Message, want)
			}
			mu.Lock()
			outcomes[key] = chaosOutcomeOf(a)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.Fatalf("the control failed:\n%s", tail(r.log(), 8000))
	}
	return outcomes
}

// chaosLogs is the tail of every replica's log.
func chaosLogs(replicas []*chaosReplica) string {
	var out string
	for _, r := range replicas {
		out += fmt.Sprintf("--- %s:\n%s\n", r.name, tail(r.log(), 6000))
	}
	return out
}

// chaosStoreFlags are the flags of a replica on the store at url with a lease
// of lease.
func chaosStoreFlags(url, keyFile string, lease time.Duration) []string {
	return []string{"--store", url, "--store-secret-key-file", keyFile, "--store-lease", lease.String()}
}
