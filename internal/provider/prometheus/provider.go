package prometheus

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/semaphore"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/redact"
)

// ResolvedPrometheusQuery is the metric-result metadata key under which the
// query, with its arguments resolved, is stored (Argo Rollouts' key).
const ResolvedPrometheusQuery = "ResolvedPrometheusQuery"

// DefaultTimeout is a query's timeout when the metric gives none (Argo's).
const DefaultTimeout = 30 * time.Second

// The query endpoints, as client_golang names them.
const (
	queryPath      = "/api/v1/query"
	queryRangePath = "/api/v1/query_range"
)

// Datasource is one Prometheus (or Mimir, Cortex, Thanos) that metrics may
// query. The configuration decides these, never the spec.
type Datasource struct {
	// Name labels the datasource in metrics and messages. Default: its URL.
	Name string
	// URL is the base URL, as a metric's address would give it
	// (http://prometheus:9090, http://mimir/prometheus). Userinfo in it is
	// taken as basic auth and removed from the URL.
	URL string
	// Headers are set on every request, and a metric's headers cannot
	// override them (X-Scope-OrgID for Mimir or Cortex, for example).
	Headers map[string]string
	// HTTP is how the datasource is reached, in Prometheus' own HTTP
	// client configuration (basic_auth, authorization, oauth2, tls_config,
	// follow_redirects, enable_http2, proxy_url, http_headers); nil means
	// config.DefaultHTTPClientConfig. Credentials from files are read
	// for every query, and TLS files are reloaded when they change.
	// proxy_from_environment is refused. A metric's own credentials replace
	// the datasource's basic_auth and authorization.
	HTTP *config.HTTPClientConfig
	// SigV4, when set, signs every query with AWS Signature Version 4
	// (Amazon Managed Service for Prometheus), with the credentials it
	// names or the AWS SDK's default chain; not with basic_auth,
	// authorization or oauth2.
	SigV4 *sigv4.SigV4Config
}

// Options configure a Provider.
type Options struct {
	// Datasources are the Prometheus servers metrics may query. The first is
	// the default, used when a metric omits address. A metric's address must
	// match one of them (scheme and host case, default ports and trailing
	// slashes do not matter); any other address is rejected when the metric
	// is validated.
	Datasources []Datasource
	// TokenURLs are the OAuth2 token endpoints that a metric's
	// authentication.oauth2.tokenUrl may name: an entry matches that exact
	// URL, or, when it ends in "/", every URL under it. None means OAuth2 is
	// refused: a token request POSTs the metric's client credentials to a
	// URL of the caller's choosing, and its answer would be reported back.
	TokenURLs []string
	// Registerer, when set, receives the query latency histogram
	// canaryd_prometheus_query_duration_seconds{datasource,outcome}.
	Registerer prometheus.Registerer
	// MaxTimeout caps a metric's timeout (and the default timeout); 0 means
	// no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values a query's result may have (a
	// vector's samples, a matrix's points); a measurement whose result has
	// more is an Error, found while the response is decoded, before the
	// values are kept. 0 means DefaultMaxResultValues.
	MaxResultValues int
}

// DefaultMaxResultValues is MaxResultValues when none is set
// (limits.MaxResultValues).
const DefaultMaxResultValues = limits.MaxResultValues

// Provider makes Sources for Prometheus metrics. It is safe for concurrent
// use, and is meant to live as long as the service: it owns the HTTP
// transports that every metric on a datasource shares.
type Provider struct {
	datasources []*datasource
	tokenURLs   []string
	// tokenTransports make OAuth2 token requests, [0] verifying TLS and
	// [1] not (a metric's insecure flag applies to its token endpoint too,
	// as in Argo).
	tokenTransports [2]*http.Transport
	maxTimeout      time.Duration
	maxValues       int
	durations       *prometheus.HistogramVec
	// queries are the bodies of queries, reused so that a measurement
	// does not allocate its form, its reader, its GetBody and the buffer
	// its answer is read into (see getQueryBody).
	queries sync.Pool
	// instantHeader and rangeHeader are the headers of every query,
	// client_golang's and an Accept-Encoding: two maps shared by every
	// request, which are only ever read. Round trippers copy a request
	// before they change it (cloneRequest), as http.RoundTripper
	// requires, and so does http.Client for redirects.
	instantHeader, rangeHeader http.Header
}

