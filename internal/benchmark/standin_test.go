package benchmark

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// standIn is a loopback stand-in of a backend (an httptest server) that
// can tell its own share of a measurement's allocations (share): the
// counts of TestMeasureCost and BenchmarkMeasureOneValue are the whole
// process', the stand-in's reading of the request and writing of its
// answer included.
type standIn struct {
	*httptest.Server

	mu        sync.Mutex
	recording bool
	read      []byte // what the server read while recording
}

// newStandIn starts a stand-in answering with h, closed when the test
// ends.
func newStandIn(tb testing.TB, h http.Handler) *standIn {
	s := &standIn{Server: httptest.NewUnstartedServer(h)}
	s.Listener = recordingListener{Listener: s.Listener, s: s}
	s.Start()
	tb.Cleanup(s.Close)
	return s
}

// share is the stand-in's own allocations of the request that measure
// makes: the bytes of that request are recorded as the server reads
// them, then sent again and again on a connection of their own, written
// and read without net/http, so that what is counted is the server's
// (the least of three rounds, as TestMeasureCost takes).
func (s *standIn) share(tb testing.TB, measure func()) float64 {
	tb.Helper()
	s.mu.Lock()
	s.recording, s.read = true, nil
	s.mu.Unlock()
	measure()
	s.mu.Lock()
	s.recording = false
	request := s.read
	s.mu.Unlock()

	conn, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	// The first answer is read by net/http, to learn its length, which
	// is the same every time (a Date header is as long every second).
	if _, err := conn.Write(request); err != nil {
		tb.Fatal(err)
	}
	counted := &countingReader{r: conn}
	resp, err := http.ReadResponse(bufio.NewReader(counted), nil)
	if err != nil {
		tb.Fatalf("the recorded request (%q) is not answered: %v", request, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		tb.Fatal(err)
	}
	answer := make([]byte, counted.n)
	exchange := func() {
		if _, err := conn.Write(request); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.ReadFull(conn, answer); err != nil {
			tb.Fatal(err)
		}
	}
	for range 20 {
		exchange()
	}
	least := testing.AllocsPerRun(200, exchange)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, exchange))
	}
	return least
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// recordingListener's connections copy what the server reads from them
// to its stand-in while it records.
type recordingListener struct {
	net.Listener
	s *standIn
}

func (l recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, s: l.s}, nil
}

type recordingConn struct {
	net.Conn
	s *standIn
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.mu.Lock()
		if c.s.recording {
			c.s.read = append(c.s.read, p[:n]...)
		}
		c.s.mu.Unlock()
	}
	return n, err
}
