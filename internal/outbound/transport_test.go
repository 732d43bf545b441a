package outbound

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/outbound/outboundtest"
)

// TestIgnoresProxyVariables sets HTTP_PROXY, HTTPS_PROXY and ALL_PROXY to
// a real proxy before the transport is made: requests go straight to
// their server, and the proxy sees nothing. net/http's environment proxy
// spares "localhost" and loopback addresses, and tests contact nothing
// but loopback, so the server is named "localhost." (dialled as
// "localhost" by the allow list's dialler) and the transport's Proxy is
// checked too: it must be none.
func TestIgnoresProxyVariables(t *testing.T) {
	proxied := outboundtest.ProxyVariables(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "direct") }))
	defer srv.Close()

	u, _ := url.Parse(srv.URL)
	a, err := ParseAllowList([]string{"http://localhost:" + u.Port()})
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 4, Dial: a.Dial(Dialer(0))})
	defer tr.CloseIdleConnections()
	if tr.Proxy != nil {
		t.Fatal("the transport has a proxy function; want none")
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://localhost.:" + u.Port() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "direct" {
		t.Errorf("answer %q, want the server's own", body)
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy got %d requests, want none", n)
	}
}

// TestTransportBounds: the options reach the transport, with Argo's
// timeouts as the defaults.
func TestTransportBounds(t *testing.T) {
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 16, MaxResponseHeaderBytes: 64 << 10})
	if tr.MaxConnsPerHost != 16 || tr.MaxIdleConnsPerHost != 16 || tr.MaxResponseHeaderBytes != 64<<10 ||
		tr.TLSHandshakeTimeout != TLSHandshakeTimeout || tr.IdleConnTimeout != IdleConnTimeout || !tr.ForceAttemptHTTP2 {
		t.Errorf("transport %+v, want the options and the defaults", tr)
	}
	tr = NewTransport(TransportOptions{DialTimeout: 2 * time.Second, MaxIdleConnsPerHost: 8, ResponseHeaderTimeout: time.Second})
	if tr.TLSHandshakeTimeout != 2*time.Second || tr.MaxIdleConnsPerHost != 8 || tr.ResponseHeaderTimeout != time.Second {
		t.Errorf("transport %+v, want a 2 s handshake, 8 idle connections per host", tr)
	}
}

// TestMaxConnsPerHost: requests beyond the bound wait for a connection;
// no more are opened.
func TestMaxConnsPerHost(t *testing.T) {
	var open, peak atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 2})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	errs := make(chan error, 6)
	for range 6 {
		go func() {
			resp, err := client.Get(srv.URL)
			if err == nil {
				_ = resp.Body.Close()
			}
			errs <- err
		}()
	}
	// Wait until the server holds the two connections the bound allows,
	// and give the other requests the chance to open more.
	for open.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range 6 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("%d connections at once, want 2", p)
	}
}

// TestAllowListRedirects follows redirects within the list, names the
// target's host as the list compared it, refuses one outside it and
// stops after the bound, with the client's own errors.
func TestAllowListRedirects(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hosts)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		u, _ := url.Parse(srv.URL)
		switch r.URL.Path {
		case "/ok/start":
			http.Redirect(w, r, "http://LOCALHOST.:"+u.Port()+"/ok/end", http.StatusFound)
		case "/ok/out":
			http.Redirect(w, r, "/other", http.StatusFound)
		case "/ok/loop":
			http.Redirect(w, r, "/ok/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, r.URL.Path)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	a, err := ParseAllowList([]string{srv.URL + "/ok", "http://localhost:" + u.Port() + "/ok"})
	if err != nil {
		t.Fatal(err)
	}
	errTooMany := errors.New("too many")
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 2, Dial: a.Dial(Dialer(0))})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: a.Redirects(3,
		func() error { return errTooMany },
		func(_ *url.URL, reason string) error { return fmt.Errorf("refused: %s", reason) })}

	get := func(path string) (string, error) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer DrainAndClose(resp.Body, 1<<10)
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get("/ok/start"); err != nil || body != "/ok/end" || len(seen()) != 2 || seen()[1] != "localhost:"+u.Port() {
		t.Errorf("a redirect within the list: %q %v, hosts %q", body, err, seen())
	}
	if _, err := get("/ok/out"); err == nil || !strings.Contains(err.Error(), "refused: "+ReasonNotAllowed) {
		t.Errorf("a redirect out of the list: %v, want refused", err)
	}
	before := len(seen())
	if _, err := get("/ok/loop"); !errors.Is(err, errTooMany) || len(seen())-before != 4 {
		t.Errorf("a redirect loop: %v after %d requests, want too many after 4", err, len(seen())-before)
	}
}

