package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
)

// smallBuffers makes the server's side of each connection hold little,
// so that a client that reads nothing blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(4096)
	}
	return c, err
}

// TestStreamWriteTimeout checks that a stream whose reader reads nothing
// ends once a write has made no progress for the write timeout, instead of
// holding its goroutine and connection for as long as the analysis runs.
func TestStreamWriteTimeout(t *testing.T) {
	a, err := analyses.NewAnalyses(analyses.AnalysesOptions{MaxRunning: 1, MaxFinished: 10, Retention: time.Hour, StreamWriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a.Drain(ctx)
	})
	judge, errs := condition.Compile("result == 1", "")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	big := strings.Repeat("9", analysis.MaxValueBytes)
	run, err := a.Start(&analysis.Plan{Metrics: []analysis.Metric{{
		Name: "m", Interval: time.Millisecond, ConsecutiveErrorLimit: 4, Retention: 10, Judge: judge,
		Source: analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
			return analysis.Observation{Value: 1.0, Display: big}
		}),
	}}}, analyses.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Terminate()

	ended := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		streamRun(w, r, run, modeNDJSON, time.Hour, func() {})
	}))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()

	// A client that asks for the stream and never reads it.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := fmt.Fprintf(conn, "GET /v1/analyses/%s HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n\r\n", run.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream of a reader that reads nothing has not ended 20 s on, with a write timeout of 200 ms")
	}
	if run.Snapshot().Phase != api.PhaseRunning {
		t.Error("the analysis ended with its stream, want it running")
	}
}
