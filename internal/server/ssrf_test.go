package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// countingServer answers every request with answer, counting them: a
// place canaryd may or may not reach.
func countingServer(t *testing.T, answer http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func promAnswer(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
}

// TestSSRFAddress checks that a caller cannot make canaryd query a host it
// is not configured for, however the address is written, and whether it
// comes in the spec or through an argument: each is a 400 on the address
// before anything runs, and nothing is sent anywhere.
func TestSSRFAddress(t *testing.T) {
	prom, queries := countingServer(t, promAnswer)
	s := start(t, options{prometheus: []string{prom.URL}})
	port := prom.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	addresses := []struct{ name, address string }{
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/iam/security-credentials/"},
		{"cloud metadata over https with credentials", "https://admin:hunter2@169.254.169.254/"},
		{"another loopback address", "http://127.0.0.2:9090"},
		{"IPv6 loopback", "http://[::1]:9090"},
		{"localhost with a trailing dot", "http://localhost.:9090"},
		{"127.0.0.1 in decimal", "http://2130706433:9090"},
		{"127.0.0.1 in hex", "http://0x7f000001:9090"},
		{"127.0.0.1 in octal", "http://017700000001:9090"},
		{"127.0.0.1 shortened", "http://127.1:9090"},
		{"the configured Prometheus as localhost", "http://localhost:" + port},
		{"the configured Prometheus as IPv4-mapped IPv6", "http://[::ffff:127.0.0.1]:" + port},
		{"the configured Prometheus in decimal", "http://2130706433:" + port},
		{"the configured Prometheus under another path", prom.URL + "/../admin"},
		{"an internal name", "http://kubernetes.default.svc:443"},
		{"another scheme", "file:///etc/passwd"},
		{"gopher", "gopher://127.0.0.1:6379/_INFO"},
	}
	for _, a := range addresses {
		for _, via := range []struct {
			name, query, address string
		}{
			{"in the spec", "", a.address},
			{"through an argument", "?arg.prom=" + url.QueryEscape(a.address), "{{args.prom}}"},
		} {
			body := fmt.Sprintf(`{"args": [{"name": "prom"}], "metrics": [{"name": "m", "provider": {"prometheus": {"address": %q, "query": "up"}}}]}`, via.address)
			if via.query == "" {
				body = fmt.Sprintf(`{"metrics": [{"name": "m", "provider": {"prometheus": {"address": %q, "query": "up"}}}]}`, via.address)
			}
			for _, path := range []string{"/v1/analyses", "/v1/evaluate", "/v1/backtests?start=-1h&"} {
				p := path + via.query
				if strings.HasSuffix(path, "&") {
					p = path + strings.TrimPrefix(via.query, "?")
				}
				resp := s.do(http.MethodPost, p, jsonType, body)
				if resp.status != http.StatusBadRequest {
					t.Errorf("%s %s (%s): status %d, want 400: %s", a.name, via.name, path, resp.status, resp.body)
					continue
				}
				errs := resp.problem(t).Errors
				if len(errs) != 1 || errs[0].Field != "metrics[0].provider.prometheus.address" {
					t.Errorf("%s %s (%s): problems %+v, want one on metrics[0].provider.prometheus.address", a.name, via.name, path, errs)
				}
				if strings.Contains(string(resp.body), "hunter2") {
					t.Errorf("%s %s: the answer shows the address' password: %s", a.name, via.name, resp.body)
				}
			}
		}
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("the configured Prometheus got %d queries from refused requests", n)
	}
	if n := len(s.analyses.List()); n != 0 {
		t.Errorf("%d analyses started by refused requests", n)
	}
}

// TestSSRFRedirect checks that a configured Prometheus cannot send canaryd
// elsewhere: a redirect to another host is not followed, the measurement
// is an Error saying so, and the other host gets nothing.
func TestSSRFRedirect(t *testing.T) {
	elsewhere, reached := countingServer(t, promAnswer)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusPermanentRedirect} {
		prom, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, code)
		})
		s := start(t, options{prometheus: []string{prom.URL}})
		resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, `{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up"}}}]}`)
		if resp.status != http.StatusServiceUnavailable {
			t.Errorf("%d: status %d, want 503 (an Error round): %s", code, resp.status, resp.body)
			continue
		}
		ms := resp.analysis(t).MetricResults[0].Measurements[0]
		want := "redirect to " + elsewhere.URL + " refused: queries only follow redirects within the datasource's own address " + prom.URL
		if ms.Phase != api.PhaseError || !strings.Contains(ms.Message, want) {
			t.Errorf("%d: measurement %s %q, want Error containing %q", code, ms.Phase, ms.Message, want)
		}
		// An analysis sees the same: an Error, at its first measurement
		// with consecutiveErrorLimit 0.
		a := s.do(http.MethodPost, "/v1/analyses?wait=true", jsonType,
			`{"metrics": [{"name": "m", "consecutiveErrorLimit": 0, "provider": {"prometheus": {"query": "up"}}}]}`).analysis(t)
		if a.Phase != api.PhaseError || !strings.Contains(a.Message, "refused") {
			t.Errorf("%d: analysis %s %q, want Error saying the redirect was refused", code, a.Phase, a.Message)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the host redirected to got %d requests", n)
	}
}

