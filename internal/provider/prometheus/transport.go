package prometheus

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/semaphore"

	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// maxResponseBytes bounds what one query may return whatever
// --max-result-values is. client_golang reads a whole response into memory;
// a careless range query over many series must become an Error
// measurement, not an out-of-memory service. The bound an answer is held
// to is usually lower: limits.ResponseBytesPerValue for each value of
// --max-result-values.
const maxResponseBytes = 64 << 20

// responseBytes is the bound of one answer for results of at most
// maxValues values.
func responseBytes(maxValues int) int64 {
	return min(maxResponseBytes, int64(maxValues)*limits.ResponseBytesPerValue+limits.ResponseBytesFixed)
}

// maxRedirects is how many redirects (within the datasource's origin) a
// query follows, as net/http's default.
const maxRedirects = 10

// maxConnsPerHost bounds the connections a transport opens to its
// datasource, and as many may stay idle, so that connections are reused
// rather than dialled. Without it, a burst of measurements (thousands of
// analyses whose schedules coincide) dialled a connection for every query
// that found none idle, and closed those beyond the idle limit once they
// finished: at 10,000 analyses, every other query paid for a new TCP
// connection, and the dials cost more CPU than the queries. Waiting for
// one of the open connections is quicker than dialling; Prometheus, whose
// --web.max-connections defaults to 512, sees at most this many.
const maxConnsPerHost = 128

// cloneRequest gives a round tripper a request it may change: RoundTrippers
// must not modify the request they are given.
func cloneRequest(r *http.Request) *http.Request {
	r2 := r.Clone(r.Context())
	if r2.Header == nil {
		r2.Header = make(http.Header)
	}
	return r2
}

// fail obeys the RoundTripper contract (the body is closed, even on error).
func fail(req *http.Request, err error) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, err
}

// sentCredentials collects the credentials a measurement's requests carried
// (whatever set them: the datasource's token file, the metric's basic auth,
// an OAuth2 access token, a header), so that they can be scrubbed from the
// measurement's error even if a server echoes them back.
type sentCredentials struct {
	mu     sync.Mutex
	values []string
	// plain is the request the measurement made (set before it is sent),
	// whose headers are the provider's own (instantHeader, rangeHeader),
	// which hold no credential: as long as it comes down unchanged, no
	// round tripper above recordCredentials having put a copy with
	// headers of its own in its place, its headers are not searched.
	plain *http.Request
}

type sentCredentialsKey struct{}

// withSentCredentials is ctx carrying a new sentCredentials, which
// recordCredentials finds there: one allocation, where context.WithValue
// and the collector took two.
func withSentCredentials(ctx context.Context) (context.Context, *sentCredentials) {
	c := &sentContext{Context: ctx}
	return c, &c.sent
}

// sentContext is a context that carries a measurement's sentCredentials.
type sentContext struct {
	context.Context
	sent sentCredentials
}

func (c *sentContext) Value(key any) any {
	if key == (sentCredentialsKey{}) {
		return &c.sent
	}
	return c.Context.Value(key)
}

func (c *sentCredentials) add(values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values = append(c.values, values...)
}

func (c *sentCredentials) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.values...)
}

// recordCredentials sees every header of a query as sent: the request as
// it comes down (the metric's and canaryd's headers), and, when the round
// trippers below it add headers of their own (addsBelow), after the round
// trip the request the connection carried (resp.Request), with the
// credentials that Prometheus' HTTP client configuration added below it.
//
// Without them, the request the connection carried has the headers seen
// coming down: net/http's transport sends a copy of the request it is
// given (resp.Request is never req itself), whose header map is the
// same, and changes nothing in it.
type recordCredentials struct {
	next      http.RoundTripper
	addsBelow bool
}

func (rt *recordCredentials) RoundTrip(req *http.Request) (*http.Response, error) {
	c, ok := req.Context().Value(sentCredentialsKey{}).(*sentCredentials)
	if !ok {
		return rt.next.RoundTrip(req)
	}
	if req != c.plain {
		c.record(req)
	}
	resp, err := rt.next.RoundTrip(req)
	if rt.addsBelow && resp != nil && resp.Request != nil && resp.Request != req {
		c.record(resp.Request)
	}
	return resp, err
}

