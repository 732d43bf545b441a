package prometheus_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

func TestSourceValidation(t *testing.T) {
	p := newProvider(t, prometheus.Options{
		Datasources: []prometheus.Datasource{
			{URL: "http://prometheus:9090"},
			{Name: "mimir", URL: "https://Mimir.example.com/prometheus/"},
		},
		TokenURLs: []string{"https://idp.example.com/token", "https://kc.example.com/realms/"},
	})
	const q = "up"
	oauth := func(o prometheus.OAuth2) prometheus.Authentication { return prometheus.Authentication{OAuth2: o} }
	fe := func(field, msg string) api.FieldError {
		return api.FieldError{Field: "provider.prometheus." + field, Message: msg}
	}
	const disallowed = `prometheus address "http://other:9090" is not an allowed Prometheus (allowed: "http://prometheus:9090" (the default), "https://mimir.example.com/prometheus"); to allow it, start canaryd with --prometheus-url http://other:9090 (repeatable) or add it to the Prometheus datasources of its configuration file`

	tests := []struct {
		name string
		m    prometheus.Metric
		want []api.FieldError
	}{
		{name: "default address", m: prometheus.Metric{Query: q}},
		{name: "exact address", m: prometheus.Metric{Query: q, Address: "http://prometheus:9090"}},
		{name: "case, default port and trailing slash do not matter", m: prometheus.Metric{Query: q, Address: "HTTPS://MIMIR.example.com:443/prometheus//"}},
		{name: "userinfo is basic auth, not part of the match", m: prometheus.Metric{Query: q, Address: "http://u:p@prometheus:9090/"}},
		{
			name: "other host", m: prometheus.Metric{Query: q, Address: "http://other:9090"},
			want: []api.FieldError{fe("address", disallowed)},
		},
		{
			name: "credentials in a disallowed address are not echoed",
			m:    prometheus.Metric{Query: q, Address: "http://admin:s3cr3t@other:9090/?token=abc"},
			want: []api.FieldError{fe("address", "prometheus address must not have a query string or fragment")},
		},
		{
			name: "userinfo of a disallowed address is not echoed",
			m:    prometheus.Metric{Query: q, Address: "http://admin:s3cr3t@other:9090"},
			want: []api.FieldError{fe("address", disallowed)},
		},
		{
			name: "other path on an allowed host", m: prometheus.Metric{Query: q, Address: "https://mimir.example.com/"},
			want: []api.FieldError{fe("address", strings.NewReplacer("http://other:9090", "https://mimir.example.com").Replace(disallowed))},
		},
		{
			name: "scheme matters", m: prometheus.Metric{Query: q, Address: "https://prometheus:9090"},
			want: []api.FieldError{fe("address", strings.NewReplacer("http://other:9090", "https://prometheus:9090").Replace(disallowed))},
		},
		{
			name: "not a URL (Argo's text)", m: prometheus.Metric{Query: q, Address: ":invalid::url"},
			want: []api.FieldError{fe("address", "prometheus address is not is url format")},
		},
		{
			name: "no host (Argo's text)", m: prometheus.Metric{Query: q, Address: "prometheus:9090"},
			want: []api.FieldError{fe("address", "prometheus address is not is url format")},
		},
		{
			name: "not http", m: prometheus.Metric{Query: q, Address: "file://prometheus/etc/passwd"},
			want: []api.FieldError{fe("address", "prometheus address must be an http or https URL")},
		},
		{
			name: "no query", m: prometheus.Metric{Query: "  \n"},
			want: []api.FieldError{fe("query", "query is required")},
		},
		{name: "timeout 0 is allowed (Argo: every query fails)", m: prometheus.Metric{Query: q, Timeout: seconds(0)}},
		{
			name: "negative timeout (Argo's text)", m: prometheus.Metric{Query: q, Timeout: seconds(-20)},
			want: []api.FieldError{fe("timeout", "prometheus timeout should not be negative")},
		},
		{
			name: "range query",
			m:    prometheus.Metric{Query: q, RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("5m")`, End: "now()", Step: "1m"}},
		},
		{
			name: "range query that cannot evaluate (Argo's texts)",
			m:    prometheus.Metric{Query: q, RangeQuery: &prometheus.RangeQuery{Start: `now() - duration("??")`, End: `now() - duration("??")`, Step: "??"}},
			want: []api.FieldError{
				fe("rangeQuery.start", `failed to parse rangeQuery.start as time: time: invalid duration "??"`),
				fe("rangeQuery.end", `failed to parse rangeQuery.end as time: time: invalid duration "??"`),
				fe("rangeQuery.step", `failed to parse rangeQuery.step as duration: time: invalid duration "??"`),
			},
		},
		{
			name: "range query that does not compile",
			m:    prometheus.Metric{Query: q, RangeQuery: &prometheus.RangeQuery{Start: `now( -`, End: `"yesterday"`, Step: ""}},
			want: []api.FieldError{
				fe("rangeQuery.start", "failed to parse rangeQuery.start as time: unexpected token EOF"),
				fe("rangeQuery.end", "failed to parse rangeQuery.end as time: expected time.Time, but got string"),
				fe("rangeQuery.step", `failed to parse rangeQuery.step as duration: time: invalid duration ""`),
			},
		},
		{
			name: "range query whose expressions could cost without bound",
			m: prometheus.Metric{Query: q, RangeQuery: &prometheus.RangeQuery{
				Start: `now() - duration(repeat("1", 3) + "h")`, End: `all(1..999999, {# > 0}) ? now() : now()`, Step: "1m"}},
			want: []api.FieldError{
				fe("rangeQuery.start", "failed to parse rangeQuery.start as time: repeat() is not allowed in a time expression; the functions allowed are Argo's (asInt, asFloat, isNaN, isInf, isNil, default) and "+strings.Join(condition.AllowedBuiltins(), ", ")),
				fe("rangeQuery.end", "failed to parse rangeQuery.end as time: the range 1..999999 has 999999 values, more than the 1000 a range in a time expression may have"),
			},
		},
		{
			name: "range query backwards, step not positive",
			m:    prometheus.Metric{Query: q, RangeQuery: &prometheus.RangeQuery{Start: `now()`, End: `now() - duration("1h")`, Step: "-1m"}},
			want: []api.FieldError{
				fe("rangeQuery.end", "rangeQuery.end is before rangeQuery.start"),
				fe("rangeQuery.step", `rangeQuery.step must be a positive duration, got "-1m"`),
			},
		},
		{
			name: "sigv4",
			m:    prometheus.Metric{Query: q, Authentication: prometheus.Authentication{Sigv4: prometheus.SigV4{Region: "eu-west-1"}}},
			want: []api.FieldError{fe("authentication.sigv4", `datasource "http://prometheus:9090" does not sign its queries with SigV4; canaryd takes AWS credentials from its configuration, never from a template: give the datasource a sigv4 block (region, and access_key and secret_key, profile or role_arn) in the prometheus datasources of canaryd's configuration file`)},
		},
		{
			name: "basic auth without password (Argo master's text)",
			m:    prometheus.Metric{Query: q, Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Username: "u"}}},
			want: []api.FieldError{fe("authentication.basicAuth.password", "missing mandatory parameter in metric for basic auth setup: password")},
		},
		{
			name: "basic auth without username (Argo master's text)",
			m:    prometheus.Metric{Query: q, Authentication: prometheus.Authentication{BasicAuth: prometheus.BasicAuth{Password: "p"}}},
			want: []api.FieldError{fe("authentication.basicAuth.username", "missing mandatory parameter in metric for basic auth setup: username")},
		},
		{
			name: "oauth2",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "https://idp.example.com/token", ClientID: "id", ClientSecret: "secret"})},
		},
		{
			name: "oauth2 under an allowed prefix, without scopes",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "https://KC.example.com/realms/prod/protocol/openid-connect/token", ClientID: "id", ClientSecret: "secret"})},
		},
		{
			name: "oauth2 without client id or secret (Argo's text)",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "https://idp.example.com/token", Scopes: []string{"read"}})},
			want: []api.FieldError{
				fe("authentication.oauth2.clientId", "missing mandatory parameter in metric for OAuth2 setup"),
				fe("authentication.oauth2.clientSecret", "missing mandatory parameter in metric for OAuth2 setup"),
			},
		},
		{
			name: "oauth2 without token URL",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{ClientID: "id", ClientSecret: "secret"})},
			want: []api.FieldError{fe("authentication.oauth2.tokenUrl", "missing mandatory parameter in metric for OAuth2 setup: tokenUrl")},
		},
		{
			name: "oauth2 token URL not allowed (SSRF)",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "http://169.254.169.254/latest/meta-data", ClientID: "id", ClientSecret: "secret"})},
			want: []api.FieldError{fe("authentication.oauth2.tokenUrl", `oauth2 tokenUrl "http://169.254.169.254/latest/meta-data" is not an allowed OAuth2 token endpoint; to allow it, start canaryd with --prometheus-oauth2-token-url http://169.254.169.254/latest/meta-data (repeatable) or add it to the OAuth2 token URLs of its configuration file`)},
		},
		{
			name: "oauth2 token URL on the datasource is not allowed either",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "http://prometheus:9090/api/v1/admin/tsdb/delete_series", ClientID: "id", ClientSecret: "secret"})},
			want: []api.FieldError{fe("authentication.oauth2.tokenUrl", `oauth2 tokenUrl "http://prometheus:9090/api/v1/admin/tsdb/delete_series" is not an allowed OAuth2 token endpoint; to allow it, start canaryd with --prometheus-oauth2-token-url http://prometheus:9090/api/v1/admin/tsdb/delete_series (repeatable) or add it to the OAuth2 token URLs of its configuration file`)},
		},
		{
			name: "oauth2 token URL that only shares a prefix with an allowed one",
			m:    prometheus.Metric{Query: q, Authentication: oauth(prometheus.OAuth2{TokenURL: "https://idp.example.com/token-evil", ClientID: "id", ClientSecret: "secret"})},
			want: []api.FieldError{fe("authentication.oauth2.tokenUrl", `oauth2 tokenUrl "https://idp.example.com/token-evil" is not an allowed OAuth2 token endpoint; to allow it, start canaryd with --prometheus-oauth2-token-url https://idp.example.com/token-evil (repeatable) or add it to the OAuth2 token URLs of its configuration file`)},
		},
		{
			name: "bad headers; the value is not echoed",
			m:    prometheus.Metric{Query: q, Headers: []prometheus.Header{{Key: "X-Ok", Value: "fine"}, {Key: "Bad Name", Value: "v"}, {Key: "Authorization", Value: "Bearer abc\r\nX-Injected: 1"}}},
			want: []api.FieldError{
				fe("headers[1].key", `invalid HTTP header name "Bad Name"`),
				fe("headers[2].value", "invalid HTTP header value: it must not contain control characters such as line breaks"),
			},
		},
	}
	for _, tc := range tests {
		src, md, got := p.Source(&tc.m)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: errors\n got %#v\nwant %#v", tc.name, got, tc.want)
			continue
		}
		if tc.want == nil {
			if src == nil || md[prometheus.ResolvedPrometheusQuery] != q {
				t.Errorf("%s: source %v, metadata %v; want a source and ResolvedPrometheusQuery=%q", tc.name, src, md, q)
			}
		} else if src != nil || md != nil {
			t.Errorf("%s: got a source or metadata with errors", tc.name)
		}
		for _, e := range got {
			if strings.Contains(e.Message, "s3cr3t") || strings.Contains(e.Message, "admin:") || strings.Contains(e.Message, "token=abc") {
				t.Errorf("%s: message echoes credentials: %q", tc.name, e.Message)
			}
		}
	}
	if _, _, errs := p.Source(nil); len(errs) != 1 {
		t.Errorf("Source(nil): errors %v, want one", errs)
	}
}

