package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"
	"golang.org/x/sync/semaphore"

	"github.com/canaryd/canaryd/internal/outbound"
)

// newDatasource checks a datasource's configuration and builds the round
// trippers its queries take, outermost first:
//
//	datasource headers → SigV4 signing → recording of the credentials
//	sent → response limits → Prometheus' HTTP client (authorization,
//	basic auth, OAuth2, http_headers, TLS with files reloaded) → dial,
//	at most maxConnsPerHost connections
//
// built twice: verifying TLS as configured, and not verifying it (a
// metric's insecure: true).
func newDatasource(d Datasource, responses *responseLimits) (*datasource, error) {
	u, hc, headers, err := checkDatasource(d)
	if err != nil {
		return nil, err
	}

	ds := &datasource{
		name:            d.Name,
		url:             u,
		key:             addressKey(u),
		origin:          outbound.Origin(u),
		followRedirects: hc.FollowRedirects,
		sigv4:           d.SigV4 != nil,
		secrets:         configSecrets(hc, d.SigV4),
	}
	if ds.name == "" {
		ds.name = ds.key
	}
	conns := newConnLimiter(maxConnsPerHost)
	slots := make(chan struct{}, maxConnsPerHost)
	for i, insecure := range []bool{false, true} {
		c := hc
		c.TLSConfig.InsecureSkipVerify = c.TLSConfig.InsecureSkipVerify || insecure
		raw, err := clientTransport(c, ds.name, conns)
		if err != nil {
			return nil, err
		}
		// Prometheus' client itself, which has the idle connections to
		// close (the slots round tripper over it has no
		// CloseIdleConnections).
		ds.raw[i] = raw
		raw = &requestSlots{slots: slots, next: raw}
		// Prometheus' client adds credentials and headers of its own.
		addsHeaders := hc.BasicAuth != nil || hc.Authorization != nil || hc.OAuth2 != nil || hc.HTTPHeaders != nil
		if addsHeaders {
			raw = &ownHeaders{next: raw}
		}
		rt := http.RoundTripper(&recordCredentials{next: &limitResponse{limits: responses, next: raw}, addsBelow: addsHeaders})
		if d.SigV4 != nil {
			if rt, err = sigv4.NewSigV4RoundTripper(d.SigV4, rt); err != nil {
				return nil, fmt.Errorf("sigv4: %w", err)
			}
		}
		// A datasource with nothing to add skips the round tripper that
		// would copy every request to add it.
		if len(headers) > 0 || d.SigV4 != nil {
			rt = &datasourceHeaders{headers: headers, dropAuthorization: d.SigV4 != nil, next: rt}
		}
		ds.transports[i] = rt
		if ds.endpoints[i], err = newEndpoint(ds, rt); err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
	}
	return ds, nil
}

// CheckDatasource reports the first problem of a datasource's
// configuration that New would refuse, without building anything (the
// files it names are read when New builds the datasource, and when its
// queries are sent).
func CheckDatasource(d Datasource) error {
	_, _, _, err := checkDatasource(d)
	return err
}

