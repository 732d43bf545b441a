package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	s, err := New(Options{Allow: []string{
		"https://hooks.example.com/ci",
		"http://127.0.0.1:8080",
		"https://deploy.example.org/hooks/",
		"http://[::1]:9000/x",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		allowed   bool
		reason    string // a part of the error's text when refused
	}{
		{"exact prefix", "https://hooks.example.com/ci", true, ""},
		{"under the prefix", "https://hooks.example.com/ci/deploys/42", true, ""},
		{"trailing slash", "https://hooks.example.com/ci/", true, ""},
		{"query allowed", "https://hooks.example.com/ci?token=abc", true, ""},
		{"host case-insensitive", "https://HOOKS.Example.COM/ci/x", true, ""},
		{"scheme case-insensitive", "HTTPS://hooks.example.com/ci", true, ""},
		{"default port explicit", "https://hooks.example.com:443/ci", true, ""},
		{"fully qualified host", "https://hooks.example.com./ci", true, ""},
		{"whole host allowed", "http://127.0.0.1:8080/anything/at/all", true, ""},
		{"prefix with trailing slash allows its path", "https://deploy.example.org/hooks", true, ""},
		{"prefix with trailing slash allows under it", "https://deploy.example.org/hooks/a", true, ""},
		{"ipv6", "http://[::1]:9000/x/y", true, ""},
		{"ipv6 other spelling", "http://[0:0:0:0:0:0:0:1]:9000/x", true, ""},

		{"host suffix trick", "https://hooks.example.com.evil.com/ci", false, "allowed prefix"},
		{"path prefix not on a segment boundary", "https://hooks.example.com/cievil", false, "allowed prefix"},
		{"parent path", "https://hooks.example.com/", false, "allowed prefix"},
		{"path case differs", "https://hooks.example.com/CI", false, "allowed prefix"},
		{"userinfo trick", "https://hooks.example.com@evil.com/ci", false, "credentials"},
		{"userinfo with allowed host", "https://hooks.example.com:x@hooks.example.com/ci", false, "credentials"},
		{"credentials", "https://user:hunter2@hooks.example.com/ci", false, "credentials"},
		{"scheme mismatch", "http://hooks.example.com/ci", false, "allowed prefix"},
		{"other port", "https://hooks.example.com:8443/ci", false, "allowed prefix"},
		{"default port of the other scheme", "http://127.0.0.1/", false, "allowed prefix"},
		{"not http", "ftp://hooks.example.com/ci", false, "not an http"},
		{"javascript", "javascript:alert(1)", false, "not an http"},
		{"opaque", "https:hooks.example.com/ci", false, "absolute"},
		{"relative", "/ci", false, "not an http"},
		{"scheme-relative", "//hooks.example.com/ci", false, "not an http"},
		{"empty", "", false, "not an http"},
		{"metadata address", "http://169.254.169.254/latest/meta-data/", false, "allowed prefix"},
		{"metadata address, https", "https://169.254.169.254/ci", false, "allowed prefix"},
		{"decimal IP", "http://2130706433:8080/", false, "allowed prefix"},
		{"dot-dot escape", "https://hooks.example.com/ci/../admin", false, `".."`},
		{"encoded dot-dot escape", "https://hooks.example.com/ci/%2e%2e/admin", false, `encoded "."`},
		{"dot segment", "https://hooks.example.com/ci/./x", false, `"."`},
		// Spellings that servers resolve as ".." or "/" although the
		// decoded path has no dot segment.
		{"Java path parameter", "https://hooks.example.com/ci/..;/admin", false, `";"`},
		{"path parameter on a segment", "https://hooks.example.com/ci;x=1/deploy", false, `";"`},
		{"encoded path parameter", "https://hooks.example.com/ci/..%3b/admin", false, `";"`},
		{"encoded backslash", "https://hooks.example.com/ci/..%5C/admin", false, `%5c`},
		{"encoded backslash, lower case", "https://hooks.example.com/ci/..%5c..%5cadmin", false, `%5c`},
		{"double-encoded dots", "https://hooks.example.com/ci/%252e%252e/admin", false, `encoded "%"`},
		{"double-encoded slash", "https://hooks.example.com/ci%252fadmin", false, `encoded "%"`},
		{"encoded dots, upper case", "https://hooks.example.com/ci/%2E%2E/admin", false, `encoded "."`},
		{"one encoded dot", "https://hooks.example.com/ci/.%2e/admin", false, `encoded "."`},
		{"encoded dot in a name", "https://hooks.example.com/ci/a%2ejson", false, `encoded "."`},
		{"encoded slash", "https://hooks.example.com/ci%2f..%2fadmin", false, `encoded "." or "/"`},
		{"encoded slash in a segment", "https://hooks.example.com/ci/a%2Fb", false, `encoded "." or "/"`},
		{"overlong dot", "https://hooks.example.com/ci/%c0%ae%c0%ae/admin", false, "not UTF-8"},
		{"encoded NUL", "https://hooks.example.com/ci/x%00", false, "control characters"},
		{"encoded space is fine", "https://hooks.example.com/ci/a%20b", true, ""},
		{"encoded non-ASCII is fine", "https://hooks.example.com/ci/%C3%A9t%C3%A9", true, ""},
		{"dots inside a name are fine", "https://hooks.example.com/ci/v1.2..3/x.json", true, ""},
		{"empty segments stay under the prefix", "https://hooks.example.com/ci//x", true, ""},
		{"ipv6 zone", "http://[fe80::1%25eth0]:9000/x", false, "zone"},
		{"bad escape", "https://hooks.example.com/ci/%zz", false, "not a valid URL"},
		{"space in host", "https://hooks example.com/ci", false, "not a valid URL"},
		{"no host", "https:///ci", false, "absolute"},
	} {
		err := s.Check(tc.url)
		if got := err == nil; got != tc.allowed {
			t.Errorf("%s: Check(%q) = %v, want allowed %v", tc.name, tc.url, err, tc.allowed)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: Check(%q) = %v, want an ErrRefused", tc.name, tc.url, err)
		}
		if !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: Check(%q) = %q, want it to say %q", tc.name, tc.url, err, tc.reason)
		}
		if strings.Contains(err.Error(), "hunter2") || (tc.url != "" && strings.Contains(err.Error(), tc.url)) {
			t.Errorf("%s: Check(%q) = %q quotes the URL", tc.name, tc.url, err)
		}
	}
}

