package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reasons of Refusal that a client may want to complete with advice
// of its own (the flag to change, the way to send a credential instead).
const (
	ReasonCredentials = "it carries credentials (user:password@)"
	ReasonNotAllowed  = "it does not start with any allowed prefix"
)

// AllowList is a list of URL prefixes (--webhook-allow, --web-allow): the
// only URLs canaryd sends a request to that a caller names. A prefix
// allows a URL with the same scheme, host and port whose path segments
// begin with the prefix's, so that "https://hooks.example.com/ci" allows
// "https://hooks.example.com/ci" and ".../ci/deploys" but neither
// "https://hooks.example.com.evil.com" nor "https://hooks.example.com/cievil".
// A prefix whose path ends in "/" allows only paths under it:
// "https://hooks.example.com/ci/" allows ".../ci/" and ".../ci/deploys",
// not ".../ci", which servers often answer otherwise (a listing, a
// redirect, another handler).
// Scheme and host are compared case-insensitively, default ports made
// explicit, hosts in one spelling (NormalHost); paths that receivers could
// read differently (PathProblem) and URLs with credentials are refused. A
// prefix may not have a query, fragment or userinfo. The zero AllowList
// allows nothing.
type AllowList struct {
	prefixes []destination
	// any allows every http or https URL that can be compared at all
	// (AnyHTTP).
	any bool
}

// AnyHTTP is the list that allows every absolute http or https URL that
// a prefix could allow: without credentials, with a path every server
// reads alike (PathProblem). It is the command line's, where the person
// running canaryd names the URLs themselves, and no flag narrows them.
func AnyHTTP() AllowList { return AllowList{any: true} }

// ParseAllowList parses prefixes; each problem names the prefix.
func ParseAllowList(prefixes []string) (AllowList, error) {
	var a AllowList
	var errs []error
	for _, raw := range prefixes {
		p, err := parsePrefix(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.prefixes = append(a.prefixes, p)
	}
	return a, errors.Join(errs...)
}

// Empty reports whether the list allows nothing.
func (a AllowList) Empty() bool { return !a.any && len(a.prefixes) == 0 }

// Any reports whether the list allows every http or https URL (AnyHTTP).
func (a AllowList) Any() bool { return a.any }

// Refusal says why u may not be requested, or "" when a prefix allows it.
// The reason never quotes the URL, which may carry a credential.
func (a AllowList) Refusal(u *url.URL) string {
	d, reason := parseDestination(u)
	if reason != "" || a.any {
		return reason
	}
	for _, p := range a.prefixes {
		if p.allows(d) {
			return ""
		}
	}
	return ReasonNotAllowed
}

// Dial returns a DialContext that dials through dial only a host and port
// that some prefix names, and the host in the spelling the list compares
// (NormalHost), never as a request happened to spell it: "127.0.0.1." is
// not looked up in DNS after 127.0.0.1 was allowed. Whatever slipped past
// the checks of the URL (a redirect policy that forgot one, a request
// built elsewhere) is refused here, before a connection is made.
func (a AllowList) Dial(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		h, ok := NormalHost(host)
		if !ok {
			return nil, errors.New("no host to dial")
		}
		if !a.any && !a.allowsHost(h, port) {
			return nil, fmt.Errorf("not dialling %s: no allowed prefix names that host and port", net.JoinHostPort(h, port))
		}
		return dial(ctx, network, net.JoinHostPort(h, port))
	}
}

// allowsHost reports whether a prefix names host (in its normal spelling)
// and port.
func (a AllowList) allowsHost(host, port string) bool {
	for _, p := range a.prefixes {
		if p.host == host && p.port == port {
			return true
		}
	}
	return false
}

// NormalHost is the one spelling of a host that an AllowList compares, and
// that is dialled: lower case, without a trailing dot, an IP address in
// its canonical form ("127.0.0.1." is 127.0.0.1, "[0:0::1]" is ::1). ok is
// false for an empty host and for an IPv6 address with a zone, which names
// an interface of this machine and no server canaryd should call.
func NormalHost(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "", false
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", false
		}
		return ip.String(), true
	}
	return h, true
}

// RequestHost is u's host:port as requests name it: the host in the
// spelling an AllowList compares (NormalHost), the port as given.
func RequestHost(u *url.URL) string {
	h, ok := NormalHost(u.Hostname())
	if !ok {
		return u.Host // refused by the allow-list before it gets here
	}
	if p := u.Port(); p != "" {
		return net.JoinHostPort(h, p)
	}
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// HostPort is the host and port u's requests go to, as an AllowList
// compares them: the host in its one spelling (NormalHost), the port
// explicit (the scheme's default when u names none). Two URLs with the
// same HostPort reach the same server.
func HostPort(u *url.URL) string {
	h, ok := NormalHost(u.Hostname())
	if !ok {
		h = u.Hostname()
	}
	return net.JoinHostPort(h, port(u))
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"http": "80", "https": "443"}[u.Scheme]
}