type datasource struct {
	name   string
	url    *url.URL // without userinfo
	key    string
	origin string
	// followRedirects is follow_redirects: redirects within origin are
	// followed, or none.
	followRedirects bool
	// sigv4 says that the datasource signs its queries with SigV4.
	sigv4 bool
	// secrets are the credentials written in the configuration, scrubbed
	// from errors.
	secrets []string
	// transports carry the datasource's headers and credentials: [0]
	// verifies TLS per its configuration, [1] skips verification (a
	// metric's insecure: true).
	transports [2]http.RoundTripper
	// raw are Prometheus' HTTP clients under transports, which own the
	// connections.
	raw [2]http.RoundTripper
	// endpoints send the queries of metrics that add no round tripper of
	// their own, over transports[0] and [1].
	endpoints [2]*endpoint
}

// endpoint is a client of a datasource, with what client_golang makes of
// it.
type endpoint struct {
	// client sends the queries through the round trippers of the metric
	// and the datasource, following redirects within the datasource.
	client *http.Client
	// prom is client_golang's client over client: it decides every
	// response that decodeFast does not read.
	prom promapi.Client
	// queryURL and rangeURL are the endpoints as client_golang builds them
	// from the datasource's address.
	queryURL, rangeURL string
	// queryRequest and rangeRequest are POSTs to them with neither body
	// nor context: each query's request is a copy (newQuery), so that the
	// URL is parsed once per endpoint rather than once per query.
	queryRequest, rangeRequest *http.Request
}

