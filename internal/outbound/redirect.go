package outbound

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CheckRedirect is the redirect policy of an http.Client.
type CheckRedirect = func(req *http.Request, via []*http.Request) error

// NoRedirects follows no redirect: the client returns the redirect
// response itself, so that a server cannot send canaryd anywhere its
// configuration did not.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Redirects is a bounded redirect policy: it follows at most max
// redirects, each only to a URL that allowed passes (it returns "" for a
// URL it allows, else why not). tooMany and refused make the errors of
// the redirects it does not follow, in the words of the client; the
// target is given to refused to name, never whole (see redact.URL).
func Redirects(max int, allowed func(*url.URL) string, tooMany func() error, refused func(target *url.URL, reason string) error) CheckRedirect {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return tooMany()
		}
		if reason := allowed(req.URL); reason != "" {
			return refused(req.URL, reason)
		}
		return nil
	}
}

// SameOrigin allows a URL with origin's scheme, host and port (see
// Origin), for Redirects: a redirect elsewhere would take a datasource's
// credentials, or at least the caller's query, to a server the
// configuration does not name.
func SameOrigin(origin string) func(*url.URL) string {
	return func(u *url.URL) string {
		if o := Origin(u); o != origin {
			return "it leaves " + origin + " for " + o
		}
		return ""
	}
}

// Origin is u's scheme://host[:port]: lower case, the scheme's default
// port left out, an IPv6 address bracketed. Two URLs with the same origin
// reach the same server.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}

// Redirects is the redirect policy of a client whose requests stay within
// the list: at most max redirects, each to a URL the list allows, whose
// host the request then names as the list compared it (RequestHost).
func (a AllowList) Redirects(max int, tooMany func() error, refused func(target *url.URL, reason string) error) CheckRedirect {
	check := Redirects(max, a.Refusal, tooMany, refused)
	return func(req *http.Request, via []*http.Request) error {
		if err := check(req, via); err != nil {
			return err
		}
		req.URL.Host = RequestHost(req.URL)
		return nil
	}
}
