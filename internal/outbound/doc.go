// Package outbound is the one way canaryd makes HTTP requests to other
// servers: the web metric provider and the webhook sender build their
// clients here, and a new client should too. It holds what every one of
// them must get right:
//
//   - NewTransport: no proxy from the environment (HTTP_PROXY and the
//     others are never read), Argo Rollouts' timeouts (dial 30 s,
//     keep-alive 30 s, TLS handshake 10 s), connections to one host
//     bounded;
//   - AllowList (--webhook-allow, --web-allow): the URL prefixes a
//     caller-named URL must start with, compared on one spelling of the
//     host (NormalHost) and on paths every server reads alike
//     (PathProblem); AllowList.Dial dials only a host and port a prefix
//     names, in that spelling;
//   - redirect policies: NoRedirects, and Redirects bounded in number and
//     checked target by target (within an AllowList, or SameOrigin);
//     Send, a request sent as an http.Client sends it, without the
//     client's copies of its headers and URL for the redirects it might
//     follow (RoundTrip and Doer, for a client with NoRedirects);
//   - ReadBody: a response body read up to a bound, refused at the first
//     byte over it; DrainAndClose; Inflate, for a client that asks for
//     gzip itself (AcceptGzip);
//   - ValidHeaderName and ValidHeaderValue for headers a spec sets.
//   - ProviderBounds and NewProviderTransport: what every metric
//     provider's client shares, its answers' bounds and its transport.
//
// Each client keeps its own limits, messages and metrics; this package
// has none of its own. What may be shown of a URL, a header or an error
// is decided by internal/redact.
package outbound
