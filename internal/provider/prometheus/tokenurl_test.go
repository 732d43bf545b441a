package prometheus_test

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestTokenURLPathSpellings tries, against an allowed prefix, the path
// spellings that token endpoints resolve outside it although the decoded
// path has no dot segment (Java's "..;", Windows' "\", double encoding),
// and the encodings of allowed URLs that must still be allowed.
func TestTokenURLPathSpellings(t *testing.T) {
	p := newProvider(t, prometheus.Options{
		Datasources: []prometheus.Datasource{{URL: "http://prometheus:9090"}},
		TokenURLs:   []string{"https://idp.example.com/allowed/", "https://idp.example.com/oauth/token"},
	})
	for _, tc := range []struct {
		name, tokenURL string
		want           string // part of the error; "" when allowed
	}{
		{"exact", "https://idp.example.com/oauth/token", ""},
		{"under the prefix", "https://idp.example.com/allowed/realms/prod/token", ""},
		{"decoded before it is compared", "https://idp.example.com/oauth/%74oken", ""},
		{"encoded letters under the prefix", "https://idp.example.com/%61llowed/token", ""},

		{"Java path parameter", "https://idp.example.com/allowed/..;/admin", `";"`},
		{"path parameter on the last segment", "https://idp.example.com/oauth/token;x=1", `";"`},
		{"encoded path parameter", "https://idp.example.com/allowed/..%3B/admin", `";"`},
		{"encoded backslash", "https://idp.example.com/allowed/..%5C/admin", "%5c"},
		{"encoded backslash, twice", "https://idp.example.com/allowed/..%5c..%5cadmin", "%5c"},
		{"double-encoded dots", "https://idp.example.com/allowed/%252e%252e/admin", `encoded "%"`},
		{"encoded dots", "https://idp.example.com/allowed/%2e%2e/admin", `encoded "."`},
		{"encoded dots, upper case", "https://idp.example.com/allowed/%2E%2E/admin", `encoded "."`},
		{"encoded slash", "https://idp.example.com/allowed%2f..%2fadmin", `encoded "." or "/"`},
		{"dot-dot", "https://idp.example.com/allowed/../admin", `".."`},
		{"overlong dot", "https://idp.example.com/allowed/%c0%ae%c0%ae/admin", "not UTF-8"},
		{"outside the prefix", "https://idp.example.com/admin", "is not an allowed OAuth2 token endpoint"},
	} {
		m := prometheus.Metric{Query: "up", Authentication: prometheus.Authentication{OAuth2: prometheus.OAuth2{
			TokenURL: tc.tokenURL, ClientID: "id", ClientSecret: "s3cr3t"}}}
		_, _, errs := p.Source(&m)
		if tc.want == "" {
			if len(errs) != 0 {
				t.Errorf("%s: %s refused: %v", tc.name, tc.tokenURL, errs)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Field != "provider.prometheus.authentication.oauth2.tokenUrl" || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("%s: %s: errors %+v, want one on the tokenUrl saying %q", tc.name, tc.tokenURL, errs, tc.want)
		}
	}
}

// TestTokenURLAllowRejectsAmbiguousPaths: an allowed token URL is held to
// the same rules when canaryd starts.
func TestTokenURLAllowRejectsAmbiguousPaths(t *testing.T) {
	for _, raw := range []string{"https://idp/oauth;x/", "https://idp/oauth%2ftoken", "https://idp/a/../oauth/"} {
		_, err := prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{URL: "http://p:9090"}}, TokenURLs: []string{raw}})
		if got := errText(err); !strings.Contains(got, "prometheus OAuth2 token URLs[0]: its path must not have") {
			t.Errorf("New with token URL %s: %q, want it refused for its path", raw, got)
		}
	}
}
