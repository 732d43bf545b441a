package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// tracedConn records what is done to a connection, in order: "arm" for a
// read deadline set (none lifted), "read" for bytes read, "timeout" for a
// read a deadline cut short, "write" for an answer written.
type tracedConn struct {
	net.Conn
	log *eventLog
}

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func (l *eventLog) has(e string) bool {
	for _, got := range l.all() {
		if got == e {
			return true
		}
	}
	return false
}

func (c *tracedConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		c.log.add("arm")
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *tracedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	switch {
	case n > 0:
		c.log.add("read")
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.add("timeout")
	}
	return n, err
}

func (c *tracedConn) Write(b []byte) (int, error) {
	c.log.add("write")
	return c.Conn.Write(b)
}

func lazyPipe() (*lazyDeadlineConn, net.Conn, *eventLog) {
	server, client := net.Pipe()
	log := &eventLog{}
	return &lazyDeadlineConn{Conn: &tracedConn{Conn: server, log: log}}, client, log
}

func TestLazyDeadlineCutsAReadWhenItIsEarlier(t *testing.T) {
	c, peer, _ := lazyPipe()
	defer peer.Close()
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Earlier than the one armed: armed at once.
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want %v", err, os.ErrDeadlineExceeded)
	}
}

func TestLazyDeadlineGivesAReadTheDeadlineAskedFor(t *testing.T) {
	c, peer, log := lazyPipe()
	defer peer.Close()
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// None asked for now: the one armed stays, and the read it cuts
	// short is read again.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for !log.has("timeout") {
			time.Sleep(time.Millisecond)
		}
		_, _ = peer.Write([]byte("x"))
	}()
	b := make([]byte, 1)
	if n, err := c.Read(b); n != 1 || err != nil || b[0] != 'x' {
		t.Fatalf("read with no deadline asked for: %d %q %v, want 1 \"x\" <nil>", n, b[:n], err)
	}
	if !log.has("timeout") {
		t.Fatal("the armed deadline did not cut the read short: nothing was tried")
	}
}

func TestLazyDeadlineInThePastStopsAPendingRead(t *testing.T) {
	c, peer, _ := lazyPipe()
	defer peer.Close()
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		got <- err
	}()
	// As net/http stops a background read (abortPendingRead).
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stopped read: %v, want %v", err, os.ErrDeadlineExceeded)
	}
	// Lifted: the next read waits for bytes, and gets them.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = peer.Write([]byte("y")) }()
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read after the deadline was lifted: %d %v", n, err)
	}
}

// TestLazyDeadlinesArmNothingBeforeTheHandler serves requests one after
// another on one connection, as canaryd serve does (its timeouts, a body
// read under a deadline of its own), and checks that no read deadline
// is armed between a request's first bytes and its handler, where
// net/http's own deadlines arm one for every request.
func TestLazyDeadlinesArmNothingBeforeTheHandler(t *testing.T) {
	for _, lazy := range []bool{true, false} {
		log := &eventLog{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var served net.Listener = tracedListener{Listener: ln, log: log}
		if lazy {
			served = deadlineListener{served}
		}
		// A request is sent once the one before is done with (its read
		// stopped, net/http's StateIdle), so that its first bytes are read
		// for it, not by the read net/http runs while a handler works.
		const requests = 20
		idle := make(chan struct{}, requests)
		srv := &http.Server{
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       2 * time.Minute,
			ConnState: func(_ net.Conn, state http.ConnState) {
				if state == http.StateIdle {
					idle <- struct{}{}
				}
			},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				log.add("handler")
				rc := http.NewResponseController(w)
				_ = rc.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, _ = io.ReadAll(r.Body)
				_ = rc.SetReadDeadline(time.Time{})
				_, _ = io.WriteString(w, "ok")
			}),
		}
		go func() { _ = srv.Serve(served) }()
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		for range requests {
			resp, err := client.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("body"))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			<-idle
		}
		_ = srv.Close()

		// From the first bytes read after an answer to the handler.
		armed, waiting, since := 0, true, false
		for _, e := range log.all() {
			switch {
			case e == "write":
				waiting, since = true, false
			case e == "read" && waiting:
				waiting, since = false, true
			case e == "handler":
				since = false
			case e == "arm" && since:
				armed++
			}
		}
		switch {
		case lazy && armed != 0:
			t.Errorf("lazy deadlines: %d deadlines armed between %d requests' arrival and their handler, want none", armed, requests)
		case !lazy && armed < requests-1:
			// The test's premise: net/http's deadlines arm one.
			t.Errorf("net/http's own deadlines: %d armed between %d requests' arrival and their handler, want one for each request after the first", armed, requests)
		}
	}
}

type tracedListener struct {
	net.Listener
	log *eventLog
}

func (l tracedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tracedConn{Conn: c, log: l.log}, nil
}