// record adds the values of req's credential headers, and their parts
// (the token after "Bearer ", a basic password).
func (c *sentCredentials) record(req *http.Request) {
	for k, vs := range req.Header {
		// A header without a value is not sent (Idempotency-Key): it
		// holds nothing to record, whatever its name.
		if len(vs) == 0 || !redact.IsCredentialHeader(k) {
			continue
		}
		for _, v := range vs {
			c.add(v)
			scheme, cred, found := strings.Cut(v, " ")
			if !found {
				continue
			}
			c.add(cred)
			if strings.EqualFold(scheme, "Basic") {
				if user, password, ok := req.BasicAuth(); ok {
					c.add(user+":"+password, password)
				}
			}
		}
	}
}

// limitResponse bounds the size of response bodies.
// responseLimits bound the answers of one provider's queries: each answer
// in bytes (max), and all answers being read at once together (inFlight,
// shared by every datasource). An answer's first unreservedBytes are read
// without inFlight; an answer longer than that reserves its whole bound,
// max, at once before it reads more, and holds it until its body is
// closed.
//
// Taking room once, whole, is what keeps answers from waiting on each
// other for ever: answers that took room as they read it, a little at a
// time, each held part of inFlight while waiting for more, and a dozen
// long answers read at once (the hostile suite's dozen subqueries) came to
// hold all of it between them, each waiting for another to finish, until
// their queries' deadlines. An answer waiting for its reservation holds
// none of inFlight; one that has it reads to its end without waiting.
type responseLimits struct {
	max      int64
	inFlight *semaphore.Weighted
	// why says where max comes from, in the error of an answer over it.
	why string
}

// tokenResponses bound an OAuth2 token endpoint's answers.
var tokenResponses = &responseLimits{max: 1 << 20, why: "a token answer"}

type limitResponse struct {
	limits *responseLimits
	next   http.RoundTripper
}

func (rt *limitResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body := resp.Body
	// Prometheus' HTTP client leaves compression to the caller: a query
	// that asked for gzip (a range query) is inflated here, and bounded
	// as it is inflated. (Its header is read as Header.Get reads it,
	// without canonicalising a canonical name again.)
	if asked := req.Header["Accept-Encoding"]; len(asked) > 0 && asked[0] == "gzip" && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		body = &gzipBody{rc: body}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	resp.Body = &limitedBody{rc: body, ctx: req.Context(), left: rt.limits.max, limits: rt.limits}
	return resp, nil
}

// gzipBody inflates a gzipped body, reading its header at the first Read
// (which the query's context bounds) rather than in RoundTrip.
type gzipBody struct {
	rc io.ReadCloser
	zr *gzip.Reader
}

func (b *gzipBody) Read(p []byte) (int, error) {
	if b.zr == nil {
		zr, err := gzip.NewReader(b.rc)
		if err != nil {
			return 0, err
		}
		b.zr = zr
	}
	return b.zr.Read(p)
}

func (b *gzipBody) Close() error { return b.rc.Close() }

// unreservedBytes is how much of an answer is read without a share of
// responseLimits.inFlight: an instant query's answer (a few hundred bytes)
// never waits for room, and what is read so is bounded by the connections
// open to the datasources (maxConnsPerHost each).
const unreservedBytes = 64 << 10

