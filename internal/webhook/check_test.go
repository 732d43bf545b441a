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

// TestCheck: Check refuses what the allow list refuses (the rules
// themselves are outbound's, tested there) as an ErrRefused, in the
// words of --webhook-allow, never quoting the URL.
func TestCheck(t *testing.T) {
	s, err := New(Options{Allow: []string{"https://hooks.example.com/ci"}})
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
		{"query allowed", "https://hooks.example.com/ci?token=abc", true, ""},
		{"host suffix trick", "https://hooks.example.com.evil.com/ci", false, "allowed prefix (--webhook-allow)"},
		{"userinfo trick", "https://hooks.example.com@evil.com/ci", false, "credentials"},
		{"credentials", "https://user:hunter2@hooks.example.com/ci", false, "--webhook-secret-file"},
		{"metadata address", "http://169.254.169.254/latest/meta-data/", false, "allowed prefix"},
		{"dot-dot escape", "https://hooks.example.com/ci/../admin", false, `".."`},
		{"bad escape", "https://hooks.example.com/ci/%zz", false, "not a valid URL"},
		{"empty", "", false, "not an http"},
	} {
		checkCase(t, s, tc.name, tc.url, tc.allowed, tc.reason)
		err := s.Check(tc.url)
		if err != nil && (strings.Contains(err.Error(), "hunter2") || (tc.url != "" && strings.Contains(err.Error(), tc.url))) {
			t.Errorf("%s: Check(%q) = %q quotes the URL", tc.name, tc.url, err)
		}
	}
}

// TestCheckSlashPrefix: a --webhook-allow prefix ending in "/" allows only
// the paths under it, not its parent, whose receiver may be another.
func TestCheckSlashPrefix(t *testing.T) {
	s, err := New(Options{Allow: []string{"https://hooks.example.com/ci/"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		allowed   bool
		reason    string // a part of the error's text when refused
	}{
		{"the parent", "https://hooks.example.com/ci", false, "allowed prefix (--webhook-allow)"},
		{"the parent with a query", "https://hooks.example.com/ci?to=/", false, "allowed prefix (--webhook-allow)"},
		{"the parent, a letter encoded", "https://hooks.example.com/c%69", false, "allowed prefix (--webhook-allow)"},
		{"the prefix itself", "https://hooks.example.com/ci/", true, ""},
		{"a child", "https://hooks.example.com/ci/deploys", true, ""},
		{"a sibling", "https://hooks.example.com/cix", false, "allowed prefix (--webhook-allow)"},
		{"the grandparent", "https://hooks.example.com/", false, "allowed prefix (--webhook-allow)"},
		{"dot-dot back to the parent", "https://hooks.example.com/ci/x/..", false, `".."`},
		{"a dot segment for the slash", "https://hooks.example.com/ci/.", false, `"."`},
		{"an encoded slash for the slash", "https://hooks.example.com/ci%2F", false, `encoded "." or "/"`},
		{"a double-encoded slash", "https://hooks.example.com/ci%252F", false, `encoded "%"`},
		{"a backslash for the slash", "https://hooks.example.com/ci%5C", false, `%5c`},
	} {
		checkCase(t, s, tc.name, tc.url, tc.allowed, tc.reason)
	}
}

// checkCase wants s.Check(url) to allow url, or to refuse it with an
// ErrRefused whose text holds reason.
func checkCase(t *testing.T, s *Sender, name, url string, allowed bool, reason string) {
	t.Helper()
	err := s.Check(url)
	if got := err == nil; got != allowed {
		t.Errorf("%s: Check(%q) = %v, want allowed %v", name, url, err, allowed)
		return
	}
	if err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), reason)) {
		t.Errorf("%s: Check(%q) = %q, want an ErrRefused saying %q", name, url, err, reason)
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
		// The rules of prefixes are outbound's, tested there.
		{"allow not a URL", Options{Allow: []string{"hooks.example.com"}}, "webhook: allow prefix"},
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
