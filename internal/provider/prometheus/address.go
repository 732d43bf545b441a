package prometheus

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// errNotURL is Argo Rollouts' text for an address that is not an absolute
// URL (sic: "is not is").
var errNotURL = errors.New("prometheus address is not is url format")

// parseAddress parses an absolute http or https URL, the way Argo's IsUrl
// accepts it (a scheme and a host), and refuses the other schemes, which
// the Prometheus client could not use anyway.
func parseAddress(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, errNotURL
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	default:
		return nil, errors.New("prometheus address must be an http or https URL")
	}
	return u, nil
}

// canonicalHost is u's host in lower case, without the scheme's default
// port, with IPv6 literals bracketed.
func canonicalHost(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	scheme := strings.ToLower(u.Scheme)
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		return net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// origin is scheme://host[:port], normalised; two URLs with the same origin
// reach the same server.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + canonicalHost(u)
}

// addressKey is the form in which a metric's address is compared with the
// datasources: the origin and the path without trailing slashes. Userinfo,
// query and fragment play no part (a query string is refused earlier).
func addressKey(u *url.URL) string {
	return origin(u) + strings.TrimRight(u.EscapedPath(), "/")
}

// tokenURLKey is the form in which an OAuth2 token URL is compared with
// the allowed ones: the origin and the decoded path without trailing
// slashes. Paths are compared decoded, so that "/oauth/%74oken" is
// "/oauth/token"; checkPath has refused what decodes ambiguously, so the
// decoded path splits into the segments every server sees.
func tokenURLKey(u *url.URL) string {
	return origin(u) + strings.TrimRight(u.Path, "/")
}

// checkPath says why u's path cannot be compared with an allowed prefix, or
// "" when it can. A path is compared decoded and sent as given, so it must
// mean the same to every server however it decodes and normalises it.
// Refused, because servers disagree on them:
//
//   - "." and ".." segments, which a server resolves, so that
//     "/oauth/../admin" leaves the prefix "/oauth/" it appears to be
//     under;
//   - an encoded dot or slash (%2e, %2f), which some servers decode before
//     resolving dot segments or splitting the path, others after;
//   - an encoded percent sign (%25), which a server that decodes twice
//     turns into another escape ("%252e%252e" into "..");
//   - ";" (raw or %3b), the path parameters of Java servers, which resolve
//     "/oauth/..;/admin" as "/admin";
//   - a backslash (raw or %5c), which Windows servers and some proxies
//     take for "/";
//   - control characters and bytes that are not UTF-8 once decoded
//     (overlong encodings of "." and "/", such as %c0%ae).
//
// The webhook allow list applies the same rules (internal/webhook).
func checkPath(u *url.URL) string {
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

// redacted is u as it may appear in a message: no userinfo, no query, no
// fragment, since any of them can carry a credential.
func redacted(u *url.URL) string {
	return addressKey(u)
}