type limitedBody struct {
	rc   io.ReadCloser
	ctx  context.Context
	left int64
	// read counts the bytes read; held is the share of limits.inFlight
	// reserved (0 until the answer is longer than unreservedBytes).
	read   int64
	held   int64
	limits *responseLimits
	closed bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("the answer is longer than the %d KiB canaryd reads of %s; narrow the query", b.limits.max>>10, b.limits.why)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	if b.held == 0 && b.limits.inFlight != nil && b.limits.max > unreservedBytes {
		if free := unreservedBytes - b.read; int64(len(p)) > free {
			if free > 0 {
				p = p[:free]
			} else {
				// Reserved only once there is more to read, so that an
				// answer of exactly unreservedBytes never waits.
				n, err := b.rc.Read(p[:1])
				if n == 0 {
					return 0, err
				}
				if rerr := b.reserve(); rerr != nil {
					return 0, rerr
				}
				b.left--
				b.read++
				return n, err
			}
		}
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	b.read += int64(n)
	return n, err
}

// reserve takes the answer's whole bound of limits.inFlight at once (see
// responseLimits), waiting within the query's context. The bound is at
// most inFlight's size (responseBytes is at most maxResponseBytes,
// limits.MaxResponseBytesInFlight), or it would wait for its deadline.
func (b *limitedBody) reserve() error {
	n := b.limits.max
	if err := b.limits.inFlight.Acquire(b.ctx, n); err != nil {
		return fmt.Errorf("waiting for other Prometheus answers to be read (%d MiB at once): %w", limits.MaxResponseBytesInFlight>>20, err)
	}
	b.held = n
	return nil
}

func (b *limitedBody) Close() error {
	if !b.closed {
		b.closed = true
		if b.held > 0 {
			b.limits.inFlight.Release(b.held)
		}
	}
	return b.rc.Close()
}

// metricHeaders sets (overwrites) a metric's headers on every request, as
// Argo's headers round tripper does.
type metricHeaders struct {
	headers []Header
	next    http.RoundTripper
}

func (rt *metricHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = cloneRequest(req)
	for _, h := range rt.headers {
		req.Header.Set(h.Key, h.Value)
	}
	return rt.next.RoundTrip(req)
}

// metricBasicAuth is a metric's authentication.basicAuth. Like Prometheus'
// basic auth round tripper (which Argo uses) it leaves a request that
// already carries an Authorization header alone.
type metricBasicAuth struct {
	username, password string
	next               http.RoundTripper
}

func (rt *metricBasicAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return rt.next.RoundTrip(req)
	}
	req = cloneRequest(req)
	req.SetBasicAuth(rt.username, rt.password)
	return rt.next.RoundTrip(req)
}

// metricOAuth2 is a metric's authentication.oauth2: the client-credentials
// flow. Unlike oauth2.Transport it fetches the token with the query's
// context, so a stalled token endpoint cannot outlive the measurement's
// deadline. The token is cached until it expires.
type metricOAuth2 struct {
	config clientcredentials.Config
	// client makes the token requests: its own transport, no datasource
	// credentials, no redirects.
	client *http.Client
	next   http.RoundTripper

	mu    sync.Mutex
	token *oauth2.Token
}

func (rt *metricOAuth2) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := rt.fetch(req.Context())
	if err != nil {
		return fail(req, err)
	}
	req = cloneRequest(req)
	token.SetAuthHeader(req)
	return rt.next.RoundTrip(req)
}

func (rt *metricOAuth2) fetch(ctx context.Context) (*oauth2.Token, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.token.Valid() {
		return rt.token, nil
	}
	token, err := rt.config.Token(context.WithValue(ctx, oauth2.HTTPClient, rt.client))
	if err != nil {
		return nil, tokenError(err)
	}
	rt.token = token
	return token, nil
}

// tokenError drops the token endpoint's response body from the error
// (oauth2 puts it there verbatim): it is whatever the endpoint chose to
// send, and canaryd's errors are read by the caller of the analysis.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := "oauth2: cannot fetch token"
		if re.Response != nil {
			msg += ": " + re.Response.Status
		}
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
			if re.ErrorDescription != "" {
				msg += " (" + re.ErrorDescription + ")"
			}
		}
		return errors.New(msg)
	}
	return fmt.Errorf("oauth2: cannot fetch token: %w", err)
}

// sameOriginRedirects follows a redirect only to the datasource's own
// origin: a redirect elsewhere would take the datasource's credentials (or
// at least the caller's query) to a server the configuration does not
// allow. The maxRedirects-th redirect is not followed, as net/http's.
func sameOriginRedirects(dsOrigin string) outbound.CheckRedirect {
	return outbound.Redirects(maxRedirects-1, outbound.SameOrigin(dsOrigin),
		func() error { return fmt.Errorf("stopped after %d redirects", maxRedirects) },
		func(target *url.URL, _ string) error {
			return fmt.Errorf("redirect to %s refused: queries only follow redirects within the datasource's own address %s", outbound.Origin(target), dsOrigin)
		})
}
