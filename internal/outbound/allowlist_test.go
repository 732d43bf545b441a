package outbound

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
)

// TestRefusal holds the allow list to its rules: hosts compared whole in
// one spelling, ports explicit, paths segment by segment, and every path a
// server could read otherwise refused; the reason never quotes the URL.
func TestRefusal(t *testing.T) {
	a, err := ParseAllowList([]string{
		"https://hooks.example.com/ci",
		"http://127.0.0.1:8080",
		"https://deploy.example.org/hooks/",
		"http://[::1]:9000/x",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		allowed   bool
		reason    string // a part of the reason when refused
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
		reason := "not a valid URL"
		if u, err := url.Parse(tc.url); err == nil {
			reason = a.Refusal(u)
		}
		if got := reason == ""; got != tc.allowed {
			t.Errorf("%s: Refusal(%q) = %q, want allowed %v", tc.name, tc.url, reason, tc.allowed)
			continue
		}
		if !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: Refusal(%q) = %q, want it to say %q", tc.name, tc.url, reason, tc.reason)
		}
		if strings.Contains(reason, "hunter2") || (tc.url != "" && strings.Contains(reason, tc.url)) {
			t.Errorf("%s: Refusal(%q) = %q quotes the URL", tc.name, tc.url, reason)
		}
	}
	if r := (AllowList{}).Refusal(&url.URL{Scheme: "https", Host: "hooks.example.com"}); r != ReasonNotAllowed {
		t.Errorf("the empty list: Refusal = %q, want %q", r, ReasonNotAllowed)
	}
}

func TestParseAllowList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		allow  []string
		want   string
		wantOK bool
	}{
		{"not a URL", []string{"hooks.example.com"}, "not an http", false},
		{"credentials", []string{"https://u:p@hooks.example.com"}, "credentials", false},
		{"query", []string{"https://hooks.example.com/?a=b"}, "query", false},
		{"fragment", []string{"https://hooks.example.com/#a"}, "fragment", false},
		{"ftp", []string{"ftp://hooks.example.com"}, "not an http", false},
		{"every bad prefix named", []string{"ftp://a", "https://ok", "gopher://b"}, "gopher://b", false},
		{"a path parameter", []string{"https://hooks.example.com/ci;x/"}, `";"`, false},
		{"an encoded slash", []string{"https://hooks.example.com/ci%2fx"}, `encoded "." or "/"`, false},
		{"unparseable", []string{"https://hooks.example.com/%zz"}, "is not a URL", false},
		{"good", []string{"https://hooks.example.com/ci/", "http://[::1]:9000"}, "", true},
		{"none", nil, "", true},
	} {
		a, err := ParseAllowList(tc.allow)
		if tc.wantOK {
			if err != nil || a.Empty() != (len(tc.allow) == 0) {
				t.Errorf("%s: ParseAllowList = %v, %v; want %d prefixes", tc.name, a, err, len(tc.allow))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseAllowList = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestHosts(t *testing.T) {
	for _, tc := range []struct{ in, request, hostPort, origin string }{
		{"http://127.0.0.1.:8080/x", "127.0.0.1:8080", "127.0.0.1:8080", "http://127.0.0.1.:8080"},
		{"HTTPS://Hooks.Example.COM./ci", "hooks.example.com", "hooks.example.com:443", "https://hooks.example.com."},
		{"http://[0:0::1]/x", "[::1]", "[::1]:80", "http://[0:0::1]"},
		{"https://example.com:443/", "example.com:443", "example.com:443", "https://example.com"},
		{"http://example.com:8080/", "example.com:8080", "example.com:8080", "http://example.com:8080"},
	} {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := RequestHost(u); got != tc.request {
			t.Errorf("RequestHost(%s) = %q, want %q", tc.in, got, tc.request)
		}
		if got := HostPort(u); got != tc.hostPort {
			t.Errorf("HostPort(%s) = %q, want %q", tc.in, got, tc.hostPort)
		}
		if got := Origin(u); got != tc.origin {
			t.Errorf("Origin(%s) = %q, want %q", tc.in, got, tc.origin)
		}
	}
	for _, h := range []string{"", ".", "fe80::1%eth0"} {
		if got, ok := NormalHost(h); ok {
			t.Errorf("NormalHost(%q) = %q, want none", h, got)
		}
	}
}

// TestDial: the allow list's dialler dials a host in its one spelling,
// and refuses, before dialling, a host or port that no prefix names.
func TestDial(t *testing.T) {
	a, err := ParseAllowList([]string{"http://localhost:8080/api", "https://127.0.0.1/"})
	if err != nil {
		t.Fatal(err)
	}
	var dialled []string
	errDialled := errors.New("dialled")
	dial := a.Dial(func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		return nil, errDialled
	})
	for _, tc := range []struct{ addr, want string }{
		{"LOCALHOST.:8080", "localhost:8080"},
		{"127.0.0.1.:443", "127.0.0.1:443"},
		{"localhost:8081", ""},
		{"127.0.0.2:443", ""},
		{"169.254.169.254:80", ""},
		{"[fe80::1%eth0]:8080", ""},
		{"no-port", ""},
	} {
		dialled = nil
		_, err := dial(context.Background(), "tcp", tc.addr)
		if tc.want == "" {
			if err == nil || errors.Is(err, errDialled) || len(dialled) != 0 {
				t.Errorf("dial %s: %v, dialled %q; want refused before dialling", tc.addr, err, dialled)
			}
			continue
		}
		if !errors.Is(err, errDialled) || len(dialled) != 1 || dialled[0] != tc.want {
			t.Errorf("dial %s: %v, dialled %q; want %q", tc.addr, err, dialled, tc.want)
		}
	}
}