func TestNoRedirectsAndSameOrigin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, "http://localhost.:1/x", http.StatusFound)
		case "/home":
			http.Redirect(w, r, "/done", http.StatusFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 2})
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr, CheckRedirect: NoRedirects}).Get(srv.URL + "/home")
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Errorf("NoRedirects: %v, want the redirect itself", err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}

	u, _ := url.Parse(srv.URL)
	same := &http.Client{Transport: tr, CheckRedirect: Redirects(5, SameOrigin(Origin(u)),
		func() error { return errors.New("too many") },
		func(target *url.URL, reason string) error {
			return fmt.Errorf("redirect to %s refused: %s", Origin(target), reason)
		})}
	resp, err = same.Get(srv.URL + "/home")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("SameOrigin, a redirect home: %v", err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}
	_, err = same.Get(srv.URL + "/away")
	if err == nil || !strings.Contains(err.Error(), "redirect to http://localhost.:1 refused: it leaves "+Origin(u)) {
		t.Errorf("SameOrigin, a redirect away: %v, want refused", err)
	}
}

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		max  int64
		ok   bool
	}{
		{"", 0, true},
		{"abc", 3, true},
		{"abcd", 3, false},
		{strings.Repeat("x", 1<<20), 1 << 10, false},
	} {
		data, err := ReadBody(strings.NewReader(tc.body), tc.max)
		var tl *TooLargeError
		switch {
		case tc.ok && (err != nil || string(data) != tc.body):
			t.Errorf("ReadBody(%d bytes, %d) = %d bytes, %v; want it whole", len(tc.body), tc.max, len(data), err)
		case !tc.ok && (!errors.As(err, &tl) || tl.Max != tc.max || data != nil):
			t.Errorf("ReadBody(%d bytes, %d) = %d bytes, %v; want a TooLargeError", len(tc.body), tc.max, len(data), err)
		}
	}
	// The bound is found at its first byte over: no more is read.
	r := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	if _, err := ReadBody(r, 100); err == nil || r.n > 100+512 {
		t.Errorf("ReadBody read %d bytes of a body over 100, %v", r.n, err)
	}
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

func TestValidHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"X-Scope-OrgID": true, "Authorization": true, "a!#$%&'*+-.^_`|~z": true,
		"": false, "X Y": false, "X:Y": false, "X\nY": false, "Ä": false, "(x)": false,
	} {
		if got := ValidHeaderName(name); got != want {
			t.Errorf("ValidHeaderName(%q) = %v, want %v", name, got, want)
		}
	}
	for value, want := range map[string]bool{
		"": true, "Bearer abc": true, "a\tb": true, "é": true,
		"a\r\nX-Evil: 1": false, "a\x00": false, "a\x7f": false,
	} {
		if got := ValidHeaderValue(value); got != want {
			t.Errorf("ValidHeaderValue(%q) = %v, want %v", value, got, want)
		}
	}
}

// TestInflate: an answer to a request that asked for gzip itself
// (AcceptGzip) is read inflated when the server compressed it, and as it
// came when it did not; a body that is not gzip is an error at its first
// read.
func TestInflate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/broken":
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = io.WriteString(w, "this is not gzip, but plain text")
		case r.Header.Get("Accept-Encoding") == AcceptGzip:
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, "inflated")
			_ = zw.Close()
		default:
			_, _ = io.WriteString(w, "plain")
		}
	}))
	defer srv.Close()
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 2})
	defer tr.CloseIdleConnections()
	get := func(path, accept string) (string, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		Inflate(resp)
		if resp.Header.Get("Content-Encoding") != "" || (resp.Uncompressed && resp.Header.Get("Content-Length") != "") {
			t.Errorf("%s: headers %v after Inflate", path, resp.Header)
		}
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	if body, err := get("/", AcceptGzip); err != nil || body != "inflated" {
		t.Errorf("gzipped: %q, %v; want it inflated", body, err)
	}
	if body, err := get("/", "identity"); err != nil || body != "plain" {
		t.Errorf("plain: %q, %v", body, err)
	}
	if _, err := get("/broken", AcceptGzip); !errors.Is(err, gzip.ErrHeader) {
		t.Errorf("not gzip: %v, want %v", err, gzip.ErrHeader)
	}
}

// TestRoundTrip: RoundTrip answers as an http.Client with NoRedirects
// does: a redirect as it came, and the client's error, word for word,
// when the request cannot be sent (here, HTTP spoken to a TLS client too).
func TestRoundTrip(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	tr := NewTransport(TransportOptions{MaxConnsPerHost: 2})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: NoRedirects}
	for _, target := range []string{srv.URL + "/x", strings.Replace(srv.URL, "http:", "https:", 1) + "/x", "http://127.0.0.1:1/x", "http://user:secret@127.0.0.1:1/x"} {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader("q=1"))
		resp, err := Doer{Transport: tr}.Do(req)
		want, wantErr := client.Post(target, "text/plain", strings.NewReader("q=1"))
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want the client's %v", target, err, wantErr)
		}
		if err == nil && (resp.StatusCode != http.StatusFound || resp.StatusCode != want.StatusCode) {
			t.Errorf("%s: status %d, want the redirect's %d", target, resp.StatusCode, want.StatusCode)
		}
		for _, r := range []*http.Response{resp, want} {
			if r != nil {
				_ = r.Body.Close()
			}
		}
	}
	if !Redirected(http.StatusFound) || Redirected(http.StatusNotModified) {
		t.Error("Redirected: 302 is followed by http.Client, 304 is not")
	}
}
