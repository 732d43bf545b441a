package datadog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider"
)

// The bounds of every Datadog measurement besides its requestTimeout.
const (
	// MaxResponseBytes bounds one answer whatever --max-result-values is;
	// an answer is held to less: limits.ResponseBytesPerValue for each
	// value of --max-result-values, as the Prometheus provider's.
	MaxResponseBytes = 64 << 20
	// MaxConnsPerHost caps the connections open to Datadog, for all
	// metrics together; a request beyond it waits for one, within its
	// timeout.
	MaxConnsPerHost = 16
	// maxPooledBody is the largest response buffer kept for the next
	// measurement; a larger one is left to the garbage collector.
	maxPooledBody = 64 << 10
	// maxEndpoints bounds the credentials remembered with their
	// addresses; beyond, the memory is emptied.
	maxEndpoints = 64
)

// Options configure a Provider.
type Options struct {
	// Credentials is --credentials-dir, where the Secrets a metric names
	// are read; nil when there is none (then only DD_API_KEY, DD_APP_KEY
	// and DD_ADDRESS give credentials).
	Credentials *credentials.Dir
	// LookupEnv reads the environment; os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
	// MaxTimeout caps a metric's requestTimeout (and the default); 0
	// means no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values an answer may have
	// (--max-result-values): v1's points, all series together, and v2's
	// values, all columns together; 0 means limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration but
	// reads no credentials and builds no source: for `canaryd validate`,
	// whose templates are run by a canaryd with its own credentials.
	CheckOnly bool
}

// Provider runs Datadog metrics. It is safe for concurrent use and lives
// as long as the service: its transport is shared by every metric.
type Provider struct {
	creds      *credentials.Dir
	env        *keys // DD_API_KEY, DD_APP_KEY and DD_ADDRESS, when all are set
	maxTimeout time.Duration
	maxValues  int
	maxBytes   int64
	checkOnly  bool
	transport  *http.Transport
	bodies     sync.Pool
	requests   sync.Pool // v2 requests' bodies (getBody)
	endpoints  *credentials.Cache[keys, *endpoint]
}

// keys are the credentials of a request and where it goes.
type keys struct {
	apiKey, appKey, address string
}

// endpoint is what requests with one set of keys share: the URLs of the
// two APIs, and the requests every request of each starts from
// (Request.WithContext's copy), their method, URL, host and headers (read
// only: requests copy them before they change them, as http.RoundTripper
// requires).
type endpoint struct {
	v1URL, v2URL         *url.URL
	v1Request, v2Request *http.Request
	u                    *url.URL // the address, for messages (redact.URL)
	// secrets are scrubbed from every message.
	secrets []string
}

// New builds a Provider.
func New(o Options) (*Provider, error) {
	maxValues, maxBytes, err := outbound.ProviderBounds("datadog", o.MaxTimeout, o.MaxResultValues, MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	p := &Provider{
		creds: o.Credentials, maxTimeout: o.MaxTimeout, maxValues: maxValues, checkOnly: o.CheckOnly,
		maxBytes:  maxBytes,
		endpoints: credentials.NewCache[keys, *endpoint](maxEndpoints),
	}
	// Argo reads the environment only when all three are set (DD_ADDRESS
	// may be empty), and the keys only when both are non-empty.
	api, okAPI := o.LookupEnv(EnvAPIKey)
	app, okApp := o.LookupEnv(EnvAppKey)
	addr, okAddr := o.LookupEnv(EnvAddress)
	if okAPI && okApp && okAddr && api != "" && app != "" {
		p.env = &keys{apiKey: api, appKey: app, address: addr}
	}
	// Requests go to the transport itself, which follows no redirect:
	// Datadog's API sends none, and one would take the keys elsewhere.
	p.transport = outbound.NewProviderTransport(MaxConnsPerHost, nil)
	return p, nil
}

// CloseIdleConnections closes the transport's idle connections.
func (p *Provider) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// Source is the provider of provider.datadog (see provider.Provider): it
// decodes and checks the metric's configuration, its JSON with the
// arguments substituted, reads its credentials (so that a missing one is
// a problem now, not an Error at every measurement) and returns the source
// that measures it. Datadog metrics carry no metadata, as in Argo.
func (p *Provider) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	m, errs := decode(config)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	pl, errs := p.check(m)
	if len(errs) > 0 || p.checkOnly {
		return nil, nil, errs
	}
	if _, err := p.endpoint(pl.secret); err != nil {
		field := base
		if pl.secret != "" {
			field = base + ".secretRef.name"
		}
		return nil, nil, []api.FieldError{{Field: field, Message: err.Error()}}
	}
	return &source{p: p, plan: pl}, nil, nil
}

