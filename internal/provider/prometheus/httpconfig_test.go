package prometheus_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestHTTPClientConfig: the keys of Prometheus' HTTP client configuration
// that canaryd adds to its own behaviour (follow_redirects, proxy_url,
// http_headers, oauth2).
func TestHTTPClientConfig(t *testing.T) {
	rec := &recorder{}
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/old/") {
			http.Redirect(w, r, "/new"+strings.TrimPrefix(r.URL.Path, "/old"), http.StatusTemporaryRedirect)
			return
		}
		rec.handler(w, r)
	})

	// A proxy named by proxy_url gets the queries of a datasource that
	// only it can reach.
	var mu sync.Mutex
	var proxied []string
	proxy := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.URL.String())
		mu.Unlock()
		answer(w, "scalar", `[1,"5"]`)
	})
	proxyURL, _ := url.Parse(proxy.URL)

	ts := &tokenServer{}
	idp := fakeProm(t, ts.handler)

	p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{
		{Name: "no-redirects", URL: srv.URL + "/old", HTTP: httpConfig(func(c *config.HTTPClientConfig) { c.FollowRedirects = false })},
		{Name: "redirects", URL: srv.URL + "/old/x", HTTP: httpConfig(func(*config.HTTPClientConfig) {})},
		{Name: "proxied", URL: "http://prometheus.invalid:9090", HTTP: httpConfig(func(c *config.HTTPClientConfig) { c.ProxyURL = config.URL{URL: proxyURL} })},
		{Name: "headers", URL: srv.URL + "/headers", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
			c.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{"X-From-Config": {Values: []string{"v"}}}}
		})},
		{Name: "oauth2", URL: srv.URL + "/oauth2", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
			c.OAuth2 = &config.OAuth2{ClientID: "id", ClientSecret: "client-s3cret", TokenURL: idp.URL + "/token"}
		})},
	}})

	obs := measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/old"}, time.Now())
	if obs.Err == nil || !strings.Contains(obs.Err.Error(), "307") {
		t.Errorf("follow_redirects: false: (%q, %v), want the redirect's 307 as an error", obs.Display, obs.Err)
	}
	if obs := measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/old/x"}, time.Now()); obs.Err != nil || obs.Display != "1" {
		t.Errorf("follow_redirects by default: (%q, %v), want 1", obs.Display, obs.Err)
	}

	if obs := measure(t, p, prometheus.Metric{Query: "up", Address: "http://prometheus.invalid:9090"}, time.Now()); obs.Err != nil || obs.Display != "5" {
		t.Errorf("proxy_url: (%q, %v), want the proxy's 5", obs.Display, obs.Err)
	}
	mu.Lock()
	if len(proxied) != 1 || proxied[0] != "http://prometheus.invalid:9090/api/v1/query" {
		t.Errorf("the proxy got %q", proxied)
	}
	mu.Unlock()

	for range 3 {
		measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/headers"}, time.Now())
		if got := rec.last(t).Values("X-From-Config"); len(got) != 1 || got[0] != "v" {
			t.Errorf("http_headers: X-From-Config %q, want v once", got)
		}
	}
	measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/oauth2"}, time.Now())
	if got := rec.last(t).Get("Authorization"); got != "Bearer MyAccessToken" {
		t.Errorf("oauth2: Authorization %q, want the token endpoint's", got)
	}
	// What one datasource's configuration adds is its own.
	measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/old/x"}, time.Now())
	if h := rec.last(t); h.Get("Authorization") != "" || h.Get("X-From-Config") != "" {
		t.Errorf("another datasource's query carried Authorization %q, X-From-Config %q", h.Get("Authorization"), h.Get("X-From-Config"))
	}
}
