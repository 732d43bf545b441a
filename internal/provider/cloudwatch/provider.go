package cloudwatch

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/logging"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider"
)

// The bounds of every CloudWatch measurement.
const (
	// DefaultTimeout bounds a measurement's request, the Prometheus
	// provider's default; --max-query-timeout lowers it.
	DefaultTimeout = 30 * time.Second
	// MaxResponseBytes bounds one answer whatever --max-result-values is;
	// an answer is held to less: limits.ResponseBytesPerValue for each
	// value of --max-result-values, as the Prometheus provider's.
	MaxResponseBytes = 64 << 20
	// MaxConnsPerHost caps the connections open to one CloudWatch
	// endpoint (or to the credentials' endpoints), for all metrics
	// together; a request beyond it waits for one, within its timeout.
	MaxConnsPerHost = 16
)

// Options configure a Provider.
type Options struct {
	// MaxTimeout caps DefaultTimeout (--max-query-timeout); 0 means no
	// cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values an answer may have, all its
	// results together (--max-result-values); 0 means
	// limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration but
	// loads no AWS configuration and builds no source: for `canaryd
	// validate`, whose templates are run by a canaryd with its own
	// credentials.
	CheckOnly bool
	// Load are options of config.LoadDefaultConfig after canaryd's own
	// (its HTTP client, no retries): tests give a region, static
	// credentials and an endpoint here. The AWS SDK's defaults apply
	// without them: the environment (AWS_REGION, AWS_ACCESS_KEY_ID,
	// AWS_ENDPOINT_URL…), the shared files, web identity, the container's
	// and the instance's roles.
	Load []func(*config.LoadOptions) error
}

// Provider runs CloudWatch metrics. It is safe for concurrent use and
// lives as long as the service: its client, and the credentials it
// caches, are shared by every metric.
type Provider struct {
	timeout   time.Duration
	maxValues int
	maxBytes  int64
	checkOnly bool
	load      []func(*config.LoadOptions) error

	mu        sync.Mutex
	api       *getMetricData  // nil until the first metric needs it
	transport *http.Transport // the AWS configuration's
	scratch   sync.Pool       // of *scratch
}

// New builds a Provider. The AWS configuration is loaded when the first
// metric is compiled, not here: a canaryd without CloudWatch metrics
// never reads it.
func New(o Options) (*Provider, error) {
	if o.MaxTimeout < 0 || o.MaxResultValues < 0 {
		return nil, errors.New("cloudwatch: the bounds must not be negative")
	}
	if o.MaxResultValues == 0 {
		o.MaxResultValues = limits.MaxResultValues
	}
	p := &Provider{
		timeout: DefaultTimeout, maxValues: o.MaxResultValues, checkOnly: o.CheckOnly, load: o.Load,
		maxBytes: min(MaxResponseBytes, int64(o.MaxResultValues)*limits.ResponseBytesPerValue+limits.ResponseBytesFixed),
	}
	if o.MaxTimeout > 0 && p.timeout > o.MaxTimeout {
		p.timeout = o.MaxTimeout
	}
	return p, nil
}

// CloseIdleConnections closes the idle connections to CloudWatch.
func (p *Provider) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.transport != nil {
		p.transport.CloseIdleConnections()
	}
}

// Source is the provider of provider.cloudWatch (see provider.Provider):
// it decodes and checks the metric's configuration, its JSON with the
// arguments substituted, loads the AWS configuration if it is not yet
// (so that a missing region is a problem now, not an Error at every
// measurement) and returns the source that measures it. CloudWatch
// metrics carry no metadata, as in Argo.
func (p *Provider) Source(raw json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	m, errs := decode(raw)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	pl, errs := check(m)
	if len(errs) > 0 || p.checkOnly {
		return nil, nil, errs
	}
	g, err := p.awsClient()
	if err != nil {
		return nil, nil, []api.FieldError{{Field: base, Message: err.Error()}}
	}
	if pl.body, err = g.encodeQueries(pl.queries); err != nil {
		return nil, nil, []api.FieldError{{Field: base + ".metricDataQueries", Message: err.Error()}}
	}
	return &source{p: p, api: g, plan: pl}, nil, nil
}

// Decode checks config's shape: its unknown fields and wrong types.
func (*Provider) Decode(raw json.RawMessage) []api.FieldError {
	_, errs := decode(raw)
	return errs
}

// Languages: each query's expression is Metric Math; every other field,
// dimension values included, is a value.
func (*Provider) Languages() map[string]lang.Language {
	return map[string]lang.Language{"metricDataQueries[].expression": MetricMath{}}
}

// CredentialFields: none. A CloudWatch configuration holds no
// credential: the AWS SDK finds them.
func (*Provider) CredentialFields() []provider.CredentialField { return nil }

// Report: the report shows a CloudWatch metric's measurements only; like
// Argo's, they carry no metadata, and a request by hand would need
// signing.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}

