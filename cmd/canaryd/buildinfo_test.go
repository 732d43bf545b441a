package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBuildInfoMetric serves in-process with the version and commit that
// the linker sets (-X main.version, -X main.commit) and reads
// canaryd_build_info from /metrics.
func TestBuildInfoMetric(t *testing.T) {
	savedVersion, savedCommit := version, commit
	version, commit = "v1.2.3-test", "0123456789abcdef0123456789abcdef01234567"
	defer func() { version, commit = savedVersion, savedCommit }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	getenv := func(k string) string {
		return map[string]string{"CANARYD_LISTEN": "127.0.0.1:0", "CANARYD_PROMETHEUS_URL": "http://127.0.0.1:9"}[k]
	}
	logs, exited, followed := serveInProcess(t, ctx, nil, getenv)
	base := "http://" + logs.waitAddress(t, exited)

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`canaryd_build_info{goversion=%q,revision="0123456789abcdef0123456789abcdef01234567",version="v1.2.3-test"} 1`, runtime.Version())
	if !strings.Contains(string(body), want+"\n") {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(body), "build_info"))
	}
	if !strings.Contains(string(body), "# TYPE canaryd_build_info gauge\n") {
		t.Errorf("canaryd_build_info is not a gauge:\n%s", grepLines(string(body), "build_info"))
	}

	cancel()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	<-followed
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