// checkDatasource checks d and returns its URL without userinfo, its HTTP
// client configuration (with that userinfo as basic_auth) and its headers.
func checkDatasource(d Datasource) (*url.URL, config.HTTPClientConfig, map[string]string, error) {
	var hc config.HTTPClientConfig
	u, err := parseAddress(d.URL)
	if err != nil {
		return nil, hc, nil, fmt.Errorf("url: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, hc, nil, errors.New("url must not have a query string or fragment")
	}
	if hc, err = httpConfig(d); err != nil {
		return nil, hc, nil, err
	}
	if u.User != nil {
		if hc.BasicAuth != nil || hc.Authorization != nil || hc.OAuth2 != nil || d.SigV4 != nil {
			return nil, hc, nil, errors.New("url has userinfo and basic_auth, authorization, oauth2 or sigv4 is configured too; give the credentials once")
		}
		password, _ := u.User.Password()
		hc.BasicAuth = &config.BasicAuth{Username: u.User.Username(), Password: config.Secret(password)}
		u.User = nil
	}
	headers := make(map[string]string, len(d.Headers))
	for k, v := range d.Headers {
		if !outbound.ValidHeaderName(k) {
			return nil, hc, nil, fmt.Errorf("header %q: invalid HTTP header name", k)
		}
		if !outbound.ValidHeaderValue(v) {
			return nil, hc, nil, fmt.Errorf("header %q: invalid HTTP header value", k)
		}
		headers[http.CanonicalHeaderKey(k)] = v
	}
	return u, hc, headers, nil
}

// httpConfig is the datasource's Prometheus HTTP client configuration,
// validated as Prometheus validates it (bearer_token_file becomes
// authorization), a copy that the datasource may complete.
func httpConfig(d Datasource) (config.HTTPClientConfig, error) {
	hc := config.DefaultHTTPClientConfig
	if d.HTTP != nil {
		hc = *d.HTTP
		// Validate completes these in place: the caller's stay as given.
		if hc.Authorization != nil {
			a := *hc.Authorization
			hc.Authorization = &a
		}
		if hc.BasicAuth != nil {
			b := *hc.BasicAuth
			hc.BasicAuth = &b
		}
	}
	if hc.ProxyFromEnvironment {
		return hc, errors.New("proxy_from_environment: canaryd never takes a proxy from the environment (HTTP_PROXY and friends); name one with proxy_url")
	}
	if err := hc.Validate(); err != nil {
		return hc, err
	}
	if err := hc.TLSConfig.Validate(); err != nil {
		return hc, fmt.Errorf("tls_config: %w", err)
	}
	if d.SigV4 != nil {
		if hc.BasicAuth != nil || hc.Authorization != nil || hc.OAuth2 != nil {
			return hc, errors.New("sigv4 signs every query: it cannot be combined with basic_auth, authorization or oauth2")
		}
		if err := d.SigV4.Validate(); err != nil {
			return hc, fmt.Errorf("sigv4: %w", err)
		}
	}
	return hc, nil
}

// configSecrets are the credentials written in a datasource's
// configuration, scrubbed from every error (those read from files are
// recorded as they are sent).
func configSecrets(hc config.HTTPClientConfig, s *sigv4.SigV4Config) []string {
	var out []string
	if b := hc.BasicAuth; b != nil {
		out = append(out, string(b.Password))
	}
	if a := hc.Authorization; a != nil {
		out = append(out, string(a.Credentials))
	}
	if o := hc.OAuth2; o != nil {
		out = append(out, string(o.ClientSecret))
	}
	if s != nil {
		out = append(out, string(s.SecretKey))
	}
	return out
}

// clientTransport is Prometheus' HTTP client for a datasource, built from
// its configuration as Prometheus builds a scrape's, with canaryd's dial:
// Argo's timeouts and at most conns' bound of connections per host. Its
// proxy is proxy_url's, or none (proxy_from_environment is refused).
func clientTransport(c config.HTTPClientConfig, name string, conns *connLimiter) (http.RoundTripper, error) {
	return config.NewRoundTripperFromConfigWithContext(context.Background(), c, name,
		config.WithDialContextFunc(conns.dial),
		config.WithIdleConnTimeout(idleConnTimeout))
}

// idleConnTimeout is how long an idle connection to a datasource is kept.
const idleConnTimeout = 90 * time.Second

// dialTimeout bounds a dial, and the wait for a connection slot before
// it (Argo's dial timeout).
const dialTimeout = 30 * time.Second

// connLimiter bounds the connections open to each host (maxConnsPerHost,
// the transport's MaxConnsPerHost that Prometheus' HTTP client does not
// set): a dial waits for one of them to close. A query waiting for a
// connection takes the first that falls idle, so a burst of queries
// shares the open connections rather than dialling more.
type connLimiter struct {
	max    int64
	dialer net.Dialer

	mu    sync.Mutex
	hosts map[string]*semaphore.Weighted
}

func newConnLimiter(max int64) *connLimiter {
	return &connLimiter{
		max:    max,
		dialer: net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		hosts:  map[string]*semaphore.Weighted{},
	}
}

func (l *connLimiter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	l.mu.Lock()
	sem, ok := l.hosts[addr]
	if !ok {
		sem = semaphore.NewWeighted(l.max)
		l.hosts[addr] = sem
	}
	l.mu.Unlock()
	wait, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := sem.Acquire(wait, 1); err != nil {
		return nil, fmt.Errorf("waiting for one of the %d connections to %s: %w", l.max, addr, err)
	}
	conn, err := l.dialer.DialContext(ctx, network, addr)
	if err != nil {
		sem.Release(1)
		return nil, err
	}
	return &limitedConn{Conn: conn, release: func() { sem.Release(1) }}, nil
}

// requestSlots lets at most maxConnsPerHost requests to a datasource be
// in flight, as http.Transport's MaxConnsPerHost does, which Prometheus'
// HTTP client does not set: a request waits for a slot (until its
// context ends) before the transport sees it, and gives the slot back
// when its response body is closed. Without it, every request that
// found no idle connection started a dial of its own, which waited in
// connLimiter: thousands of analyses measuring at once held thousands of
// pending dials, each with its goroutine and buffers, and churned
// connections, where waiting for one of the open connections is cheap.
//
// The slots are a channel's buffer, a slot taken by a send and given back
// by a receive: a request that waits for one is queued by the channel,
// first come first served, without the waiter a semaphore.Weighted
// allocates for each request that waits (three allocations), which a
// burst of measurements paid for every query beyond the first
// maxConnsPerHost.
type requestSlots struct {
	slots chan struct{}
	next  http.RoundTripper
}

func (rt *requestSlots) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case rt.slots <- struct{}{}:
	default:
		select {
		case rt.slots <- struct{}{}:
		case <-req.Context().Done():
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("waiting for one of the %d connections to the datasource: %w", maxConnsPerHost, req.Context().Err())
		}
	}
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		<-rt.slots
		return nil, err
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, slots: rt.slots}
	return resp, nil
}

