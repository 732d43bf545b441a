package prometheus

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConnLimiter: a datasource has at most max connections open to a
// host; a further dial waits for one to close, and gives up with its
// context.
func TestConnLimiter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	l := newConnLimiter(2)
	addr := ln.Addr().String()
	var open []net.Conn
	for range 2 {
		c, err := l.dial(t.Context(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if c, err := l.dial(ctx, "tcp", addr); err == nil {
		c.Close()
		t.Fatal("a third connection was dialled while two were open")
	} else if !strings.Contains(err.Error(), "waiting for one of the 2 connections to "+addr) {
		t.Errorf("the third dial's error: %v", err)
	}

	third := make(chan error, 1)
	go func() {
		c, err := l.dial(t.Context(), "tcp", addr)
		if err == nil {
			c.Close()
		}
		third <- err
	}()
	open[0].Close()
	open[0].Close() // a second Close gives back nothing more
	if err := <-third; err != nil {
		t.Errorf("a dial after a connection closed: %v", err)
	}
	open[1].Close()
	if !l.hosts[addr].TryAcquire(2) {
		t.Error("the closed connections' slots were not given back")
	}
}

type fixedResponse struct{ body []byte }

func (f fixedResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Encoding": {"gzip"}},
		Body:       io.NopCloser(bytes.NewReader(f.body)),
		Request:    req,
	}, nil
}

// TestGzipBounded: a gzipped answer is inflated, and held to the bound of
// an answer as it is inflated, so that a small body cannot inflate into
// more than canaryd reads.
func TestGzipBounded(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(bytes.Repeat([]byte("0"), 1<<20))
	zw.Close()
	for _, tc := range []struct {
		max     int64
		wantErr string
	}{
		{max: 1 << 20},
		{max: 1 << 19, wantErr: "the answer is longer than the 512 KiB canaryd reads of a test answer; narrow the query"},
	} {
		rt := &limitResponse{limits: &responseLimits{max: tc.max, why: "a test answer"}, next: fixedResponse{zipped.Bytes()}}
		req, _ := http.NewRequest(http.MethodPost, "http://p/api/v1/query_range", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := errText(err); got != tc.wantErr {
			t.Errorf("max %d: err %q, want %q", tc.max, got, tc.wantErr)
		}
		if tc.wantErr == "" && (len(body) != 1<<20 || resp.Header.Get("Content-Encoding") != "" || !resp.Uncompressed) {
			t.Errorf("max %d: %d bytes, Content-Encoding %q, Uncompressed %v; want 1 MiB inflated", tc.max, len(body), resp.Header.Get("Content-Encoding"), resp.Uncompressed)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// countingTransport counts the requests it is given at once.
type countingTransport struct {
	mu            sync.Mutex
	inFlight, max int
	release       chan struct{}
}

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.inFlight++
	c.max = max(c.max, c.inFlight)
	c.mu.Unlock()
	<-c.release
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// TestRequestSlots checks that at most maxConnsPerHost requests reach the
// transport at once, that the others wait without reaching it (where each
// would start a dial of its own), that a waiting request gives up with its
// context, and that closing a response's body gives its slot back.
func TestRequestSlots(t *testing.T) {
	next := &countingTransport{release: make(chan struct{})}
	rt := &requestSlots{slots: make(chan struct{}, maxConnsPerHost), next: next}
	n := maxConnsPerHost + 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://prometheus:9090/api/v1/query", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			resp.Body.Close() // a second Close gives back nothing more
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		next.mu.Lock()
		in := next.inFlight
		next.mu.Unlock()
		if in == maxConnsPerHost || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://prometheus:9090/api/v1/query", nil)
	if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "waiting for one of the 128 connections to the datasource") {
		t.Errorf("a request that found every slot taken until its deadline: %v", err)
	}

	close(next.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request: %v", err)
	}
	if next.max != maxConnsPerHost {
		t.Errorf("%d requests reached the transport at once, want %d", next.max, maxConnsPerHost)
	}
	if len(rt.slots) != 0 {
		t.Errorf("%d slots of closed responses were not given back", len(rt.slots))
	}
}

// answered answers every request with one response, whose body it
// replaces each time.
type answered struct{ resp http.Response }

func (a *answered) RoundTrip(*http.Request) (*http.Response, error) {
	a.resp.Body = http.NoBody
	return &a.resp, nil
}

// TestRequestSlotWaitAllocatesNothing checks that a request that waits
// for a slot allocates nothing for its wait: its one allocation is the
// body that gives the slot back, as for a request that finds one free.
func TestRequestSlotWaitAllocatesNothing(t *testing.T) {
	rt := &requestSlots{slots: make(chan struct{}, maxConnsPerHost), next: &answered{resp: http.Response{StatusCode: http.StatusOK}}}
	for range maxConnsPerHost {
		rt.slots <- struct{}{}
	}
	free := make(chan struct{})
	go func() { // gives a slot back each time it is asked; ends with the test
		for {
			select {
			case <-free:
				<-rt.slots
			case <-t.Context().Done():
				return
			}
		}
	}()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://prometheus:9090/api/v1/query", nil)
	allocs := testing.AllocsPerRun(100, func() {
		free <- struct{}{} // every slot is taken: the request waits for this one
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		rt.slots <- struct{}{} // all taken again
	})
	if allocs > 1 {
		t.Errorf("a request that waited for a slot made %.1f allocations; want 1, its body", allocs)
	}
}