func newEndpoint(ds *datasource, rt http.RoundTripper) (*endpoint, error) {
	client := &http.Client{Transport: rt, CheckRedirect: outbound.NoRedirects}
	if ds.followRedirects {
		client.CheckRedirect = sameOriginRedirects(ds.origin)
	}
	prom, err := promapi.NewClient(promapi.Config{Address: ds.url.String(), Client: client})
	if err != nil {
		return nil, err
	}
	e := &endpoint{
		client:   client,
		prom:     prom,
		queryURL: prom.URL(queryPath, nil).String(),
		rangeURL: prom.URL(queryRangePath, nil).String(),
	}
	if e.queryRequest, err = http.NewRequest(http.MethodPost, e.queryURL, nil); err != nil {
		return nil, err
	}
	if e.rangeRequest, err = http.NewRequest(http.MethodPost, e.rangeURL, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// New validates the options and builds the datasources' transports.
func New(opts Options) (*Provider, error) {
	if len(opts.Datasources) == 0 {
		return nil, errors.New("no Prometheus datasource configured")
	}
	if opts.MaxTimeout < 0 {
		return nil, errors.New("prometheus max timeout must not be negative")
	}
	if opts.MaxResultValues < 0 {
		return nil, errors.New("prometheus max result values must not be negative")
	}
	p := &Provider{maxTimeout: opts.MaxTimeout, maxValues: opts.MaxResultValues}
	if p.maxValues == 0 {
		p.maxValues = DefaultMaxResultValues
	}
	p.rangeHeader = http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"},
		// Lets the transport retry the POST on a connection the server
		// had closed, as client_golang does (the header is not sent).
		"Idempotency-Key": nil,
	}
	// An instant query's answer is a few hundred bytes, which Prometheus
	// would gzip if asked, as Go's transport asks unless the request says
	// otherwise: compressing and inflating them took longer than the
	// query (a measurement against Prometheus on loopback: 0.39 ms
	// instead of 0.95 ms, half the allocations). A range query's answer
	// can be megabytes, and is still asked for gzipped.
	p.instantHeader = p.rangeHeader.Clone()
	p.instantHeader.Set("Accept-Encoding", "identity")
	// Prometheus' HTTP client asks for no compression itself; the
	// limitResponse round tripper inflates what this asks for.
	p.rangeHeader.Set("Accept-Encoding", "gzip")
	responses := &responseLimits{max: responseBytes(p.maxValues), inFlight: semaphore.NewWeighted(limits.MaxResponseBytesInFlight),
		why: fmt.Sprintf("a query's answer (%d bytes for each of --max-result-values %d)", limits.ResponseBytesPerValue, p.maxValues)}
	names := map[string]bool{}
	keys := map[string]string{}
	for i, d := range opts.Datasources {
		ds, err := newDatasource(d, responses)
		if err != nil {
			label := fmt.Sprintf("datasources[%d]", i)
			if d.Name != "" {
				label += fmt.Sprintf(" (%q)", d.Name)
			}
			return nil, fmt.Errorf("prometheus %s: %w", label, err)
		}
		if other, ok := keys[ds.key]; ok {
			return nil, fmt.Errorf("prometheus datasources: %q and %q have the same URL %s", other, ds.name, ds.key)
		}
		if names[ds.name] {
			return nil, fmt.Errorf("prometheus datasources: duplicate name %q", ds.name)
		}
		names[ds.name], keys[ds.key] = true, ds.name
		p.datasources = append(p.datasources, ds)
	}
	for i, raw := range opts.TokenURLs {
		u, err := parseAddress(raw)
		if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("prometheus OAuth2 token URLs[%d]: must be an http or https URL without userinfo, query or fragment", i)
		}
		if reason := outbound.PathProblem(u); reason != "" {
			return nil, fmt.Errorf("prometheus OAuth2 token URLs[%d]: its path must not have %s", i, reason)
		}
		key := tokenURLKey(u)
		if strings.HasSuffix(u.Path, "/") {
			key += "/"
		}
		p.tokenURLs = append(p.tokenURLs, key)
	}
	for i, insecure := range []bool{false, true} {
		p.tokenTransports[i] = outbound.NewTransport(outbound.TransportOptions{
			MaxConnsPerHost: maxConnsPerHost,
			TLS:             &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure},
		})
	}
	if opts.Registerer != nil {
		durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "canaryd_prometheus_query_duration_seconds",
			Help:    "Time taken by Prometheus queries, by datasource and outcome (success, error, timeout, canceled, unreachable).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"datasource", "outcome"})
		if err := opts.Registerer.Register(durations); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("registering prometheus query metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.HistogramVec)
			if !ok {
				return nil, fmt.Errorf("registering prometheus query metrics: %w", err)
			}
			durations = existing
		}
		p.durations = durations
	}
	return p, nil
}

// CloseIdleConnections closes the idle connections of every datasource.
// Useful in tests and on shutdown; the Provider stays usable.
func (p *Provider) CloseIdleConnections() {
	for _, ds := range p.datasources {
		for _, t := range ds.raw {
			closeIdle(t)
		}
	}
	for _, t := range p.tokenTransports {
		t.CloseIdleConnections()
	}
}

// Source validates one resolved metric's prometheus configuration and
// returns a Source that measures it, and the metric result's metadata
// (ResolvedPrometheusQuery). Problems are reported as FieldErrors with paths
// relative to the metric ("provider.prometheus.address"); then the Source
// is nil and no request is ever made.
func (p *Provider) Source(m *Metric) (analysis.Source, map[string]string, []api.FieldError) {
	const base = "provider.prometheus"
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: base + field, Message: fmt.Sprintf(format, args...)})
	}
	if m == nil {
		add("", "prometheus provider configuration is missing")
		return nil, nil, errs
	}

	s := &source{p: p, query: m.Query}

	// address
	ds, urlUser := p.datasourceFor(m.Address, add)
	s.ds = ds

	if strings.TrimSpace(m.Query) == "" {
		add(".query", "query is required")
	}

	s.timeout = p.timeout(m.Timeout, add)

	// rangeQuery
	if rq := m.RangeQuery; rq != nil {
		s.rng = p.rangeQuery(rq, add)
	}

	ba, oauthSet := p.checkAuthentication(ds, m, urlUser, add)
	checkHeaders(m.Headers, add)
	if len(errs) > 0 {
		return nil, nil, errs
	}

	if !p.chain(s, m, ba, oauthSet, add) {
		return nil, nil, errs
	}
	s.escapedQuery = url.QueryEscape(m.Query)
	if s.timeout >= time.Second {
		// Lets Prometheus stop evaluating a query nobody waits for. Whole
		// seconds only: the client writes Go's "1.5s", which Prometheus'
		// duration parser refuses, while "1m30s" is fine.
		t := s.timeout.Truncate(time.Second)
		s.opts = []v1.Option{v1.WithTimeout(t)}
		s.timeoutParam = "&timeout=" + url.QueryEscape(t.String())
	}
	return s, map[string]string{ResolvedPrometheusQuery: m.Query}, nil
}