// Decode checks config's shape: its unknown fields and wrong types.
func (*Provider) Decode(config json.RawMessage) []api.FieldError {
	_, errs := decode(config)
	return errs
}

// Languages: query and each of queries are Datadog queries, formula a
// Datadog formula; every other field is a value.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{"query": Query{}, "queries.*": Query{}, "formula": Formula{}}
}

// CredentialFields: none. A Datadog configuration holds no credential:
// the keys are read from --credentials-dir or the environment.
func (*Provider) CredentialFields() []provider.CredentialField { return nil }

// Report: the report shows a Datadog metric's measurements only; like
// Argo's, they carry no metadata, and a request by hand would need the
// keys.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}

// endpoint reads the credentials of the Secret secret ("" for the
// environment, then DefaultSecret), as Argo finds them, and returns where
// and how requests with them go. The Secret is read again once it is
// older than the directory's MaxAge, so a rotated key applies. The error
// names the file or the variables, never a value.
func (p *Provider) endpoint(secret string) (*endpoint, error) {
	var k keys
	switch {
	case secret == "" && p.env != nil:
		k = *p.env
	default:
		name := secret
		if name == "" {
			name = DefaultSecret
		}
		s, err := p.creds.Read(name)
		if err == nil {
			err = s.Require(KeyAPIKey, KeyAppKey)
		}
		if err != nil {
			if errors.Is(err, credentials.ErrNoDir) || secret == "" {
				return nil, fmt.Errorf("no Datadog credentials: %v; set %s, %s and %s, or give canaryd %s with the Secret %q (%s, %s, optionally %s)",
					err, EnvAPIKey, EnvAppKey, EnvAddress, credentials.Flag, name, KeyAPIKey, KeyAppKey, KeyAddress)
			}
			return nil, fmt.Errorf("no Datadog credentials: %v", err)
		}
		k.apiKey, _ = s.Get(KeyAPIKey)
		k.appKey, _ = s.Get(KeyAppKey)
		k.address, _ = s.Get(KeyAddress)
	}
	return p.endpoints.Get(k, newEndpoint)
}

// newEndpoint checks the address (DefaultAddress when empty) and builds
// the endpoint of k.
func newEndpoint(k keys) (*endpoint, error) {
	addr := strings.TrimRight(strings.TrimSpace(k.address), "/")
	if addr == "" {
		addr = DefaultAddress
	}
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return nil, errors.New("the Datadog address (address, or DD_ADDRESS) is not a URL")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return nil, errors.New("the Datadog address (address, or DD_ADDRESS) must be an absolute http or https URL, such as " + DefaultAddress)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("the Datadog address (address, or DD_ADDRESS) must have no userinfo, query or fragment: the keys go in api-key and app-key")
	case !outbound.ValidHeaderValue(k.apiKey) || !outbound.ValidHeaderValue(k.appKey):
		return nil, errors.New("a Datadog key (api-key or app-key) holds a control character such as a line break")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h["DD-API-KEY"] = []string{k.apiKey}
	h["DD-APPLICATION-KEY"] = []string{k.appKey}
	// Asked for as the transport would (it adds the header itself when a
	// request has none, a header map and its value each time); answers
	// are inflated by outbound.Inflate.
	h.Set("Accept-Encoding", outbound.AcceptGzip)
	v1, err1 := url.Parse(addr + "/api/v1/query")
	v2, err2 := url.Parse(addr + "/api/v2/query/scalar")
	if err1 != nil || err2 != nil {
		return nil, errors.New("the Datadog address (address, or DD_ADDRESS) is not a URL")
	}
	request := func(method string, u *url.URL) *http.Request {
		return &http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Host: u.Host}
	}
	return &endpoint{v1URL: v1, v2URL: v2, v1Request: request(http.MethodGet, v1), v2Request: request(http.MethodPost, v2),
		u: u, secrets: []string{k.apiKey, k.appKey}}, nil
}
