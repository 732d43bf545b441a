package main

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// readHeaderTimeout is canaryd serve's http.Server.ReadHeaderTimeout.
const readHeaderTimeout = 10 * time.Second

// The read deadlines of canaryd serve's connections.
//
// net/http sets a connection's read deadline several times a request:
// the idle timeout once an answer is sent, the header timeout when the
// next request's first bytes arrive, none once its headers are read; and
// the handlers set one for the body (internal/server). Each deadline set
// after one was lifted arms a runtime timer, and a timer earlier than the
// others wakes the network poller or another thread: a system call and a
// wake-up between a request's arrival and its handler.
//
// A lazyDeadlineConn keeps its read deadline where net/http asks for it
// without arming a timer for each change. The deadline armed is never
// later than the one asked for, so that none comes late; a later deadline,
// or none, leaves the earlier one armed, and a read the armed one cuts
// short before the one asked for has passed is given the next and read
// again. The deadline armed while a connection waits for its next request
// is at most lazyHorizon ahead, so that the header timeout asked for once
// the request arrives, and the body's, are later, and arm nothing.

// lazyHorizon is how far ahead a deadline is armed at most: no further
// than the header timeout, which net/http asks for as each request
// arrives, so that the deadline armed while a connection waits for its
// next request is never later than that request's header timeout (which
// would have to be armed then). A connection that waits longer, or a
// request served longer (a wait, a stream), has its read woken this often
// to be given the next.
const lazyHorizon = readHeaderTimeout

// deadlineListener gives every connection it accepts lazy read deadlines.
type deadlineListener struct{ net.Listener }

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lazyDeadlineConn{Conn: c}, nil
}

// lazyDeadlineConn is a connection with lazy read deadlines (see above).
type lazyDeadlineConn struct {
	net.Conn
	mu    sync.Mutex
	want  time.Time // the read deadline asked for; zero for none
	armed time.Time // the connection's own, never later than want; zero before the first
}

// SetReadDeadline asks for t. It arms a deadline only when t is earlier
// than the one armed: a later one, or none, is given to a read the
// armed one cuts short (Read).
func (c *lazyDeadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want = t
	if t.IsZero() || (!c.armed.IsZero() && !t.Before(c.armed)) {
		return nil
	}
	return c.armLocked()
}

// armLocked arms the deadline asked for, or lazyHorizon from now when
// that is earlier or none is asked for.
func (c *lazyDeadlineConn) armLocked() error {
	c.armed = time.Now().Add(lazyHorizon)
	if !c.want.IsZero() && c.want.Before(c.armed) {
		c.armed = c.want
	}
	return c.Conn.SetReadDeadline(c.armed)
}

func (c *lazyDeadlineConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// Read reads; when the armed deadline cuts it short before the one asked
// for has passed, it arms the next and reads again.
func (c *lazyDeadlineConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || !c.rearm() {
			return n, err
		}
	}
}

// rearm arms the next deadline after the armed one has passed, and
// reports whether the one asked for has not (a read goes on).
func (c *lazyDeadlineConn) rearm() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.want.IsZero() && !time.Now().Before(c.want) {
		return false
	}
	return c.armLocked() == nil
}

// CloseWrite is the connection's, for net/http's half-close of a
// connection it gives up on.
func (c *lazyDeadlineConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
