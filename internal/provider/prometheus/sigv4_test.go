package prometheus_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

const (
	testAccessKey = "AKIDEXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testRegion    = "eu-west-1"
)

var sigv4Header = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// verifySigV4 checks r's signature as AWS does, with the one key it
// knows: it returns "" when r is signed by testAccessKey for testRegion
// and the aps service (Amazon Managed Service for Prometheus), else what
// is wrong.
func verifySigV4(r *http.Request, body []byte) string {
	m := sigv4Header.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return fmt.Sprintf("Authorization %q is not an AWS4-HMAC-SHA256 signature", r.Header.Get("Authorization"))
	}
	key, day, region, service, signed, signature := m[1], m[2], m[3], m[4], m[5], m[6]
	if key != testAccessKey || region != testRegion || service != "aps" {
		return fmt.Sprintf("signed by %s for %s/%s, want %s for %s/aps", key, region, service, testAccessKey, testRegion)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, day) {
		return fmt.Sprintf("X-Amz-Date %q is not of the credential's day %s", amzDate, day)
	}
	var canonical strings.Builder
	fmt.Fprintf(&canonical, "%s\n%s\n%s\n", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
	names := strings.Split(signed, ";")
	if !sort.StringsAreSorted(names) {
		return "signed headers not sorted: " + signed
	}
	for _, name := range names {
		values, sent := r.Header[http.CanonicalHeaderKey(name)]
		value := strings.Join(values, ",")
		switch name {
		case "host":
			value, sent = r.Host, true
		case "content-length":
			value, sent = strconv.FormatInt(r.ContentLength, 10), r.ContentLength >= 0
		}
		if !sent {
			return "signed header " + name + " was not sent"
		}
		fmt.Fprintf(&canonical, "%s:%s\n", name, strings.TrimSpace(value))
	}
	sum := sha256.Sum256(body)
	fmt.Fprintf(&canonical, "\n%s\n%s", signed, hex.EncodeToString(sum[:]))
	request := sha256.Sum256([]byte(canonical.String()))
	scope := day + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(request[:])
	mac := func(key []byte, data string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(data))
		return h.Sum(nil)
	}
	k := mac([]byte("AWS4"+testSecretKey), day)
	k = mac(k, region)
	k = mac(k, service)
	k = mac(k, "aws4_request")
	if want := hex.EncodeToString(mac(k, toSign)); want != signature {
		return "the signature does not verify (signed headers " + signed + ")"
	}
	return ""
}

// TestSigV4 signs queries with the datasource's static keys, as Amazon
// Managed Service for Prometheus checks them, and holds a metric's
// authentication.sigv4 to the datasource's configuration.
func TestSigV4(t *testing.T) {
	var mu sync.Mutex
	var problems []string
	var signedHeaders []string
	srv := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if p := verifySigV4(r, body); p != "" {
			problems = append(problems, p)
		}
		signedHeaders = append(signedHeaders, sigv4Header.FindStringSubmatch(r.Header.Get("Authorization"))[5])
		mu.Unlock()
		if r.Form.Get("query") == "fail" || strings.Contains(string(body), "query=fail") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"auth was %s"}`, strings.ReplaceAll(r.Header.Get("Authorization"), `"`, ""))
			return
		}
		answer(w, "scalar", `[1,"3"]`)
	})
	amp := srv.URL + "/workspaces/ws-1"
	p := newProvider(t, prometheus.Options{Datasources: []prometheus.Datasource{
		{Name: "plain", URL: srv.URL + "/plain"},
		{
			Name: "amp", URL: amp, Headers: map[string]string{"X-Scope-OrgID": "tenant"},
			SigV4: &sigv4.SigV4Config{Region: testRegion, AccessKey: testAccessKey, SecretKey: config.Secret(testSecretKey)},
		},
	}})

	argo := prometheus.Authentication{Sigv4: prometheus.SigV4{Region: "us-east-1", RoleARN: "arn:aws:iam::123:role/from-template"}}
	for _, m := range []prometheus.Metric{
		{Address: amp, Query: "up"},
		{Address: amp, Query: "up", Authentication: argo},
		{Address: amp, Query: "up", RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("5m")`, End: "now()", Step: "1m"}},
	} {
		obs := measure(t, p, m, time.Now())
		if obs.Err != nil || obs.Display != "3" {
			t.Errorf("%+v: (%q, %v), want 3", m, obs.Display, obs.Err)
		}
	}
	mu.Lock()
	if len(problems) > 0 || len(signedHeaders) != 3 {
		t.Errorf("%d signed queries, problems: %q", len(signedHeaders), problems)
	}
	for _, h := range signedHeaders {
		if !strings.Contains(h, "x-scope-orgid") || !strings.Contains(h, "host") || !strings.Contains(h, "x-amz-date") {
			t.Errorf("signed headers %s: want host, x-amz-date and the datasource's x-scope-orgid among them", h)
		}
	}
	mu.Unlock()

	// The secret key never shows, even when the server echoes the
	// request's Authorization header.
	obs := measure(t, p, prometheus.Metric{Address: amp, Query: "fail"}, time.Now())
	if obs.Err == nil || strings.Contains(obs.Err.Error(), testSecretKey) || strings.Contains(obs.Err.Error(), "Signature=") {
		t.Errorf("an echoing server's error: %v", obs.Err)
	}

	fe := func(field, msg string) api.FieldError {
		return api.FieldError{Field: "provider.prometheus." + field, Message: msg}
	}
	const signs = `datasource "amp" signs its queries with SigV4, which replaces any other credentials; remove `
	for _, tc := range []struct {
		name string
		m    prometheus.Metric
		want []api.FieldError
	}{
		{
			name: "sigv4 towards a datasource without it",
			m:    prometheus.Metric{Address: srv.URL + "/plain", Authentication: argo},
			want: []api.FieldError{fe("authentication.sigv4", `datasource "plain" does not sign its queries with SigV4; canaryd takes AWS credentials from its configuration, never from a template: give the datasource a sigv4 block (region, and access_key and secret_key, profile or role_arn) in the prometheus datasources of canaryd's configuration file`)},
		},
		{
			name: "an Authorization header would replace the signature",
			m:    prometheus.Metric{Address: amp, Headers: []prometheus.Header{{Key: "authorization", Value: "Bearer x"}}},
			want: []api.FieldError{fe("headers[0].key", signs+"the Authorization header")},
		},
		{
			name: "basic auth",
			m:    prometheus.Metric{Address: amp, Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "u", Password: "p"}}},
			want: []api.FieldError{fe("authentication.basicAuth", signs+"basicAuth")},
		},
	} {
		tc.m.Query = "up"
		src, _, errs := p.Source(&tc.m)
		if src != nil || fmt.Sprint(errs) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, errs, tc.want)
		}
	}
}