// timeout is a metric's query timeout: its timeout in seconds, or
// DefaultTimeout, lowered to the provider's MaxTimeout.
func (p *Provider) timeout(seconds *int64, add func(field, format string, args ...any)) time.Duration {
	timeout := DefaultTimeout
	if seconds != nil {
		switch t := *seconds; {
		case t < 0:
			add(".timeout", "prometheus timeout should not be negative")
		case t > int64(math.MaxInt64/time.Second):
			timeout = time.Duration(math.MaxInt64)
		default:
			timeout = time.Duration(t) * time.Second
		}
	}
	if p.maxTimeout > 0 && timeout > p.maxTimeout {
		timeout = p.maxTimeout
	}
	return timeout
}

// checkAuthentication checks a metric's authentication and returns the
// basic auth it sends (its own, or its address's userinfo) and whether it
// authenticates with OAuth2.
func (p *Provider) checkAuthentication(ds *datasource, m *Metric, urlUser *url.Userinfo, add func(field, format string, args ...any)) (BasicAuth, bool) {
	auth := m.Authentication
	p.checkSigV4(ds, m, urlUser, add)
	ba := auth.BasicAuth
	if ds.sigv4 {
		urlUser = nil // refused by checkSigV4
	}
	if ba.Username != "" || ba.Password != "" {
		if ba.Username == "" {
			add(".authentication.basicAuth.username", "missing mandatory parameter in metric for basic auth setup: username")
		} else if ba.Password == "" {
			add(".authentication.basicAuth.password", "missing mandatory parameter in metric for basic auth setup: password")
		}
	} else if urlUser != nil {
		// Go's HTTP client sends an address' userinfo as basic auth; Argo
		// users rely on it. The datasource URL itself never carries it.
		password, _ := urlUser.Password()
		ba = BasicAuth{Username: urlUser.Username(), Password: password}
	}
	o := auth.OAuth2
	oauthSet := o.TokenURL != "" || o.ClientID != "" || o.ClientSecret != "" || len(o.Scopes) > 0
	if oauthSet {
		p.checkOAuth2(o, add)
	}
	return ba, oauthSet
}

// checkHeaders checks a metric's headers: a valid name and a value
// without control characters.
func checkHeaders(headers []Header, add func(field, format string, args ...any)) {
	for i, h := range headers {
		if !outbound.ValidHeaderName(h.Key) {
			add(fmt.Sprintf(".headers[%d].key", i), "invalid HTTP header name %q", h.Key)
		}
		if !outbound.ValidHeaderValue(h.Value) {
			// The value is not echoed: it may well be a credential.
			add(fmt.Sprintf(".headers[%d].value", i), "invalid HTTP header value: it must not contain control characters such as line breaks")
		}
	}
}

