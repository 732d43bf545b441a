package prometheus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// recorder is a fake Prometheus that remembers the headers of each query.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (rec *recorder) handler(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.headers = append(rec.headers, r.Header.Clone())
	rec.mu.Unlock()
	answer(w, "scalar", `[1,"1"]`)
}

func (rec *recorder) last(t *testing.T) http.Header {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.headers) == 0 {
		t.Fatal("no request received")
	}
	return rec.headers[len(rec.headers)-1]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func basic(user, password string) string {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, password)
	return r.Header.Get("Authorization")
}

// TestHeadersAndCredentials: what reaches Prometheus, and which setting
// wins when two say something about the same header.
func TestHeadersAndCredentials(t *testing.T) {
	rec := &recorder{}
	srv := fakeProm(t, rec.handler)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "ds-token-1\n")
	passwordFile := filepath.Join(dir, "password")
	writeFile(t, passwordFile, "file-password")

	hostPort := strings.TrimPrefix(srv.URL, "http://")
	p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{
		{Name: "bearer", URL: srv.URL + "/bearer", HTTP: bearerFile(tokenFile), Headers: map[string]string{"x-scope-orgid": "tenant-a"}},
		{Name: "basic", URL: srv.URL + "/basic", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
			c.BasicAuth = &config.BasicAuth{Username: "ds-user", PasswordFile: passwordFile}
		})},
		{Name: "userinfo", URL: "http://ds-user:url-password@" + hostPort + "/userinfo"},
		{Name: "plain", URL: srv.URL + "/plain"},
	}})

	tests := []struct {
		name string
		m    prometheus.Metric
		want map[string]string // header → value; "" means absent
	}{
		{
			name: "datasource bearer token and tenant",
			m:    prometheus.Metric{Address: srv.URL + "/bearer"},
			want: map[string]string{"Authorization": "Bearer ds-token-1", "X-Scope-Orgid": "tenant-a"},
		},
		{
			name: "metric headers are added; the datasource's tenant cannot be overridden",
			m:    prometheus.Metric{Address: srv.URL + "/bearer", Headers: []prometheus.Header{{Key: "X-Scope-OrgID", Value: "tenant-b"}, {Key: "X-Extra", Value: "1"}, {Key: "x-extra", Value: "2"}}},
			want: map[string]string{"Authorization": "Bearer ds-token-1", "X-Scope-Orgid": "tenant-a", "X-Extra": "2"},
		},
		{
			name: "metric basic auth replaces the datasource's token",
			m:    prometheus.Metric{Address: srv.URL + "/bearer", Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "myuser", Password: "mypassword"}}},
			want: map[string]string{"Authorization": basic("myuser", "mypassword")},
		},
		{
			name: "a metric Authorization header beats its basic auth (Argo's order)",
			m: prometheus.Metric{
				Address:        srv.URL + "/plain",
				Headers:        []prometheus.Header{{Key: "Authorization", Value: "Bearer from-header"}},
				Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "myuser", Password: "mypassword"}},
			},
			want: map[string]string{"Authorization": "Bearer from-header"},
		},
		{
			name: "datasource basic auth from a password file",
			m:    prometheus.Metric{Address: srv.URL + "/basic"},
			want: map[string]string{"Authorization": basic("ds-user", "file-password")},
		},
		{
			name: "datasource URL userinfo becomes basic auth",
			m:    prometheus.Metric{Address: srv.URL + "/userinfo"},
			want: map[string]string{"Authorization": basic("ds-user", "url-password")},
		},
		{
			name: "metric address userinfo becomes basic auth",
			m:    prometheus.Metric{Address: "http://m-user:m-password@" + hostPort + "/plain"},
			want: map[string]string{"Authorization": basic("m-user", "m-password")},
		},
		{
			name: "nothing configured",
			m:    prometheus.Metric{Address: srv.URL + "/plain"},
			want: map[string]string{"Authorization": "", "X-Scope-Orgid": ""},
		},
	}
	for _, tc := range tests {
		tc.m.Query = "up"
		if obs := measure(t, p, tc.m, time.Now()); obs.Err != nil {
			t.Errorf("%s: %v", tc.name, obs.Err)
			continue
		}
		h := rec.last(t)
		for k, want := range tc.want {
			if got := strings.Join(h.Values(k), "|"); got != want {
				t.Errorf("%s: header %s = %q, want %q", tc.name, k, got, want)
			}
		}
	}

	// A rotated token file is used by the next query, and a missing one is
	// an error that names the file but never a token.
	writeFile(t, tokenFile, "ds-token-2")
	measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/bearer"}, time.Now())
	if got := rec.last(t).Get("Authorization"); got != "Bearer ds-token-2" {
		t.Errorf("after rotation: Authorization = %q, want the new token", got)
	}
	os.Remove(tokenFile)
	obs := measure(t, p, prometheus.Metric{Query: "up", Address: srv.URL + "/bearer"}, time.Now())
	want := fmt.Sprintf(`Post "%s/bearer/api/v1/query": unable to read authorization credentials: unable to read file %s: open %s: no such file or directory`, srv.URL, tokenFile, tokenFile)
	if got := errText(obs.Err); got != want {
		t.Errorf("missing token file: err = %q, want %q", got, want)
	}
}