// destination is a URL reduced to what the allow list compares: a prefix
// allows a destination with the same scheme, host and port whose path
// segments begin with the prefix's.
type destination struct {
	scheme string
	host   string // NormalHost
	port   string // explicit, or the scheme's default
	// segments of the unescaped path, without the leading slash; a prefix
	// drops its trailing empty segment and sets under instead.
	segments []string
	// under is set on a prefix whose path ends in "/" (but for the root,
	// which allows every path): it allows only paths with more segments
	// than its own, "/ci/" (segments "ci", "") and "/ci/x" but not "/ci".
	under bool
}

// parseDestination normalises u, or says why it can never be requested
// (nor be an allow prefix): the reason is "" when it can.
func parseDestination(u *url.URL) (destination, string) {
	// url.Parse lower-cases the scheme already.
	if u.Scheme != "http" && u.Scheme != "https" {
		return destination{}, "it is not an http or https URL"
	}
	if u.Opaque != "" || u.Host == "" {
		return destination{}, "it is not an absolute http or https URL with a host"
	}
	if u.User != nil {
		return destination{}, ReasonCredentials
	}
	host, ok := NormalHost(u.Hostname())
	if !ok {
		return destination{}, "it has no host, or an IPv6 address with a zone"
	}
	if reason := PathProblem(u); reason != "" {
		return destination{}, "its path has " + reason
	}
	var segments []string
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		segments = strings.Split(p, "/")
	}
	return destination{scheme: u.Scheme, host: host, port: port(u), segments: segments}, ""
}

// PathProblem says what in u's path keeps it from being compared with a
// prefix ("its path has …"), or "" when nothing does. A path is compared
// decoded, segment by segment, and sent as given; so it must mean the same
// to every server whichever way it decodes and normalises it. The rules are
// those of every allow-list canaryd keeps (webhooks, web metrics, OAuth2
// token URLs). Refused, because servers disagree on them:
//
//   - "." and ".." segments, which a receiver resolves, so that
//     "/ci/../admin" leaves the prefix "/ci" it appears to be under;
//   - an encoded dot or slash (%2e, %2f), which some servers decode before
//     resolving dot segments or splitting the path, others after;
//   - an encoded percent sign (%25), which a server that decodes twice
//     turns into another escape ("%252e%252e" into "..");
//   - ";" (raw or %3b), the path parameters of Java servers, which resolve
//     "/ci/..;/admin" as "/admin";
//   - "\" (raw or %5c), which Windows servers and some proxies take for
//     "/", so that "/ci/..\admin" is "/admin";
//   - control characters and bytes that are not UTF-8 once decoded
//     (overlong encodings of "." and "/", such as %c0%ae).
func PathProblem(u *url.URL) string {
	// RawPath is the path as given whenever it differs from the default
	// encoding of Path, which never encodes "." or "/".
	raw := strings.ToLower(u.RawPath)
	if strings.Contains(raw, "%2e") || strings.Contains(raw, "%2f") {
		return `an encoded "." or "/" (%2e, %2f), which servers decode differently`
	}
	p := u.Path
	if strings.Contains(p, "%") {
		return `an encoded "%" (%25), which a server that decodes twice turns into another character`
	}
	if strings.ContainsAny(p, ";\\") {
		return `";" or "\" (or %3b, %5c), which some servers take for a path parameter or a "/"`
	}
	if !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl) {
		return "control characters, or bytes that are not UTF-8 once decoded"
	}
	for s := range strings.SplitSeq(p, "/") {
		if s == "." || s == ".." {
			return `"." or ".." segments`
		}
	}
	return ""
}

// parsePrefix parses one allow prefix.
func parsePrefix(raw string) (destination, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; an allow prefix is configuration, not a
		// secret, but it is the operator's own text, so say where it failed.
		return destination{}, fmt.Errorf("allow prefix %q is not a URL", raw)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return destination{}, fmt.Errorf("allow prefix %q has a query or fragment; a prefix is a scheme, host and path", raw)
	}
	d, reason := parseDestination(u)
	if reason != "" {
		return destination{}, fmt.Errorf("allow prefix %q: %s", raw, reason)
	}
	if n := len(d.segments); n > 0 && d.segments[n-1] == "" {
		d.segments, d.under = d.segments[:n-1], true
	}
	return d, nil
}

// allows reports whether the prefix p allows the destination d. Paths are
// compared segment by segment, so "/ci" allows "/ci" and "/ci/x" but not
// "/cievil", and "/ci/" allows "/ci/" and "/ci/x" but not "/ci"; hosts are
// compared whole, so "hooks.example.com" does not allow
// "hooks.example.com.evil.com".
func (p destination) allows(d destination) bool {
	if p.scheme != d.scheme || p.host != d.host || p.port != d.port || len(d.segments) < len(p.segments) {
		return false
	}
	if p.under && len(d.segments) == len(p.segments) {
		return false
	}
	for i, s := range p.segments {
		if d.segments[i] != s {
			return false
		}
	}
	return true
}
