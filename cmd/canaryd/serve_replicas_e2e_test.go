package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/server"
)

// replicaProcess is one `canaryd serve` of TestServeReplicasEndToEnd.
type replicaProcess struct {
	name   string
	base   string
	cmd    *exec.Cmd
	logs   *serveLogs
	exited <-chan int
}

// freePorts returns n ports free on 127.0.0.1 now. The replicas must know
// each other's addresses before they start, so :0 will not do; a port
// taken in between fails the start loudly.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startReplicaProcess starts the built binary as replica name; env is
// added to the environment.
func startReplicaProcess(t *testing.T, name string, args []string, env ...string) *replicaProcess {
	t.Helper()
	cmd, logs, exited := startProcess(t, append([]string{"serve"}, args...), env...)
	return &replicaProcess{name: name, base: "http://" + logs.waitAddress(t, exited), cmd: cmd, logs: logs, exited: exited}
}

// call sends a request and decodes the answer into out (unless nil); it
// returns the status and the headers.
func call(t *testing.T, method, url, body string, out any, headers ...string) (int, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, resp.Header
}

// TestServeReplicasEndToEnd runs three canaryd binaries on loopback as the
// replicas of one Service, with static --peers (one from CANARYD_PEERS),
// against a real Prometheus: an analysis started on a is read, streamed,
// listed and terminated through b and c; a draining a still answers
// through b; an exited a is a 503 through b, an unknown replica a 404.
func TestServeReplicasEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary three times")
	}
	prom := promtest.Start(t)
	ports := freePorts(t, 3)
	names := []string{"a", "b", "c"}
	var peers []string
	for i, name := range names {
		peers = append(peers, fmt.Sprintf("%s=http://127.0.0.1:%d", name, ports[i]))
	}
	replicas := map[string]*replicaProcess{}
	for i, name := range names {
		args := []string{"--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--prometheus-url", prom.URL,
			"--replica-name", name, "--shutdown-grace", "3s"}
		var env []string
		if name == "c" {
			env = append(env, "CANARYD_PEERS="+strings.Join(peers, ","))
		} else {
			for _, p := range peers {
				args = append(args, "--peers", p)
			}
		}
		replicas[name] = startReplicaProcess(t, name, args, env...)
		waitLog(t, replicas[name].logs, `"msg":"replica","replica":"`+name+`","peers":["a=http://127.0.0.1:`)
	}
	a, b, c := replicas["a"], replicas["b"], replicas["c"]

	// Started on a: the id names a, and b and c answer for it.
	var running api.Analysis
	status, header := call(t, http.MethodPost, a.base+"/v1/analyses", foreverSpec(), &running)
	if status != http.StatusAccepted || !strings.HasPrefix(running.ID, "a.") {
		t.Fatalf("POST on a: %d, id %q; want 202 and an id a.<random>", status, running.ID)
	}
	if got := header.Get("Location"); got != a.base+"/v1/analyses/"+running.ID {
		t.Errorf("Location %q", got)
	}
	for _, via := range []*replicaProcess{b, c} {
		var got api.Analysis
		status, header := call(t, http.MethodGet, via.base+"/v1/analyses/"+running.ID, "", &got)
		if status != http.StatusOK || got.ID != running.ID || header.Get(server.ReplicaHeader) != "a" {
			t.Errorf("GET through %s: %d, id %q, answered by %q; want 200 from a", via.name, status, got.ID, header.Get(server.ReplicaHeader))
		}
		waitLog(t, a.logs, `"request_id":"`+header.Get("X-Request-Id")+`"`)
	}

	// Streamed through c, to its end.
	var seeded api.Analysis
	if status, _ := call(t, http.MethodPost, a.base+"/v1/analyses?arg.namespace=echo-good", seedSpec(t), &seeded); status != http.StatusAccepted {
		t.Fatalf("POST the seed on a: %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/analyses/"+seeded.ID, nil)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var last api.Event
	measurements := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("stream through c: %q: %v", sc.Text(), err)
		}
		if last.Type == api.EventMeasurement {
			measurements++
		}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || last.Type != api.EventCompleted || measurements != 3 || last.Analysis.Phase != api.PhaseSuccessful {
		t.Errorf("stream through c: %d, %d measurements, last %s; want 200, 3, completed Successful", resp.StatusCode, measurements, last.Type)
	}

	// Listed through b: both, from a.
	var list server.AnalysisList
	if status, _ := call(t, http.MethodGet, b.base+"/v1/analyses", "", &list); status != http.StatusOK || len(list.Analyses) != 2 || len(list.UnreachableReplicas) != 0 {
		t.Errorf("list through b: %d, %d analyses, unreachable %v; want a's two", status, len(list.Analyses), list.UnreachableReplicas)
	}

	// Terminated through b.
	var terminated api.Analysis
	if status, _ := call(t, http.MethodDelete, b.base+"/v1/analyses/"+running.ID, "", &terminated); status != http.StatusOK || terminated.Message != "Run Terminated" {
		t.Errorf("DELETE through b: %d %s %q", status, terminated.Phase, terminated.Message)
	}

	// A draining a answers through b until it exits; then it is a 503.
	var last1 api.Analysis
	call(t, http.MethodPost, a.base+"/v1/analyses", foreverSpec(), &last1)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, a.base+"/readyz", http.StatusServiceUnavailable)
	var during api.Analysis
	if status, _ := call(t, http.MethodGet, b.base+"/v1/analyses/"+last1.ID, "", &during); status != http.StatusOK || during.Phase != api.PhaseRunning {
		t.Errorf("GET through b while a drains: %d %s; want 200 Running", status, during.Phase)
	}
	select {
	case code := <-a.exited:
		if code != 0 {
			t.Errorf("a exited with %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("a did not exit:\n%s", a.logs.text())
	}
	var p api.Problem
	if status, _ := call(t, http.MethodGet, b.base+"/v1/analyses/"+last1.ID, "", &p); status != http.StatusServiceUnavailable || p.Type != server.ProblemReplicaUnavailable {
		t.Errorf("GET through b once a has exited: %d %s; want 503 %s", status, p.Type, server.ProblemReplicaUnavailable)
	}
	if status, _ := call(t, http.MethodGet, c.base+"/v1/analyses/nobody.3qkd7vbl2rcw6xjh5m4fyzeonu", "", &p); status != http.StatusNotFound {
		t.Errorf("GET an unknown replica's analysis through c: %d, want 404", status)
	}
	if status, _ := call(t, http.MethodGet, c.base+"/v1/analyses", "", &list); status != http.StatusOK || len(list.UnreachableReplicas) != 1 || list.UnreachableReplicas[0] != "a" {
		t.Errorf("list through c once a has exited: %d, unreachable %v; want a", status, list.UnreachableReplicas)
	}

	for _, r := range []*replicaProcess{b, c} {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-r.exited:
			if code != 0 {
				t.Errorf("%s exited with %d:\n%s", r.name, code, r.logs.text())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not exit", r.name)
		}
	}
}