func TestCheckWithoutAllow(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check("https://hooks.example.com/ci")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--webhook-allow") {
		t.Errorf("Check with no allow list = %v, want a refusal naming --webhook-allow", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"allow not a URL", Options{Allow: []string{"hooks.example.com"}}, "not an http"},
		{"allow with credentials", Options{Allow: []string{"https://u:p@hooks.example.com"}}, "credentials"},
		{"allow with query", Options{Allow: []string{"https://hooks.example.com/?a=b"}}, "query"},
		{"allow ftp", Options{Allow: []string{"ftp://hooks.example.com"}}, "not an http"},
		{"every bad prefix named", Options{Allow: []string{"ftp://a", "https://ok", "gopher://b"}}, "gopher://b"},
		{"allow with a path parameter", Options{Allow: []string{"https://hooks.example.com/ci;x/"}}, `";"`},
		{"allow with an encoded slash", Options{Allow: []string{"https://hooks.example.com/ci%2fx"}}, `encoded "." or "/"`},
		{"negative backlog", Options{MaxBacklog: -1}, "negative"},
		{"negative breaker cool-down", Options{BreakerCooldown: -time.Second}, "negative"},
		{"negative duration", Options{MaxElapsed: -time.Second}, "negative"},
		{"max below initial backoff", Options{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}, "MaxBackoff"},
	} {
		_, err := New(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestParseSecret(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	for _, tc := range []struct {
		name, data string
		want       string // "" when an error is wanted
	}{
		{"raw", "s3cr3t-key", "s3cr3t-key"},
		{"raw with newline", "s3cr3t-key\n", "s3cr3t-key"},
		{"raw with CRLF", "s3cr3t-key\r\n", "s3cr3t-key"},
		{"raw keeps spaces", " s3cr3t key ", " s3cr3t key "},
		{"standard webhooks form", whsec, string(key)},
		{"standard webhooks form with newline", whsec + "\n", string(key)},
		{"whsec not base64", "whsec_!!!not-base64", ""},
		{"empty", "", ""},
		{"only a newline", "\n", ""},
		{"empty whsec", "whsec_", ""},
	} {
		got, err := ParseSecret([]byte(tc.data))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: ParseSecret(%q) = %q, want an error", tc.name, tc.data, got)
		case tc.want != "" && err != nil:
			t.Errorf("%s: ParseSecret(%q): %v", tc.name, tc.data, err)
		case string(got) != tc.want:
			t.Errorf("%s: ParseSecret(%q) = %q, want %q", tc.name, tc.data, got, tc.want)
		}
		if secret := strings.TrimSpace(tc.data); err != nil && secret != "" && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error %q quotes the secret", tc.name, err)
		}
	}
}

func TestReadSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("s3cr3t-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSecretFile(path)
	if err != nil || string(got) != "s3cr3t-key" {
		t.Errorf("ReadSecretFile = %q, %v; want %q", got, err, "s3cr3t-key")
	}
	if _, err := ReadSecretFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadSecretFile of a missing file: no error")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, v string
		want    time.Duration
		ok      bool
	}{
		{"seconds", "1", time.Second, true},
		{"zero", "0", 0, true},
		{"spaces", " 7 ", 7 * time.Second, true},
		{"huge", "99999999999999999999", maxRetryAfter, true},
		{"negative", "-1", 0, false},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"date ahead", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"date passed", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	} {
		got, ok := parseRetryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: parseRetryAfter(%q) = %v, %v; want %v, %v", tc.name, tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	s, err := New(Options{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		retry int
		bound time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 200 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, time.Second},
		{1000, time.Second},
	} {
		for range 100 {
			got := s.backoff(tc.retry)
			if got < tc.bound/2 || got > tc.bound {
				t.Fatalf("retry %d: backoff = %v, want within [%v, %v]", tc.retry, got, tc.bound/2, tc.bound)
			}
		}
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		code int
		want bool
	}{
		{400, false}, {401, false}, {403, false}, {404, false}, {410, false}, {422, false},
		{408, true}, {429, true}, {500, true}, {502, true}, {503, true}, {504, true},
	} {
		if got := retryableStatus(tc.code); got != tc.want {
			t.Errorf("retryableStatus(%d) = %v, want %v", tc.code, got, tc.want)
		}
	}
	if retryable(errors.New("plain")) {
		t.Error("retryable(a plain error) = true, want false")
	}
	if !retryable(&attemptError{retry: true}) {
		t.Error("retryable(a retryable attemptError) = false, want true")
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://hooks.example.com/ci", "https://hooks.example.com/ci"},
		{"https://hooks.example.com/ci?token=hunter2&x=1", "https://hooks.example.com/ci?REDACTED"},
		{"https://u:hunter2@hooks.example.com/ci#frag", "https://hooks.example.com/ci"},
		{"https://hooks.example.com/%zz?token=hunter2", "(unparseable URL)"},
	} {
		if got := redactRaw(tc.in); got != tc.want {
			t.Errorf("redactRaw(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCheck holds Check to its promise on any input: what it allows is an
// http(s) URL without credentials or dot segments on an allowed host, and
// its errors never quote the input.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"https://hooks.example.com/ci/x", "https://hooks.example.com.evil.com/ci",
		"https://hooks.example.com@evil/ci", "http://169.254.169.254/", "https://hooks.example.com/ci/%2e%2e/x",
		"HTTPS://HOOKS.EXAMPLE.COM:443/ci?q=1#f", "https://hooks.example.com/ci/..;/admin", "https://hooks.example.com/ci/..%5C/x",
		"https://hooks.example.com/ci/%252e%252e/x", "https://hooks.example.com/ci%2f..%2fx", "https://hooks.example.com./ci/%c0%ae",
	} {
		f.Add(seed)
	}
	s, err := New(Options{Allow: []string{"https://hooks.example.com/ci"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := s.Check(raw)
		if err != nil {
			if len(raw) > 8 && strings.Contains(err.Error(), raw) {
				t.Fatalf("Check(%q) = %q quotes the URL", raw, err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("Check(%q) allowed a URL that does not parse", raw)
		}
		if u.Scheme != "https" || u.User != nil || !strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), "hooks.example.com") ||
			(u.Port() != "" && u.Port() != "443") {
			t.Fatalf("Check(%q) allowed scheme %q host %q port %q user %v", raw, u.Scheme, u.Hostname(), u.Port(), u.User != nil)
		}
		if u.Path != "/ci" && !strings.HasPrefix(u.Path, "/ci/") {
			t.Fatalf("Check(%q) allowed path %q outside /ci", raw, u.Path)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("Check(%q) allowed a dot segment", raw)
			}
		}
		// Nothing that a receiver could decode or split differently.
		if strings.ContainsAny(u.Path, ";\\%") {
			t.Fatalf("Check(%q) allowed a path with ';', '\\' or an encoded '%%'", raw)
		}
		if low := strings.ToLower(u.EscapedPath()); strings.Contains(low, "%2e") || strings.Contains(low, "%2f") {
			t.Fatalf("Check(%q) allowed an encoded dot or slash", raw)
		}
	})
}
