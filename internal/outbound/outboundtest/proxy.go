// Package outboundtest helps the tests of outbound clients.
package outboundtest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// ProxyVariables starts a proxy on loopback that answers every request
// with 502, and sets HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (both cases) to
// it, and NO_PROXY to none, for the rest of the test. It returns the count
// of requests the proxy got: a client that ignores the variables leaves it
// at zero. net/http's environment proxy spares "localhost" and loopback
// addresses, and tests contact nothing but loopback, so a test should also
// name its server "localhost." and check that its transport's Proxy is nil.
func ProxyVariables(t *testing.T) *atomic.Int64 {
	t.Helper()
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	return &proxied
}
