package influxdb

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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

// The bounds of every InfluxDB measurement besides its timeout.
const (
	// MaxResponseBytes bounds one answer whatever --max-result-values is;
	// an answer is held to less: limits.ResponseBytesPerValue for each
	// value of --max-result-values, as the Prometheus provider's.
	MaxResponseBytes = 64 << 20
	// MaxConnsPerHost caps the connections open to one InfluxDB, for all
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
	// are read; nil when there is none (then every metric is refused,
	// naming the setting).
	Credentials *credentials.Dir
	// MaxTimeout caps a measurement's timeout (DefaultTimeout); 0 means
	// no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values an answer may have
	// (--max-result-values), all tables together; 0 means
	// limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration but
	// reads no credentials and builds no source: for `canaryd validate`.
	CheckOnly bool
}

// Provider runs InfluxDB metrics. It is safe for concurrent use and lives
// as long as the service: its transport is shared by every metric.
type Provider struct {
	creds      *credentials.Dir
	maxTimeout time.Duration
	maxValues  int
	maxBytes   int64
	checkOnly  bool
	transport  *http.Transport
	scratch    sync.Pool
	endpoints  *credentials.Cache[keys, *endpoint]
}

// keys are the credentials of a request and where it goes.
type keys struct {
	address, token, org string
}

// endpoint is what requests with one set of keys share: the query API's
// URL and the headers (read only: requests do not change them).
type endpoint struct {
	url    *url.URL // the query API's, shared by requests, which do not change it
	u      *url.URL // the address, for messages (redact.URL)
	header http.Header
	// secrets are scrubbed from every message.
	secrets []string
}

// New builds a Provider.
func New(o Options) (*Provider, error) {
	maxValues, maxBytes, err := outbound.ProviderBounds("influxdb", o.MaxTimeout, o.MaxResultValues, MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		creds: o.Credentials, maxTimeout: o.MaxTimeout, maxValues: maxValues, checkOnly: o.CheckOnly,
		maxBytes:  maxBytes,
		endpoints: credentials.NewCache[keys, *endpoint](maxEndpoints),
	}
	p.transport = outbound.NewProviderTransport(MaxConnsPerHost, nil)
	return p, nil
}

// CloseIdleConnections closes the transport's idle connections.
func (p *Provider) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// Source is the provider of provider.influxdb (see provider.Provider): it
// decodes and checks the metric's configuration, its JSON with the
// arguments substituted, reads its credentials (so that a missing one is
// a problem now, not an Error at every measurement) and returns the source
// that measures it. InfluxDB metrics carry no metadata, as in Argo.
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
		if m.Profile != "" {
			field = base + ".profile"
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

// Languages: query is Flux; profile is a value.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{"query": Flux{}}
}

// CredentialFields: none. An InfluxDB configuration holds no credential:
// the token is read from --credentials-dir.
func (*Provider) CredentialFields() []provider.CredentialField { return nil }

// Report: the report shows an InfluxDB metric's measurements only; like
// Argo's, they carry no metadata, and a request by hand would need the
// token.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}

// endpoint reads the credentials of the Secret secret, as Argo finds them
// (address, authToken and org, all required), and returns where and how
// requests with them go. The Secret is read again once it is older than
// the directory's MaxAge, so a rotated token applies. The error names the
// file, never a value.
func (p *Provider) endpoint(secret string) (*endpoint, error) {
	s, err := p.creds.Read(secret)
	if err == nil {
		err = s.Require(KeyAddress, KeyAuthToken, KeyOrg)
	}
	if err != nil {
		if errors.Is(err, credentials.ErrNoDir) {
			return nil, fmt.Errorf("no InfluxDB credentials: %v; give canaryd %s with the Secret %q (%s, %s, %s)",
				err, credentials.Flag, secret, KeyAddress, KeyAuthToken, KeyOrg)
		}
		return nil, fmt.Errorf("no InfluxDB credentials: %v", err)
	}
	var k keys
	k.address, _ = s.Get(KeyAddress)
	k.token, _ = s.Get(KeyAuthToken)
	k.org, _ = s.Get(KeyOrg)
	return p.endpoints.Get(k, newEndpoint)
}

// newEndpoint checks the address and builds the endpoint of k: the query
// API under the address (http://influxdb:8086/api/v2/query, or under its
// path), the organization in the query string, as Argo's client has it.
func newEndpoint(k keys) (*endpoint, error) {
	addr := strings.TrimRight(strings.TrimSpace(k.address), "/")
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return nil, errors.New("the InfluxDB address (address) is not a URL")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return nil, errors.New("the InfluxDB address (address) must be an absolute http or https URL, such as http://influxdb:8086")
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("the InfluxDB address (address) must have no userinfo, query or fragment: the token goes in authToken")
	case !outbound.ValidHeaderValue(k.token):
		return nil, errors.New("the InfluxDB token (authToken) holds a control character such as a line break")
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h["Authorization"] = []string{"Token " + k.token}
	// Asked for as the transport would (it adds the header itself when a
	// request has none, a header map and its value each time); answers
	// are inflated by outbound.Inflate.
	h.Set("Accept-Encoding", outbound.AcceptGzip)
	api, err := url.Parse(addr + "/api/v2/query?" + url.Values{"org": {k.org}}.Encode())
	if err != nil {
		return nil, errors.New("the InfluxDB address (address) is not a URL")
	}
	return &endpoint{
		url: api, u: u, header: h,
		secrets: []string{k.token},
	}, nil
}