// chain builds the transport of s's queries for m, with its basic auth
// ba and its OAuth2 when oauthSet, and the credentials they send; false
// when the client cannot be built (add says why).
func (p *Provider) chain(s *source, m *Metric, ba BasicAuth, oauthSet bool, add func(field, format string, args ...any)) bool {
	ds, o := s.ds, m.Authentication.OAuth2
	// The chain a query passes, outermost first: oauth2 → basic auth →
	// metric headers → datasource headers and credentials → recording of
	// the credentials sent (for scrubbing) → size limit → the datasource's
	// shared transport. A metric's Authorization header
	// therefore beats its oauth2, which beats its basicAuth, as in Argo.
	insecure := 0
	if m.Insecure {
		insecure = 1
	}
	rt := ds.transports[insecure]
	if len(m.Headers) > 0 {
		rt = &metricHeaders{headers: append([]Header(nil), m.Headers...), next: rt}
	}
	if ba.Username != "" {
		rt = &metricBasicAuth{username: ba.Username, password: ba.Password, next: rt}
		s.secrets = append(s.secrets, ba.Password)
	}
	if oauthSet {
		tokenTransport := http.RoundTripper(p.tokenTransports[insecure])
		rt = &metricOAuth2{
			config: clientcredentials.Config{
				ClientID:     o.ClientID,
				ClientSecret: o.ClientSecret,
				TokenURL:     o.TokenURL,
				Scopes:       o.Scopes,
			},
			client: &http.Client{Transport: &limitResponse{limits: tokenResponses, next: tokenTransport}, CheckRedirect: outbound.NoRedirects},
			next:   rt,
		}
		s.secrets = append(s.secrets, o.ClientSecret)
	}
	for _, h := range m.Headers {
		if redact.IsCredentialHeader(h.Key) {
			s.secrets = append(s.secrets, h.Value)
		}
	}
	s.secrets = append(s.secrets, ds.secrets...)
	// A metric that adds nothing to the datasource's requests shares its
	// client: one less client per analysis to build and to keep.
	s.ep = ds.endpoints[insecure]
	if rt != ds.transports[insecure] {
		ep, err := newEndpoint(ds, rt)
		if err != nil {
			// Cannot happen: the URL was parsed when the datasource was made.
			add(".address", "building the Prometheus client: %v", err)
			return false
		}
		s.ep = ep
	}
	return true
}

// datasourceFor finds the datasource a metric's address names; the
// default when it names none. The address' userinfo is returned apart.
func (p *Provider) datasourceFor(address string, add func(field, format string, args ...any)) (*datasource, *url.Userinfo) {
	if strings.TrimSpace(address) == "" {
		return p.datasources[0], nil
	}
	u, err := parseAddress(address)
	if err != nil {
		add(".address", "%v", err)
		return p.datasources[0], nil
	}
	if u.RawQuery != "" || u.Fragment != "" {
		add(".address", "prometheus address must not have a query string or fragment")
		return p.datasources[0], nil
	}
	key := addressKey(u)
	for _, ds := range p.datasources {
		if ds.key == key {
			return ds, u.User
		}
	}
	allowed := make([]string, len(p.datasources))
	for i, ds := range p.datasources {
		allowed[i] = fmt.Sprintf("%q", ds.key)
	}
	allowed[0] += " (the default)"
	add(".address", "prometheus address %q is not an allowed Prometheus (allowed: %s); to allow it, start canaryd with --prometheus-url %s (repeatable) or add it to the Prometheus datasources of its configuration file",
		redacted(u), strings.Join(allowed, ", "), redacted(u))
	return p.datasources[0], nil
}

func (p *Provider) rangeQuery(rq *RangeQuery, add func(field, format string, args ...any)) *rangeQuery {
	r := &rangeQuery{}
	now := time.Now()
	var start, end time.Time
	compile := func(field, expression string) (*condition.TimeExpr, time.Time) {
		te, err := condition.CompileTime(expression)
		if err != nil {
			add(".rangeQuery."+field, "failed to parse rangeQuery.%s as time: %v", field, err)
			return nil, time.Time{}
		}
		// A trial run now: an expression that fails now (duration("??"))
		// fails at every measurement, and is better refused before it runs.
		at, err := te.Eval(now)
		if err != nil {
			add(".rangeQuery."+field, "failed to parse rangeQuery.%s as time: %v", field, err)
			return nil, time.Time{}
		}
		return te, at
	}
	r.start, start = compile("start", rq.Start)
	r.end, end = compile("end", rq.End)
	if r.start != nil && r.end != nil && end.Before(start) {
		add(".rangeQuery.end", "rangeQuery.end is before rangeQuery.start")
	}
	step, err := time.ParseDuration(rq.Step)
	switch {
	case err != nil:
		add(".rangeQuery.step", "failed to parse rangeQuery.step as duration: %v", err)
	case step <= 0:
		add(".rangeQuery.step", "rangeQuery.step must be a positive duration, got %q", rq.Step)
	}
	r.step = step
	return r
}

