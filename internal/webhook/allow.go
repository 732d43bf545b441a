package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrRefused is wrapped by every error of Check: the URL may not receive
// webhooks. The server answers such a request with a 400.
var ErrRefused = errors.New("webhook URL refused")

// refusal is the error of Check: it is ErrRefused, with the reason. The
// reason never quotes the URL: it may carry a password, or a token in its
// query.
type refusal struct{ reason string }

func (r *refusal) Error() string        { return ErrRefused.Error() + ": " + r.reason }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refused(reason string) error { return &refusal{reason} }

// destination is a URL reduced to what the allow list compares: a prefix
// allows a destination with the same scheme, host and port whose path
// segments begin with the prefix's.
type destination struct {
	scheme string
	host   string // lower case, no trailing dot; an IP address in canonical form
	port   string // explicit, or the scheme's default
	// segments of the unescaped path, without the leading slash; a prefix
	// drops its trailing empty segment, so "/ci/" allows what "/ci" does.
	segments []string
}

// parseDestination normalises u, or says why it can never be a webhook
// destination (or allow prefix): the reason is "" when it can.
func parseDestination(u *url.URL) (destination, string) {
	// url.Parse lower-cases the scheme already.
	if u.Scheme != "http" && u.Scheme != "https" {
		return destination{}, "it is not an http or https URL"
	}
	if u.Opaque != "" || u.Host == "" {
		return destination{}, "it is not an absolute http or https URL with a host"
	}
	if u.User != nil {
		return destination{}, "it carries credentials (user:password@); sign deliveries with --webhook-secret-file instead"
	}
	host, ok := normalHost(u.Hostname())
	if !ok {
		return destination{}, "it has no host, or an IPv6 address with a zone"
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if reason := PathProblem(u); reason != "" {
		return destination{}, "its path has " + reason
	}
	var segments []string
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		segments = strings.Split(p, "/")
	}
	return destination{scheme: u.Scheme, host: host, port: port, segments: segments}, ""
}

// normalHost is the one spelling of a host that is compared with the allow
// list and dialled: lower case, without a trailing dot, an IP address in
// its canonical form ("127.0.0.1." is 127.0.0.1, "[0:0::1]" is ::1). ok is
// false for an empty host and for an IPv6 address with a zone, which names
// an interface of this machine and no webhook receiver.
func normalHost(h string) (string, bool) {
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

// parsePrefix parses one --webhook-allow prefix.
func parsePrefix(raw string) (destination, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; an allow prefix is configuration, not a
		// secret, but it is the operator's own text, so say where it failed.
		return destination{}, fmt.Errorf("webhook: allow prefix %q is not a URL", raw)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return destination{}, fmt.Errorf("webhook: allow prefix %q has a query or fragment; a prefix is a scheme, host and path", raw)
	}
	d, reason := parseDestination(u)
	if reason != "" {
		return destination{}, fmt.Errorf("webhook: allow prefix %q: %s", raw, reason)
	}
	if n := len(d.segments); n > 0 && d.segments[n-1] == "" {
		d.segments = d.segments[:n-1]
	}
	return d, nil
}

// allows reports whether the prefix p allows the destination d. Paths are
// compared segment by segment, so "/ci" allows "/ci" and "/ci/x" but not
// "/cievil"; hosts are compared whole, so "hooks.example.com" does not allow
// "hooks.example.com.evil.com".
func (p destination) allows(d destination) bool {
	if p.scheme != d.scheme || p.host != d.host || p.port != d.port || len(d.segments) < len(p.segments) {
		return false
	}
	for i, s := range p.segments {
		if d.segments[i] != s {
			return false
		}
	}
	return true
}

// check parses raw and matches it against the allow list. It returns the
// parsed URL when raw may receive webhooks.
func (s *Sender) check(raw string) (*url.URL, error) {
	if len(s.allow) == 0 {
		return nil, refused("webhooks are disabled: this canaryd allows no destination; its operator enables webhooks with --webhook-allow URL-PREFIX (repeatable)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refused("it is not a valid URL")
	}
	if err := s.checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL is check for a parsed URL, such as a redirect's target.
func (s *Sender) checkURL(u *url.URL) error {
	d, reason := parseDestination(u)
	if reason != "" {
		return refused(reason)
	}
	for _, p := range s.allow {
		if p.allows(d) {
			return nil
		}
	}
	return refused("it does not start with any allowed prefix (--webhook-allow)")
}

// redact returns u without userinfo and fragment and with its query
// replaced, for logs, errors and Status: the query of a webhook URL often
// holds a token.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery, c.ForceQuery = "REDACTED", false
	}
	return c.String()
}

// redactRaw is redact for a URL given as text, which may not even parse.
func redactRaw(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return redact(u)
}
