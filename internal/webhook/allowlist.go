package webhook

import (
	"errors"
	"net/url"
	"strings"
)

// AllowList is a list of URL prefixes with the rules of --webhook-allow
// (see parseDestination and destination.allows), for the other requests
// canaryd sends to URLs that a spec names: the web metric provider's
// --web-allow. A prefix allows a URL with the same scheme, host and port
// whose path segments begin with the prefix's; hosts are compared in one
// spelling (NormalHost), and paths that receivers could read differently
// are refused.
type AllowList struct {
	prefixes []destination
}

// ParseAllowList parses prefixes; each problem names the prefix.
func ParseAllowList(prefixes []string) (AllowList, error) {
	var a AllowList
	var errs []error
	for _, raw := range prefixes {
		p, err := parsePrefix(raw)
		if err != nil {
			// parsePrefix speaks of webhooks; the caller names its flag.
			errs = append(errs, errors.New(strings.TrimPrefix(err.Error(), "webhook: ")))
			continue
		}
		a.prefixes = append(a.prefixes, p)
	}
	return a, errors.Join(errs...)
}

// Empty reports whether the list allows nothing.
func (a AllowList) Empty() bool { return len(a.prefixes) == 0 }

// Refusal says why u may not be requested, or "" when a prefix allows it.
// The reason never quotes the URL, which may carry a credential.
func (a AllowList) Refusal(u *url.URL) string {
	d, reason := parseDestination(u)
	if reason != "" {
		return reason
	}
	for _, p := range a.prefixes {
		if p.allows(d) {
			return ""
		}
	}
	return "it does not start with any allowed prefix"
}

// NormalHost is the one spelling of a host that an AllowList compares, and
// that should be dialled: lower case, without a trailing dot, an IP address
// in its canonical form. ok is false for an empty host and an IPv6 address
// with a zone.
func NormalHost(h string) (string, bool) { return normalHost(h) }

// RequestHost is u's host:port in the spelling an AllowList compares
// (NormalHost), the port as given.
func RequestHost(u *url.URL) string { return requestHost(u) }
