package outbound

import (
	"crypto/tls"
	"fmt"
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

// RoundTrip sends req as an http.Client with NoRedirects over rt would,
// and answers as it does, without what the client spends on every
// request for the redirects it might follow (a copy of the request's
// headers and URL, and their closures): an error is the client's
// *url.Error, naming the method and the URL, its password masked. Unlike
// the client, it sends no userinfo of the URL as basic auth: canaryd's
// URLs carry none (the allow-lists refuse them, and a datasource's is its
// basic_auth). A client that follows
// redirects sends through RoundTrip and hands an answer it would follow
// to its http.Client (see Send).
func RoundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: stripPassword(req.URL), Err: err}
	}
	if resp == nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: stripPassword(req.URL),
			Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)}
	}
	return resp, nil
}

// stripPassword is u as http.Client names it in an error: its password,
// if it has one, written "***".
func stripPassword(u *url.URL) string {
	if _, ok := u.User.Password(); ok {
		return strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	return u.String()
}

// urlErrorOp is http.Client's Op of an error: "Post" for a POST.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < ' ' || c > '~' {
			return method
		}
	}
	return method[:1] + strings.ToLower(method[1:])
}

// Send sends req as client.Do does, and answers as it does, without
// what Do spends on every request for the redirects it might follow:
// the request goes to the client's transport (RoundTrip), and only an
// answer the client might follow is handed to it, already received
// (Answered), to follow or refuse by its CheckRedirect, as ever, the
// request sent once. A client with a cookie jar or a timeout is left to
// Do.
func Send(client *http.Client, req *http.Request) (*http.Response, error) {
	if client.Jar != nil || client.Timeout != 0 || client.Transport == nil {
		return client.Do(req)
	}
	resp, err := RoundTrip(client.Transport, req)
	if err != nil || !Redirected(resp.StatusCode) {
		return resp, err
	}
	c := *client
	c.Transport = &Answered{Response: resp, Next: client.Transport}
	return c.Do(req)
}

// Redirected reports whether an http.Client may follow an answer of this
// status (it decides, by its Location, the request's method and its
// CheckRedirect).
func Redirected(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// Answered is a round tripper whose first request has been answered
// already, with Response (it was sent for real, by RoundTrip): an
// http.Client over it follows that answer's redirect, or refuses to, as
// it would have, without the request being sent again. Every later
// request, a redirect's, goes to Next.
type Answered struct {
	Response *http.Response
	Next     http.RoundTripper
}

func (a *Answered) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp := a.Response; resp != nil {
		a.Response = nil
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return resp, nil
	}
	return a.Next.RoundTrip(req)
}

// Doer is an http.Client with NoRedirects over a round tripper, for a
// library that takes a client by its Do method (the AWS SDK's
// HTTPClient): it sends with RoundTrip.
type Doer struct{ Transport http.RoundTripper }

// Do sends req with RoundTrip.
func (d Doer) Do(req *http.Request) (*http.Response, error) { return RoundTrip(d.Transport, req) }