func TestNewRejects(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := func(d prometheus.Datasource) prometheus.Options {
		return prometheus.Options{Datasources: []prometheus.Datasource{d}}
	}
	tests := []struct {
		name string
		opts prometheus.Options
		want string
	}{
		{"no datasource", prometheus.Options{}, "no Prometheus datasource configured"},
		{"not a URL", urls("prometheus:9090"), "prometheus datasources[0]: url: prometheus address is not is url format"},
		{"query string", urls("http://p:9090/?x=1"), "prometheus datasources[0]: url must not have a query string or fragment"},
		{"duplicate URL", urls("http://p:9090", "HTTP://P:9090/"), `prometheus datasources: "http://p:9090" and "http://p:9090" have the same URL http://p:9090`},
		{
			"duplicate name",
			prometheus.Options{Datasources: []prometheus.Datasource{{Name: "a", URL: "http://p:1"}, {Name: "a", URL: "http://p:2"}}},
			`prometheus datasources: duplicate name "a"`,
		},
		{
			"userinfo and basic auth",
			ds(prometheus.Datasource{Name: "x", URL: "http://u:pw0rd@p:9090", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
				c.BasicAuth = &config.BasicAuth{Username: "u", Password: "p"}
			})}),
			`prometheus datasources[0] ("x"): url has userinfo and basic_auth, authorization, oauth2 or sigv4 is configured too; give the credentials once`,
		},
		{
			"basic auth and bearer token",
			ds(prometheus.Datasource{URL: "http://p:9090", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
				c.BearerTokenFile = "/t"
				c.BasicAuth = &config.BasicAuth{Username: "u", Password: "p"}
			})}),
			"prometheus datasources[0]: at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured",
		},
		{
			"password twice",
			ds(prometheus.Datasource{URL: "http://p:9090", HTTP: httpConfig(func(c *config.HTTPClientConfig) {
				c.BasicAuth = &config.BasicAuth{Username: "u", Password: "p", PasswordFile: "/p"}
			})}),
			"prometheus datasources[0]: at most one of basic_auth password, password_file & password_ref must be configured",
		},
		{
			"bad header",
			ds(prometheus.Datasource{URL: "http://p:9090", Headers: map[string]string{"X-Scope-OrgID": "a\nb"}}),
			`prometheus datasources[0]: header "X-Scope-OrgID": invalid HTTP header value`,
		},
		{
			"CA file without certificates",
			ds(prometheus.Datasource{URL: "https://p:9090", HTTP: tlsConfig(config.TLSConfig{CAFile: notPEM})}),
			"prometheus datasources[0]: unable to use specified CA cert file " + notPEM,
		},
		{
			"cert without key",
			ds(prometheus.Datasource{URL: "https://p:9090", HTTP: tlsConfig(config.TLSConfig{CertFile: notPEM})}),
			"prometheus datasources[0]: tls_config: exactly one of key or key_file must be configured when a client certificate is configured",
		},
		{
			"proxy from the environment",
			ds(prometheus.Datasource{URL: "http://p:9090", HTTP: httpConfig(func(c *config.HTTPClientConfig) { c.ProxyFromEnvironment = true })}),
			"prometheus datasources[0]: proxy_from_environment: canaryd never takes a proxy from the environment (HTTP_PROXY and friends); name one with proxy_url",
		},
		{
			"sigv4 and basic auth",
			ds(prometheus.Datasource{URL: "http://p:9090", SigV4: &sigv4.SigV4Config{Region: "eu-west-1", AccessKey: "AKID", SecretKey: "s3cr3t-key"}, HTTP: httpConfig(func(c *config.HTTPClientConfig) {
				c.BasicAuth = &config.BasicAuth{Username: "u", Password: "pw0rd"}
			})}),
			"prometheus datasources[0]: sigv4 signs every query: it cannot be combined with basic_auth, authorization or oauth2",
		},
		{
			"sigv4 access key without secret key",
			ds(prometheus.Datasource{URL: "http://p:9090", SigV4: &sigv4.SigV4Config{Region: "eu-west-1", AccessKey: "AKID"}}),
			"prometheus datasources[0]: sigv4: must provide a AWS SigV4 Access key and Secret Key if credentials are specified in the SigV4 config",
		},
		{
			"token URL with a query",
			prometheus.Options{Datasources: []prometheus.Datasource{{URL: "http://p:9090"}}, TokenURLs: []string{"https://idp/token?x=1"}},
			"prometheus OAuth2 token URLs[0]: must be an http or https URL without userinfo, query or fragment",
		},
		{
			"negative max timeout",
			prometheus.Options{Datasources: []prometheus.Datasource{{URL: "http://p:9090"}}, MaxTimeout: -1},
			"prometheus max timeout must not be negative",
		},
	}
	for _, tc := range tests {
		_, err := prometheus.New(tc.opts)
		if got := errText(err); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
		if strings.Contains(errText(err), "pw0rd") {
			t.Errorf("%s: error echoes a password", tc.name)
		}
	}
}
