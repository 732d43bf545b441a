package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://hooks.example.com/ci", "https://hooks.example.com/ci"},
		{"https://hooks.example.com/ci?token=hunter2&x=1", "https://hooks.example.com/ci?REDACTED"},
		{"https://hooks.example.com/ci?", "https://hooks.example.com/ci?REDACTED"},
		{"https://u:hunter2@hooks.example.com/ci#frag", "https://hooks.example.com/ci"},
		{"https://hunter2@hooks.example.com/ci?a=hunter2#hunter2", "https://hooks.example.com/ci?REDACTED"},
		{"https://hooks.example.com/%zz?token=hunter2", "(unparseable URL)"},
		{"", ""},
	} {
		if got := URLString(tc.in); got != tc.want {
			t.Errorf("URLString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := URL(nil); got != "" {
		t.Errorf("URL(nil) = %q, want empty", got)
	}
}

func TestUserinfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a plain value", "echo", "echo"},
		{"a URL without credentials", "http://prometheus:9090", "http://prometheus:9090"},
		{"user and password", "http://user:pa55@prometheus:9090/x", "http://*****@prometheus:9090/x"},
		{"a user alone", "https://token@mimir/prometheus", "https://*****@mimir/prometheus"},
		{"an @ in the path is not userinfo", "http://prometheus:9090/a@b", "http://prometheus:9090/a@b"},
		{"an e-mail address is not a URL", "ops@example.com", "ops@example.com"},
		{"a URL inside a longer value", "address http://u:p@h:1 and more", "address http://*****@h:1 and more"},
		{"two URLs", "http://a:b@h1 http://c:d@h2", "http://*****@h1 http://*****@h2"},
		{"upper-case scheme", "HTTP://U:P@H", "HTTP://*****@H"},
	}
	for _, tt := range tests {
		if got := Userinfo(tt.in); got != tt.want {
			t.Errorf("%s: Userinfo(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	u, _ := url.Parse("https://bob:hunter2@api.example.com/v1?token=s3cr3t")
	// An error of http.Client.Do quotes the URL whole, and its cause may
	// quote parts of it.
	err := &url.Error{Op: "Post", URL: u.String(), Err: fmt.Errorf("proxy said no to bob:hunter2 (token=s3cr3t), key abcdefgh")}
	got := Error(fmt.Errorf("attempt: %w", err), u, "abcdefgh")
	for _, secret := range []string{"hunter2", "s3cr3t", "bob", "abcdefgh", "api.example.com"} {
		if strings.Contains(got, secret) {
			t.Errorf("Error = %q, shows %q", got, secret)
		}
	}
	if !strings.Contains(got, "proxy said no to REDACTED") {
		t.Errorf("Error = %q, want the cause kept with the secrets replaced", got)
	}
	if got := Error(errors.New("plain"), nil); got != "plain" {
		t.Errorf("Error(plain) = %q", got)
	}
	if got := Error(nil, u); got != "" {
		t.Errorf("Error(nil) = %q, want empty", got)
	}
}

func TestScrubLongestFirst(t *testing.T) {
	got := Scrub("Bearer xyz123 and xyz123", "xyz123", "", "Bearer xyz123")
	if got != "REDACTED and REDACTED" {
		t.Errorf("Scrub = %q", got)
	}
}

// TestScrubClipped: a message cut short ("…") before it was scrubbed, in
// the middle of a secret, does not keep the secret's start.
func TestScrubClipped(t *testing.T) {
	for msg, want := range map[string]string{
		`status 401: {"headers": "DD-Api-Key: [api-s3cr3t-7f…`:                    `status 401: {"headers": "DD-Api-Key: [REDACTED…`,
		`quoted "api-s3cr3t-7f3a"… then "api-s3c` + "…" + `" and api-s3cr3t-7f3a`: `quoted "REDACTED"… then "REDACTED…" and REDACTED`,
		"nothing of it here…": "nothing of it here…",
		"a…":                  "REDACTED…",
	} {
		if got := Scrub(msg, "api-s3cr3t-7f3a", "app-key"); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", msg, got, want)
		}
	}
}

// TestNames holds the one list of words to what the regular expression
// canaryd matched argument names with before it: the same names are
// secrets, in any case.
func TestNames(t *testing.T) {
	old := regexp.MustCompile(`(?i)(token|secret|password|passwd|apikey|api-key|api_key|credential|auth)`)
	for _, name := range []string{
		"api-token", "DB_PASSWORD", "passwd", "apiKey", "API_KEY", "api-key", "credentials", "Authorization",
		"  secret ", "to\u212aen", "address", "namespace", "monkey", "cookie", "session", "X-Api-Key", "",
	} {
		if got, want := IsSecretName(name), old.MatchString(strings.TrimSpace(name)); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]bool{
		"Authorization": true, "X-Api-Key": true, "Cookie": true, "X-Session-Id": true, "X-Auth-Token": true,
		"Proxy-Authorization": true, "x-scope-orgid": false, "Accept": false, "Content-Type": false, "X-Monkey": true,
		"X-Credential": true, "X-Passwd": true, "X-AUTH-TOKEN": true, "X-Client-Secret": true, "x-password": true,
		"User-Agent": false, "Accept-Encoding": false, "": false, "Ke": false,
	} {
		if got := IsCredentialHeader(name); got != want {
			t.Errorf("IsCredentialHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIsCredentialHeaderDoesNotAllocate(t *testing.T) {
	h := http.CanonicalHeaderKey("x-scope-orgid")
	if n := testing.AllocsPerRun(100, func() { IsCredentialHeader(h) }); n != 0 {
		t.Errorf("IsCredentialHeader allocates %v times, want none", n)
	}
}

// TestPlainHeadersHoldNoWord checks that the headers IsCredentialHeader
// answers without a search are those the search would answer the same
// way, so that the shortcut never lets a credential's header through.
func TestPlainHeadersHoldNoWord(t *testing.T) {
	for _, name := range plainHeaders {
		if holdsAny(name, secretWords) || holdsAny(name, credentialWords) {
			t.Errorf("%q holds a credential's word: it cannot be a plain header", name)
		}
		if name != http.CanonicalHeaderKey(name) {
			t.Errorf("%q is not as net/http spells it (%q): the shortcut would miss it", name, http.CanonicalHeaderKey(name))
		}
	}
}