// slotBody gives its request's slot back when it is closed.
type slotBody struct {
	io.ReadCloser
	once  sync.Once
	slots chan struct{}
}

func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

func (b *slotBody) release() { <-b.slots }

// limitedConn gives its slot back when it is closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// datasourceHeaders sets the datasource's headers, which a metric cannot
// override (a tenant header such as X-Scope-OrgID is the operator's
// decision). Before SigV4 signing it drops the Authorization header a
// metric may have set, which would replace the signature, and the
// headers that would be signed but not sent.
type datasourceHeaders struct {
	headers           map[string]string
	dropAuthorization bool
	next              http.RoundTripper
}

func (rt *datasourceHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = cloneRequest(req)
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	if rt.dropAuthorization {
		req.Header.Del("Authorization")
		// A header without a value is not sent, and must not be
		// signed as if it were (Idempotency-Key, see New).
		for k, v := range req.Header {
			if len(v) == 0 {
				delete(req.Header, k)
			}
		}
	}
	return rt.next.RoundTrip(req)
}

// ownHeaders gives Prometheus' HTTP client a request whose header map is
// its own. The client's round trippers that add credentials or headers
// mean to copy the request before they change it, but the copy (its
// cloneRequest, in prometheus/common v0.72.0) shares the header map with
// the original: without this, a query's credentials would be written into
// the header map that canaryd shares between queries, and sent with every
// query after it, to every datasource.
type ownHeaders struct {
	next http.RoundTripper
}

func (rt *ownHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	return rt.next.RoundTrip(cloneRequest(req))
}

// closeIdle closes the idle connections of a round tripper that has any.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