// TestSSRFOAuth2 checks that an OAuth2 token endpoint must be one the
// configuration allows: a metric's client credentials are POSTed to it.
func TestSSRFOAuth2(t *testing.T) {
	prom, _ := countingServer(t, promAnswer)
	tokens, asked := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token": "at", "token_type": "Bearer", "expires_in": 3600}`))
	})
	provider, err := prometheus.New(prometheus.Options{
		Datasources: []prometheus.Datasource{{URL: prom.URL}},
		TokenURLs:   []string{tokens.URL + "/oauth/"},
		Registerer:  promclient.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(provider.CloseIdleConnections)
	s := start(t, options{sources: provider.Source})
	oauth := func(tokenURL string) string {
		return fmt.Sprintf(`{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up",
  "authentication": {"oauth2": {"tokenUrl": %q, "clientId": "canaryd", "clientSecret": "s3cr3t-client"}}}}}]}`, tokenURL)
	}
	for _, tc := range []struct{ name, tokenURL string }{
		{"cloud metadata", "http://169.254.169.254/latest/api/token"},
		{"loopback elsewhere", "http://127.0.0.1:9/token"},
		{"beside the allowed prefix", tokens.URL + "/oauthevil/token"},
		{"out of the prefix by dot segments", tokens.URL + "/oauth/../admin"},
		{"with a query", tokens.URL + "/oauth/token?x=1"},
	} {
		resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, oauth(tc.tokenURL))
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", tc.name, resp.status, resp.body)
			continue
		}
		errs := resp.problem(t).Errors
		if len(errs) != 1 || errs[0].Field != "metrics[0].provider.prometheus.authentication.oauth2.tokenUrl" {
			t.Errorf("%s: problems %+v, want one on the tokenUrl", tc.name, errs)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the token endpoint got %d requests from refused specs", n)
	}
	// The allowed endpoint works.
	if resp := s.do(http.MethodPost, "/v1/evaluate", jsonType, oauth(tokens.URL+"/oauth/token")); resp.status != http.StatusOK {
		t.Errorf("an allowed token endpoint: %d %s, want 200", resp.status, resp.body)
	}
}

// TestSSRFWebhook checks the webhook's two ways out at the service: a
// destination outside --webhook-allow (the metadata address) is a 400, and
// an allowed receiver that redirects elsewhere gets its delivery failed
// without the other host being reached.
func TestSSRFWebhook(t *testing.T) {
	elsewhere, reached := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	redirecting := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", elsewhere.URL+"/hooks")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	prom, _ := countingServer(t, promAnswer)
	s := start(t, options{prometheus: []string{prom.URL}, webhookAllow: []string{redirecting.prefix()}})

	for _, hook := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/", "http://2852039166/latest/"} {
		resp := s.do(http.MethodPost, "/v1/analyses?webhook="+url.QueryEscape(hook), jsonType, once("echo"))
		if resp.status != http.StatusBadRequest {
			t.Errorf("webhook %s: status %d, want 400", hook, resp.status)
			continue
		}
		if errs := resp.problem(t).Errors; len(errs) != 1 || errs[0].Field != "webhook" {
			t.Errorf("webhook %s: problems %+v, want one on webhook", hook, errs)
		}
	}

	a := s.do(http.MethodPost, "/v1/analyses?wait=true&webhook="+url.QueryEscape(redirecting.prefix()+"/deploy"), jsonType,
		`{"metrics": [{"name": "m", "provider": {"prometheus": {"query": "up"}}}]}`).analysis(t)
	if a.Phase != api.PhaseSuccessful {
		t.Fatalf("analysis %s %q, want Successful: the webhook's fate is not the analysis'", a.Phase, a.Message)
	}
	st := s.waitWebhook(a.ID, "the delivery to fail", func(st api.WebhookStatus) bool { return st.Failed == 1 })
	if st.Delivered != 0 || !strings.Contains(st.LastError, "redirect not followed: its target is refused") {
		t.Errorf("webhook status %+v, want one failure: the redirect's target is refused", st)
	}
	if n := len(redirecting.deliveries()); n != 1 {
		t.Errorf("the redirecting receiver got %d attempts, want 1 (a refused redirect is final)", n)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the host redirected to got %d requests", n)
	}
}