// awsClient loads the AWS configuration once, the first time a metric
// needs it (again after a failure), and resolves what every metric's
// GetMetricData shares: its endpoint, its signing, the credentials.
// Every request the SDK makes for the credentials (STS, SSO, the
// instance's metadata), and every GetMetricData, goes through a
// transport set as canaryd's (outbound.NewTransport: no proxy from the
// environment, its timeouts, its connections bounded), with the CA
// bundle of AWS_CA_BUNDLE or the profile's ca_bundle when there is one,
// as the SDK adds it. CloudWatch's answers are, besides, each held to
// maxBytes. Nothing is retried: a failed request is an Error
// measurement, which the analysis retries as Argo does.
func (p *Provider) awsClient() (*getMetricData, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.api != nil {
		return p.api, nil
	}
	base := awshttp.NewBuildableClient().WithTransportOptions(asOutbound)
	opts := append([]func(*config.LoadOptions) error{
		config.WithHTTPClient(base),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		// The SDK would log to stderr (a body it could not drain); what
		// matters of a request is its measurement's error.
		config.WithLogger(logging.Nop{}),
	}, p.load...)
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("the AWS configuration does not load: %v", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region) where canaryd runs, as Argo Rollouts needs it")
	}
	built, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, fmt.Errorf("the AWS configuration's HTTP client is a %T, not canaryd's", cfg.HTTPClient)
	}
	transport := built.GetTransport()
	// The client is built for what it resolves (the endpoint of
	// AWS_ENDPOINT_URL_CLOUDWATCH among them), not to send.
	g, err := newGetMetricData(cloudwatch.NewFromConfig(cfg), cfg.Credentials, transport)
	if err != nil {
		return nil, err
	}
	p.api, p.transport = g, transport
	return g, nil
}

// getScratch is a measurement's scratch, one kept from an earlier
// measurement when there is one.
func (p *Provider) getScratch(g *getMetricData) *scratch {
	if sc, ok := p.scratch.Get().(*scratch); ok {
		return sc
	}
	return newScratch(g)
}

// putScratch keeps sc for the next measurement, unless its request's
// body was long (maxPooledRequest), its answer not a 2xx read whole
// (the server may then have answered before it read the request, whose
// write may still read the body), or the transport asked for its body
// again (GetBody: the first may still be read).
func (p *Provider) putScratch(sc *scratch) {
	if !sc.reusable() {
		return
	}
	sc.req = http.Request{}
	sc.reader.Reset(nil)
	sc.out = cloudwatch.GetMetricDataOutput{}
	if sc.read.Cap() > maxPooledAnswer {
		sc.read = bytes.Buffer{}
	}
	p.scratch.Put(sc)
}

// asOutbound sets tr as outbound.NewTransport sets canaryd's transports,
// with at most MaxConnsPerHost connections to a host.
func asOutbound(tr *http.Transport) {
	o := outbound.NewTransport(outbound.TransportOptions{
		MaxConnsPerHost:        MaxConnsPerHost,
		MaxResponseHeaderBytes: 64 << 10,
		TLS:                    &tls.Config{MinVersion: tls.VersionTLS12},
	})
	tr.Proxy = o.Proxy
	tr.DialContext = o.DialContext
	tr.ForceAttemptHTTP2 = o.ForceAttemptHTTP2
	tr.TLSClientConfig = o.TLSClientConfig
	tr.TLSHandshakeTimeout = o.TLSHandshakeTimeout
	tr.ResponseHeaderTimeout = o.ResponseHeaderTimeout
	tr.MaxResponseHeaderBytes = o.MaxResponseHeaderBytes
	tr.MaxConnsPerHost = o.MaxConnsPerHost
	tr.MaxIdleConnsPerHost = o.MaxIdleConnsPerHost
	tr.MaxIdleConns = o.MaxIdleConns
	tr.IdleConnTimeout = o.IdleConnTimeout
	tr.ExpectContinueTimeout = o.ExpectContinueTimeout
}

// reusable says whether sc may be kept for the next measurement (see
// putScratch).
func (sc *scratch) reusable() bool {
	return len(sc.body) <= maxPooledRequest && sc.answered && !sc.rewound && sc.reader.Len() == 0
}

// maxPooledAnswer is the most bytes of an answer's buffer kept for the
// next measurement.
const maxPooledAnswer = 256 << 10

// limitedBody holds an answer to max bytes: reading past them fails
// with *outbound.TooLargeError, before more is read.
type limitedBody struct {
	rc        io.ReadCloser
	left, max int64
	// declared is the answer's Content-Length, -1 when it has none.
	declared int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.declared > b.max {
		return 0, &outbound.TooLargeError{Max: b.max}
	}
	if b.left <= 0 {
		// One byte more tells a body of max bytes from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, &outbound.TooLargeError{Max: b.max}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
