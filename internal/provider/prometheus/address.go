package prometheus

import (
	"errors"
	"net/url"
	"strings"

	"github.com/canaryd/canaryd/internal/outbound"
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

// addressKey is the form in which a metric's address is compared with the
// datasources: the origin and the path without trailing slashes. Userinfo,
// query and fragment play no part (a query string is refused earlier).
func addressKey(u *url.URL) string {
	return outbound.Origin(u) + strings.TrimRight(u.EscapedPath(), "/")
}

// tokenURLKey is the form in which an OAuth2 token URL is compared with
// the allowed ones: the origin and the decoded path without trailing
// slashes. Paths are compared decoded, so that "/oauth/%74oken" is
// "/oauth/token"; checkPath has refused what decodes ambiguously, so the
// decoded path splits into the segments every server sees.
func tokenURLKey(u *url.URL) string {
	return outbound.Origin(u) + strings.TrimRight(u.Path, "/")
}

// redacted is u as it may appear in a message: no userinfo, no query, no
// fragment, since any of them can carry a credential.
func redacted(u *url.URL) string {
	return addressKey(u)
}
