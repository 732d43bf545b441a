package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
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
		{"prefix with trailing slash allows itself", "https://deploy.example.org/hooks/", true, ""},
		{"prefix with trailing slash allows under it", "https://deploy.example.org/hooks/a", true, ""},
		{"prefix with trailing slash refuses its parent", "https://deploy.example.org/hooks", false, "allowed prefix"},
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

// TestSlashPrefix holds a prefix ending in "/" to the paths under it: not
// its parent (servers often answer "/api" and "/api/" differently), nor a
// sibling, nor any spelling that decodes or resolves to one; a prefix
// without the slash allows the parent too. The root allows every path.
func TestSlashPrefix(t *testing.T) {
	slash, err := ParseAllowList([]string{"http://host/api/"})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := ParseAllowList([]string{"http://host/api"})
	if err != nil {
		t.Fatal(err)
	}
	root, err := ParseAllowList([]string{"http://host/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url       string
		slash, bare     bool   // allowed by http://host/api/, by http://host/api
		reasonIfRefused string // a part of the slash prefix's refusal
	}{
		{"the parent", "http://host/api", false, true, ReasonNotAllowed},
		{"the parent with a query", "http://host/api?x=/", false, true, ReasonNotAllowed},
		{"the parent with a fragment", "http://host/api#/", false, true, ReasonNotAllowed},
		{"the parent, host spelt otherwise", "http://HOST./api", false, true, ReasonNotAllowed},
		{"the parent, default port explicit", "http://host:80/api", false, true, ReasonNotAllowed},
		{"the parent, a letter encoded", "http://host/ap%69", false, true, ReasonNotAllowed},
		{"the prefix itself", "http://host/api/", true, true, ""},
		{"the prefix itself, a letter encoded", "http://host/ap%69/", true, true, ""},
		{"the prefix itself with a query", "http://host/api/?x=1", true, true, ""},
		{"a child", "http://host/api/v1", true, true, ""},
		{"a grandchild", "http://host/api/v1/query/", true, true, ""},
		{"an empty segment under it", "http://host/api//", true, true, ""},
		{"the grandparent", "http://host/", false, false, ReasonNotAllowed},
		{"no path", "http://host", false, false, ReasonNotAllowed},
		{"a sibling", "http://host/apix", false, false, ReasonNotAllowed},
		{"a sibling with a slash", "http://host/apix/", false, false, ReasonNotAllowed},
		{"a sibling, case", "http://host/API/", false, false, ReasonNotAllowed},
		{"an empty segment before it", "http://host//api/", false, false, ReasonNotAllowed},
		{"a space after it", "http://host/api%20/", false, false, ReasonNotAllowed},
		{"a dot segment for the slash", "http://host/api/.", false, false, `"."`},
		{"dot-dot back to the parent", "http://host/api/x/..", false, false, `".."`},
		{"dot-dot to the parent, slash kept", "http://host/api/../api/", false, false, `".."`},
		{"dot-dot out", "http://host/api/../admin", false, false, `".."`},
		{"an encoded slash for the slash", "http://host/api%2f", false, false, `encoded "." or "/"`},
		{"an encoded slash, upper case", "http://host/api%2F", false, false, `encoded "." or "/"`},
		{"an encoded dot segment", "http://host/api/%2e", false, false, `encoded "."`},
		{"encoded dot-dot", "http://host/api/%2e%2e/", false, false, `encoded "."`},
		{"a double-encoded slash", "http://host/api%252f", false, false, `encoded "%"`},
		{"a backslash for the slash", "http://host/api%5c", false, false, `%5c`},
		{"a path parameter for the slash", "http://host/api;/", false, false, `";"`},
		{"an encoded path parameter", "http://host/api%3b/", false, false, `";"`},
		{"an overlong slash", "http://host/api%c0%af", false, false, "not UTF-8"},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reason := slash.Refusal(u)
		if got := reason == ""; got != tc.slash {
			t.Errorf("%s: http://host/api/ on %q: %q, want allowed %v", tc.name, tc.url, reason, tc.slash)
		} else if !strings.Contains(reason, tc.reasonIfRefused) {
			t.Errorf("%s: http://host/api/ on %q: %q, want it to say %q", tc.name, tc.url, reason, tc.reasonIfRefused)
		}
		if r := bare.Refusal(u); (r == "") != tc.bare {
			t.Errorf("%s: http://host/api on %q: %q, want allowed %v", tc.name, tc.url, r, tc.bare)
		}
		if r := root.Refusal(u); (r == "") != (PathProblem(u) == "") {
			t.Errorf("%s: http://host/ on %q: %q, want allowed unless its path has a problem", tc.name, tc.url, r)
		}
	}
	// A redirect is held to the same rule.
	check := slash.Redirects(5, func() error { return errors.New("too many") },
		func(*url.URL, string) error { return errors.New("refused") })
	for target, allowed := range map[string]bool{"http://host/api": false, "http://host/api/": true, "http://host/api/x": true} {
		u, _ := url.Parse(target)
		if err := check(&http.Request{URL: u}, nil); (err == nil) != allowed {
			t.Errorf("a redirect to %s: %v, want allowed %v", target, err, allowed)
		}
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

// TestAnyHTTP: the command line's list allows every absolute http or
// https URL a prefix could allow, and dials any host; it refuses what no
// prefix could allow (another scheme, credentials, a path servers read
// otherwise).
func TestAnyHTTP(t *testing.T) {
	a := AnyHTTP()
	if a.Empty() || !a.Any() {
		t.Fatal("AnyHTTP is empty")
	}
	for raw, want := range map[string]string{
		"http://anywhere.example.com/x":      "",
		"https://10.0.0.1:8443/render":       "",
		"ftp://anywhere.example.com":         "it is not an http or https URL",
		"http://u:p@anywhere.example.com":    ReasonCredentials,
		"http://anywhere.example.com/a/../b": `its path has "." or ".." segments`,
	} {
		u, _ := url.Parse(raw)
		if got := a.Refusal(u); got != want {
			t.Errorf("Refusal(%s) = %q, want %q", raw, got, want)
		}
	}
	var dialled string
	dial := a.Dial(func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = addr
		return nil, errors.New("not dialling in a test")
	})
	_, _ = dial(context.Background(), "tcp", "Anywhere.Example.com.:80")
	if dialled != "anywhere.example.com:80" {
		t.Errorf("dialled %q", dialled)
	}
}
