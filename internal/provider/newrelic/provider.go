package newrelic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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

// The bounds of every New Relic measurement besides its timeout.
const (
	// MaxResponseBytes bounds one answer whatever --max-result-values is;
	// an answer is held to less: limits.ResponseBytesPerValue for each
	// value of --max-result-values, as the Prometheus provider's.
	MaxResponseBytes = 64 << 20
	// MaxConnsPerHost caps the connections open to NerdGraph, for all
	// metrics together; a request beyond it waits for one, within its
	// timeout.
	MaxConnsPerHost = 16
	// maxPooledBody is the largest buffer kept for the next measurement;
	// a larger one is left to the garbage collector.
	maxPooledBody = 64 << 10
	// maxEndpoints bounds the credentials remembered with their
	// addresses; beyond, the memory is emptied.
	maxEndpoints = 64
)

// The NerdGraph APIs of New Relic's regions (newrelic-client-go's); a
// region the client does not know is the US's, as in Argo.
var nerdGraphURLs = map[string]string{
	"us":      "https://api.newrelic.com/graphql",
	"eu":      "https://api.eu.newrelic.com/graphql",
	"staging": "https://staging-api.newrelic.com/graphql",
}

// Options configure a Provider.
type Options struct {
	// Credentials is --credentials-dir, where the Secrets a metric names
	// are read; nil when there is none (then every metric is refused,
	// naming the setting).
	Credentials *credentials.Dir
	// MaxTimeout caps a measurement's request (DefaultTimeout); 0 means
	// no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values an answer may have
	// (--max-result-values): every value of every result together; 0
	// means limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration but
	// reads no credentials and builds no source: for `canaryd validate`.
	CheckOnly bool
}

// Provider runs New Relic metrics. It is safe for concurrent use and
// lives as long as the service: its transport is shared by every metric.
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
	apiKey, accountID, region, nerdGraph string
}

// endpoint is what requests with one set of keys share: NerdGraph's URL,
// the account and the headers (read only: requests do not change them).
type endpoint struct {
	url     *url.URL
	account int64
	header  http.Header
	// secrets are scrubbed from every message.
	secrets []string
}

// New builds a Provider.
func New(o Options) (*Provider, error) {
	maxValues, maxBytes, err := outbound.ProviderBounds("newrelic", o.MaxTimeout, o.MaxResultValues, MaxResponseBytes)
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

// Source is the provider of provider.newRelic (see provider.Provider): it
// decodes and checks the metric's configuration, its JSON with the
// arguments substituted, reads its credentials (so that a missing one is
// a problem now, not an Error at every measurement) and returns the source
// that measures it, and Argo's metadata: the query, as
// ResolvedNewRelicQuery.
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
	return &source{p: p, plan: pl}, map[string]string{MetadataQuery: m.Query}, nil
}

// Decode checks config's shape: its unknown fields and wrong types.
func (*Provider) Decode(config json.RawMessage) []api.FieldError {
	_, errs := decode(config)
	return errs
}

// Languages: query is NRQL; profile and timeout are values.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{"query": NRQL{}}
}

// CredentialFields: none. A New Relic configuration holds no credential:
// the key is read from --credentials-dir.
func (*Provider) CredentialFields() []provider.CredentialField { return nil }

// Report: the report lists a New Relic metric's query, as Argo's metadata
// keeps it; a request by hand would need the key.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{Metadata: []string{MetadataQuery}}
}

// PresentOnly: a NRQL query's window (SINCE, UNTIL) is New Relic's
// present, and NerdGraph runs it as of nothing else.
func (*Provider) PresentOnly(json.RawMessage) string {
	return "New Relic runs a NRQL query's window (SINCE … AGO) as of its own present, and NerdGraph has no instant to run it as of; " +
		"canaryd cannot measure a New Relic metric in the past"
}

// endpoint reads the credentials of the Secret secret, as Argo finds them
// (personal-api-key and account-id required; region, us by default, or
// base-url-nerdgraph), and returns where and how requests with them go.
// The Secret is read again once it is older than the directory's MaxAge,
// so a rotated key applies. The error names the file, never a value.
func (p *Provider) endpoint(secret string) (*endpoint, error) {
	s, err := p.creds.Read(secret)
	if err == nil {
		err = s.Require(KeyPersonalAPIKey, KeyAccountID)
	}
	if err != nil {
		if errors.Is(err, credentials.ErrNoDir) {
			return nil, fmt.Errorf("no New Relic credentials: %v; give canaryd %s with the Secret %q (%s, %s, optionally %s or %s)",
				err, credentials.Flag, secret, KeyPersonalAPIKey, KeyAccountID, KeyRegion, KeyBaseURLNerdGraph)
		}
		return nil, fmt.Errorf("no New Relic credentials: %v", err)
	}
	var k keys
	k.apiKey, _ = s.Get(KeyPersonalAPIKey)
	k.accountID, _ = s.Get(KeyAccountID)
	k.region, _ = s.Get(KeyRegion)
	k.nerdGraph, _ = s.Get(KeyBaseURLNerdGraph)
	return p.endpoints.Get(k, func(k keys) (*endpoint, error) { return newEndpoint(secret, k) })
}

// newEndpoint checks the keys of the Secret secret and builds their
// endpoint.
func newEndpoint(secret string, k keys) (*endpoint, error) {
	account, err := strconv.ParseInt(strings.TrimSpace(k.accountID), 10, 64)
	if err != nil || account < 0 || account > 1<<31-1 {
		return nil, fmt.Errorf("could not parse account ID: the file %s/%s in the credentials directory (%s) must hold a New Relic account's number", secret, KeyAccountID, credentials.Flag)
	}
	addr := strings.TrimSpace(k.nerdGraph)
	if addr == "" {
		var ok bool
		if addr, ok = nerdGraphURLs[strings.ToLower(strings.TrimSpace(k.region))]; !ok {
			addr = nerdGraphURLs["us"]
		}
	}
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the NerdGraph address (%s) is not a URL", KeyBaseURLNerdGraph)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("the NerdGraph address (%s) must be an absolute http or https URL, such as %s", KeyBaseURLNerdGraph, nerdGraphURLs["us"])
	case u.User != nil || u.Fragment != "":
		return nil, fmt.Errorf("the NerdGraph address (%s) must have no userinfo or fragment: the key goes in %s", KeyBaseURLNerdGraph, KeyPersonalAPIKey)
	case !outbound.ValidHeaderValue(k.apiKey):
		return nil, fmt.Errorf("the New Relic key (%s) holds a control character such as a line break", KeyPersonalAPIKey)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h["Api-Key"] = []string{k.apiKey}
	// Asked for as the transport would (it adds the header itself when a
	// request has none, a header map and its value each time); answers
	// are inflated by outbound.Inflate.
	h.Set("Accept-Encoding", outbound.AcceptGzip)
	return &endpoint{url: u, account: account, header: h, secrets: []string{k.apiKey}}, nil
}