// tokenServer is an OAuth2 token endpoint for client id "id", secret
// "client-s3cret".
type tokenServer struct {
	mu       sync.Mutex
	requests []http.Header
	fail     bool
}

func (ts *tokenServer) handler(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	ts.mu.Lock()
	ts.requests = append(ts.requests, r.Header.Clone())
	fail := ts.fail
	ts.mu.Unlock()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if fail || id != "id" || secret != "client-s3cret" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// A careless endpoint echoes what it was sent.
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad client","echo":%q}`, secret)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"access_token":"MyAccessToken","token_type":"Bearer","expires_in":3600}`)
}

func TestOAuth2(t *testing.T) {
	ts := &tokenServer{}
	idp := httptest.NewServer(http.HandlerFunc(ts.handler))
	t.Cleanup(idp.Close)
	rec := &recorder{}
	prom := fakeProm(t, rec.handler)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "ds-token")
	p := newProvider(t, prometheus.Options{
		Datasources: []prometheus.Datasource{{URL: prom.URL, HTTP: bearerFile(tokenFile), Headers: map[string]string{"X-Scope-OrgID": "tenant"}}},
		TokenURLs:   []string{idp.URL + "/token"},
	})
	m := prometheus.Metric{Query: "up", Authentication: prometheus.Authentication{OAuth2: prometheus.OAuth2{
		TokenURL: idp.URL + "/token", ClientID: "id", ClientSecret: "client-s3cret", Scopes: []string{"read"},
	}}}
	src, _, errs := p.Source(&m)
	if errs != nil {
		t.Fatal(errs)
	}
	for i := 0; i < 2; i++ {
		if obs := src.Measure(t.Context(), time.Now()); obs.Err != nil {
			t.Fatalf("measure %d: %v", i, obs.Err)
		}
		if got := rec.last(t).Get("Authorization"); got != "Bearer MyAccessToken" {
			t.Errorf("measure %d: Authorization = %q, want Bearer MyAccessToken", i, got)
		}
	}
	ts.mu.Lock()
	if len(ts.requests) != 1 {
		t.Errorf("token requests: %d, want 1 (the token is cached)", len(ts.requests))
	}
	for _, h := range ts.requests {
		if h.Get("X-Scope-Orgid") != "" || strings.Contains(h.Get("Authorization"), "ds-token") {
			t.Errorf("the token endpoint got the datasource's headers or credentials: %v", h)
		}
	}
	ts.fail = true
	ts.mu.Unlock()

	// A fresh source (new analysis) has no token; the endpoint refuses.
	src, _, _ = p.Source(&m)
	obs := src.Measure(t.Context(), time.Now())
	want := fmt.Sprintf(`Post "%s/api/v1/query": oauth2: cannot fetch token: 401 Unauthorized: invalid_client (bad client)`, prom.URL)
	if got := errText(obs.Err); got != want {
		t.Errorf("refused token: err = %q, want %q", got, want)
	}
}