// checkSigV4 applies the rules of a datasource that signs its queries
// with SigV4, and of a metric's authentication.sigv4: the AWS credentials
// come from canaryd's configuration, never from a template, so a metric
// may ask for SigV4 only of a datasource configured with it (whose
// settings apply: the metric's region, profile and roleArn are not used),
// and may not send other credentials to one.
func (p *Provider) checkSigV4(ds *datasource, m *Metric, urlUser *url.Userinfo, add func(field, format string, args ...any)) {
	const f = ".authentication"
	auth := m.Authentication
	if !ds.sigv4 {
		if !auth.Sigv4.IsZero() {
			add(f+".sigv4", "datasource %q does not sign its queries with SigV4; canaryd takes AWS credentials from its configuration, never from a template: give the datasource a sigv4 block (region, and access_key and secret_key, profile or role_arn) in the prometheus datasources of canaryd's configuration file", ds.name)
		}
		return
	}
	const why = "datasource %q signs its queries with SigV4, which replaces any other credentials; remove %s"
	if ba := auth.BasicAuth; ba.Username != "" || ba.Password != "" {
		add(f+".basicAuth", why, ds.name, "basicAuth")
	}
	if o := auth.OAuth2; o.TokenURL != "" || o.ClientID != "" || o.ClientSecret != "" || len(o.Scopes) > 0 {
		add(f+".oauth2", why, ds.name, "oauth2")
	}
	if urlUser != nil {
		add(".address", why, ds.name, "the user name and password from the address")
	}
	for i, h := range m.Headers {
		if strings.EqualFold(h.Key, "Authorization") {
			add(fmt.Sprintf(".headers[%d].key", i), why, ds.name, "the Authorization header")
		}
	}
}

func (p *Provider) checkOAuth2(o OAuth2, add func(field, format string, args ...any)) {
	const f = ".authentication.oauth2"
	if o.TokenURL == "" {
		add(f+".tokenUrl", "missing mandatory parameter in metric for OAuth2 setup: tokenUrl")
	}
	if o.ClientID == "" {
		add(f+".clientId", "missing mandatory parameter in metric for OAuth2 setup")
	}
	if o.ClientSecret == "" {
		add(f+".clientSecret", "missing mandatory parameter in metric for OAuth2 setup")
	}
	if o.TokenURL == "" {
		return
	}
	u, err := parseAddress(o.TokenURL)
	if err != nil || u.User != nil || u.Fragment != "" {
		add(f+".tokenUrl", "oauth2 tokenUrl must be an http or https URL without userinfo")
		return
	}
	// Compared decoded, sent as given: nothing a token endpoint could
	// decode or resolve into a path outside the allowed prefix.
	if reason := outbound.PathProblem(u); reason != "" {
		add(f+".tokenUrl", "oauth2 tokenUrl's path must not have %s", reason)
		return
	}
	key := tokenURLKey(u)
	if u.RawQuery == "" {
		for _, allowed := range p.tokenURLs {
			if key == allowed || (strings.HasSuffix(allowed, "/") && strings.HasPrefix(key, allowed)) {
				return
			}
		}
	}
	add(f+".tokenUrl", "oauth2 tokenUrl %q is not an allowed OAuth2 token endpoint; to allow it, start canaryd with --prometheus-oauth2-token-url %s (repeatable) or add it to the OAuth2 token URLs of its configuration file",
		redacted(u), redacted(u))
}
