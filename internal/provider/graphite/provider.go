package graphite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider"
)

// The bounds of every Graphite measurement besides its timeout.
const (
	// Timeout bounds a request, the answer read included: Argo's client
	// timeout, capped by --max-query-timeout.
	Timeout = 10 * time.Second
	// MaxResponseBytes bounds one answer whatever --max-result-values is;
	// an answer is held to less: limits.ResponseBytesPerValue for each
	// value of --max-result-values, as the Prometheus provider's.
	MaxResponseBytes = 64 << 20
	// MaxConnsPerHost caps the connections open to one Graphite, for all
	// metrics together; a request beyond it waits for one, within its
	// timeout.
	MaxConnsPerHost = 16
	// MaxRedirects is the most redirects a request follows, each of them
	// within the allow-list.
	MaxRedirects = 5
	// maxPooledBody is the largest response buffer kept for the next
	// measurement; a larger one is left to the garbage collector.
	maxPooledBody = 64 << 10
)

// Options configure a Provider.
type Options struct {
	// Allow are the URL prefixes (--graphite-allow) a metric's render
	// URL, and every redirect, must start with, with the rules of
	// --web-allow. None means every Graphite metric is refused, unless
	// AnyURL.
	Allow []string
	// AnyURL allows every http or https address when Allow is empty: the
	// command line's, where the person running canaryd is its operator.
	AnyURL bool
	// MaxTimeout caps a request's timeout (Timeout); 0 means no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most datapoints an answer may have, all
	// series together (--max-result-values); 0 means
	// limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration,
	// its address against Allow only when Allow is set, and builds no
	// source: for `canaryd validate`, which sends nothing, and whose
	// templates are served by a canaryd with its own --graphite-allow.
	CheckOnly bool
}

// Provider runs Graphite metrics. It is safe for concurrent use and lives
// as long as the service: its transport is shared by every metric.
type Provider struct {
	allow     outbound.AllowList
	timeout   time.Duration
	maxValues int
	maxBytes  int64
	checkOnly bool
	client    *http.Client
	transport *http.Transport
	bodies    sync.Pool
}

// New checks the options and builds the transport.
func New(o Options) (*Provider, error) {
	maxValues, maxBytes, err := outbound.ProviderBounds("graphite", o.MaxTimeout, o.MaxResultValues, MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	allow, err := outbound.ParseAllowList(o.Allow)
	if err != nil {
		return nil, err
	}
	if allow.Empty() && o.AnyURL {
		allow = outbound.AnyHTTP()
	}
	p := &Provider{
		allow: allow, timeout: Timeout, maxValues: maxValues, checkOnly: o.CheckOnly,
		maxBytes: maxBytes,
	}
	if o.MaxTimeout > 0 && p.timeout > o.MaxTimeout {
		p.timeout = o.MaxTimeout
	}
	p.transport = outbound.NewProviderTransport(MaxConnsPerHost, allow.Dial(outbound.Dialer(0)))
	redirects := allow.Redirects(MaxRedirects,
		func() error { return fmt.Errorf("stopped after %d redirects", MaxRedirects) },
		func(_ *url.URL, reason string) error {
			return fmt.Errorf("redirect refused: %s (--graphite-allow)", reason)
		})
	p.client = &http.Client{Transport: p.transport, CheckRedirect: redirects}
	return p, nil
}

// CloseIdleConnections closes the transport's idle connections.
func (p *Provider) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// Source is the provider of provider.graphite (see provider.Provider): it
// decodes and checks the metric's configuration, its JSON with the
// arguments substituted, and returns the source that measures it.
// Graphite metrics carry no metadata, as in Argo.
func (p *Provider) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	m, errs := decode(config)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	pl, errs := p.check(m)
	if len(errs) > 0 || p.checkOnly {
		return nil, nil, errs
	}
	return &source{p: p, plan: pl}, nil, nil
}

// Decode checks config's shape: its unknown fields and wrong types.
func (*Provider) Decode(config json.RawMessage) []api.FieldError {
	_, errs := decode(config)
	return errs
}

// Languages: query is a Graphite query; the address is a value, checked
// against the allow-list once substituted.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{"query": Query{}}
}

// CredentialFields: the address's userinfo, which the allow-list refuses
// but which must not be shown in the meantime.
func (*Provider) CredentialFields() []provider.CredentialField {
	return []provider.CredentialField{{Path: "address", URL: true}}
}

// Report: the report shows a Graphite metric's measurements only; like
// Argo's, they carry no metadata.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}

// PresentOnly: a Graphite metric is measured as of any instant (see
// window), unless its query's from or until is neither relative to now
// nor a Unix time.
func (*Provider) PresentOnly(config json.RawMessage) string {
	m, errs := decode(config)
	if len(errs) > 0 {
		return ""
	}
	v := checkQuery(m.Query, func(string, string, ...any) {})
	if v == nil {
		return ""
	}
	if w, _ := parseWindow(v); w.fixed {
		return notRelative
	}
	return ""
}

// notRelative says why a query with a fixed window cannot be measured in
// the past.
const notRelative = "the query's from or until is neither relative to now (-5min, now-1h) nor absent, " +
	"so Graphite cannot be asked for its window as of a past instant"

func (p *Provider) getBuffer() *bytes.Buffer {
	if b, ok := p.bodies.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (p *Provider) putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		p.bodies.Put(b)
	}
}