// newCert makes a self-signed certificate and writes it (and its key) as
// PEM files.
func newCert(t *testing.T, dir, name string) (certFile, keyFile string, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestTLS(t *testing.T) {
	var mu sync.Mutex
	var clientCN string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		clientCN = ""
		if len(r.TLS.PeerCertificates) > 0 {
			clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		mu.Unlock()
		answer(w, "scalar", `[1,"1"]`)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	certFile, keyFile, _ := newCert(t, dir, "client-1")

	// httptest's certificate is for 127.0.0.1 and example.com.
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	tests := []struct {
		name    string
		ds      prometheus.Datasource
		m       prometheus.Metric
		wantErr string
		wantCN  string
	}{
		{name: "unknown CA", ds: prometheus.Datasource{URL: srv.URL}, wantErr: "tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{name: "metric insecure (Argo)", ds: prometheus.Datasource{URL: srv.URL}, m: prometheus.Metric{Insecure: true}},
		{name: "datasource insecure", ds: prometheus.Datasource{URL: srv.URL, HTTP: tlsConfig(config.TLSConfig{InsecureSkipVerify: true})}},
		{name: "datasource CA", ds: prometheus.Datasource{URL: srv.URL, HTTP: tlsConfig(config.TLSConfig{CAFile: caFile})}},
		{name: "wrong name", ds: prometheus.Datasource{URL: byName, HTTP: tlsConfig(config.TLSConfig{CAFile: caFile})}, wantErr: "x509: certificate is valid for example.com"},
		{name: "server name override", ds: prometheus.Datasource{URL: byName, HTTP: tlsConfig(config.TLSConfig{CAFile: caFile, ServerName: "example.com"})}},
		{
			name: "client certificate",
			ds:   prometheus.Datasource{URL: srv.URL, HTTP: tlsConfig(config.TLSConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile})},
			// The Source is made before the files change below.
			wantCN: "client-1",
		},
	}
	for _, tc := range tests {
		p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{tc.ds}})
		tc.m.Query = "up"
		obs := measure(t, p, tc.m, time.Now())
		if got := errText(obs.Err); (tc.wantErr == "" && got != "") || !strings.Contains(got, tc.wantErr) {
			t.Errorf("%s: err = %q, want one containing %q", tc.name, got, tc.wantErr)
			continue
		}
		mu.Lock()
		if tc.wantErr == "" && clientCN != tc.wantCN {
			t.Errorf("%s: client certificate %q, want %q", tc.name, clientCN, tc.wantCN)
		}
		mu.Unlock()
	}

	// Rotation: new files under the same names are used for new connections.
	p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{{URL: srv.URL, HTTP: tlsConfig(config.TLSConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile})}}})
	measure(t, p, prometheus.Metric{Query: "up"}, time.Now())
	rotated := t.TempDir()
	newCertFile, newKeyFile, _ := newCert(t, rotated, "client-2")
	later := time.Now().Add(time.Minute)
	for from, to := range map[string]string{newCertFile: certFile, newKeyFile: keyFile} {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(to, later, later)
	}
	p.CloseIdleConnections()
	if obs := measure(t, p, prometheus.Metric{Query: "up"}, time.Now()); obs.Err != nil {
		t.Fatalf("after rotation: %v", obs.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if clientCN != "client-2" {
		t.Errorf("after rotation: client certificate %q, want client-2", clientCN)
	}
}

// TestSecretsNeverInErrors provokes every kind of failure with every kind
// of credential configured, and looks for the credentials in what comes
// back.
func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	secrets := []string{"ds-url-pw", "ds-bearer-tok", "m-basic-pw", "m-header-tok", "client-s3cret", "MyAccessToken", "m-url-pw"}
	for _, up := range [][2]string{{"u", "ds-url-pw"}, {"m", "m-basic-pw"}, {"m", "m-url-pw"}} {
		// Basic credentials are secrets in their encoded form too.
		secrets = append(secrets, strings.TrimPrefix(basic(up[0], up[1]), "Basic "))
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "ds-bearer-tok")

	ts := &tokenServer{}
	idp := httptest.NewServer(http.HandlerFunc(ts.handler))
	t.Cleanup(idp.Close)

	// A server that echoes the request's headers in its error body, and
	// redirects with credentials in the Location.
	echo := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/redirect"):
			http.Redirect(w, r, "http://x:m-url-pw@example.invalid/", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/stall"):
			r.ParseForm()
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"auth was %s"}`, strings.ReplaceAll(r.Header.Get("Authorization"), `"`, ""))
		}
	})
	closed := fakeProm(t, func(http.ResponseWriter, *http.Request) {})
	closed.Close()
	hostPort := func(u string) string { return strings.TrimPrefix(u, "http://") }

	p := newProvider(t, prometheus.Options{
		Datasources: []prometheus.Datasource{
			{Name: "echo", URL: "http://u:ds-url-pw@" + hostPort(echo.URL)},
			{Name: "bearer", URL: echo.URL + "/bearer", HTTP: bearerFile(tokenFile)},
			{Name: "redirect", URL: echo.URL + "/redirect"},
			{Name: "stall", URL: echo.URL + "/stall", HTTP: bearerFile(tokenFile)},
			{Name: "closed", URL: "http://u:ds-url-pw@" + hostPort(closed.URL)},
		},
		TokenURLs:  []string{idp.URL + "/"},
		MaxTimeout: 300 * time.Millisecond,
	})
	auths := []prometheus.Metric{
		{},
		{Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "m", Password: "m-basic-pw"}}},
		{Headers: []prometheus.Header{{Key: "Authorization", Value: "Bearer m-header-tok"}}},
		{Headers: []prometheus.Header{{Key: "X-Api-Key", Value: "m-header-tok"}}},
		{Authentication: prometheus.Authentication{OAuth2: prometheus.OAuth2{TokenURL: idp.URL + "/token", ClientID: "id", ClientSecret: "client-s3cret"}}},
		{Authentication: prometheus.Authentication{OAuth2: prometheus.OAuth2{TokenURL: idp.URL + "/token", ClientID: "wrong", ClientSecret: "client-s3cret"}}},
	}
	addresses := []string{
		"", "http://m:m-url-pw@" + hostPort(echo.URL), echo.URL + "/bearer", echo.URL + "/redirect", echo.URL + "/stall", closed.URL,
		"http://m:m-url-pw@elsewhere.invalid",
	}
	for _, address := range addresses {
		for i, m := range auths {
			m.Address, m.Query, m.Timeout = address, "up", seconds(1)
			src, _, errs := p.Source(&m)
			var texts []string
			for _, e := range errs {
				texts = append(texts, e.Message)
			}
			if src != nil {
				obs := src.Measure(t.Context(), time.Now())
				texts = append(texts, errText(obs.Err), obs.Display, fmt.Sprint(obs.Metadata))
			}
			for _, text := range texts {
				for _, s := range secrets {
					if strings.Contains(text, s) {
						t.Errorf("address %q, auth %d: %q shows %s", address, i, text, s)
					}
				}
			}
		}
	}
}

// TestOAuth2TokenAnswerBounded sends a token endpoint's answer longer than
// the 1 MiB golang.org/x/oauth2 reads of it: a whole, valid answer of 4 MiB
// whose token would be accepted if it were read to the end. It is read no
// further than the bound, so the answer is cut and refused.
func TestOAuth2TokenAnswerBounded(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"%s","token_type":"Bearer","expires_in":3600}`, strings.Repeat("t", 4<<20))
	}))
	t.Cleanup(idp.Close)
	rec := &recorder{}
	prom := fakeProm(t, rec.handler)
	p := newProvider(t, prometheus.Options{
		Datasources: []prometheus.Datasource{{URL: prom.URL}},
		TokenURLs:   []string{idp.URL + "/token"},
	})
	m := prometheus.Metric{Query: "up", Authentication: prometheus.Authentication{OAuth2: prometheus.OAuth2{
		TokenURL: idp.URL + "/token", ClientID: "id", ClientSecret: "client-s3cret",
	}}}
	src, _, errs := p.Source(&m)
	if errs != nil {
		t.Fatal(errs)
	}
	obs := src.Measure(t.Context(), time.Now())
	if obs.Err == nil || !strings.Contains(errText(obs.Err), "oauth2: cannot fetch token") {
		t.Fatalf("a 4 MiB token answer: err = %v, want the token refused as cut", obs.Err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.headers) != 0 {
		t.Errorf("Prometheus was queried %d times with a token read past the bound", len(rec.headers))
	}
}
