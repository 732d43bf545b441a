package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/redact"
)

// The bounds of every web measurement. They are constants: the allow-list
// decides where requests go, and these decide what one may cost.
const (
	// MaxResponseBytes is the most of a response body canaryd reads; a
	// longer body makes the measurement an Error, found before more is
	// read.
	MaxResponseBytes = 1 << 20
	// MaxConnsPerHost caps the connections open to one host (dialling,
	// active and idle), for all metrics together; a request beyond it
	// waits for one, within its timeout.
	MaxConnsPerHost = 16
	// MaxRedirects is the most redirects a request follows, each of them
	// within the allow-list.
	MaxRedirects = 5
)

// Options configure a Provider.
type Options struct {
	// Allow are the URL prefixes (--web-allow) a metric's url, and every
	// redirect, must start with, with the rules and normalisation of
	// --webhook-allow. None means every web metric is refused, unless
	// AnyURL.
	Allow []string
	// AnyURL allows every http or https URL when Allow is empty: the
	// command line's (run, backtest), where the person running canaryd
	// is its operator.
	AnyURL bool
	// MaxTimeout caps a metric's timeoutSeconds (and the default); 0 means
	// no cap.
	MaxTimeout time.Duration
	// MaxResultValues is the most values a measurement's result may have
	// (--max-result-values), counted as the conditions see them: each
	// number, string, bool or null in it, and each key of an object; 0
	// means limits.MaxResultValues.
	MaxResultValues int
	// CheckOnly makes a provider that checks a metric's configuration,
	// its url against Allow only when Allow is set, and builds no source:
	// for `canaryd validate`, which sends nothing, and whose templates are
	// served by a canaryd with its own --web-allow.
	CheckOnly bool
}

// Provider runs web metrics. It is safe for concurrent use and lives as
// long as the service: its two transports (verifying TLS, and not, for
// insecure: true) are shared by every metric.
type Provider struct {
	checkOnly  bool
	allow      outbound.AllowList
	maxTimeout time.Duration
	maxValues  int
	clients    [2]*http.Client
	transports [2]*http.Transport
}

// New checks the options and builds the transports.
func New(o Options) (*Provider, error) {
	if o.MaxTimeout < 0 {
		return nil, errors.New("web: max timeout must not be negative")
	}
	allow, err := outbound.ParseAllowList(o.Allow)
	if err != nil {
		return nil, err
	}
	if allow.Empty() && o.AnyURL {
		allow = outbound.AnyHTTP()
	}
	if o.MaxResultValues < 0 {
		return nil, errors.New("web: max result values must not be negative")
	}
	if o.MaxResultValues == 0 {
		o.MaxResultValues = limits.MaxResultValues
	}
	p := &Provider{allow: allow, maxTimeout: o.MaxTimeout, checkOnly: o.CheckOnly, maxValues: o.MaxResultValues}
	redirects := allow.Redirects(MaxRedirects,
		func() error { return fmt.Errorf("stopped after %d redirects", MaxRedirects) },
		func(_ *url.URL, reason string) error { return fmt.Errorf("redirect refused: %s (--web-allow)", reason) })
	for i := range p.transports {
		t := outbound.NewTransport(outbound.TransportOptions{
			MaxConnsPerHost:        MaxConnsPerHost,
			MaxResponseHeaderBytes: 64 << 10,
			Dial:                   allow.Dial(outbound.Dialer(0)),
			// The request's timeout bounds the wait for the answer.
			TLS: &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: i == 1}, //nolint:gosec // insecure: true
		})
		p.transports[i] = t
		p.clients[i] = &http.Client{Transport: t, CheckRedirect: redirects}
	}
	return p, nil
}

// CloseIdleConnections closes the idle connections of both transports.
func (p *Provider) CloseIdleConnections() {
	for _, t := range p.transports {
		t.CloseIdleConnections()
	}
}

// Source is the provider of provider.web (see provider.Provider): it
// decodes and checks the metric's configuration, its JSON with the
// arguments substituted, and returns the source that measures it. Web
// metrics carry no metadata, as in Argo.
func (p *Provider) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	m, errs := decode(config)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	r, errs := p.check(m)
	if len(errs) > 0 || p.checkOnly {
		return nil, nil, errs
	}
	client := p.clients[0]
	if r.insecure {
		client = p.clients[1]
	}
	return &source{client: client, r: r, maxValues: p.maxValues}, nil, nil
}

// Decode checks config's shape: its unknown fields and wrong types, and
// authentication and jsonBody as decode refuses them.
func (*Provider) Decode(config json.RawMessage) []api.FieldError {
	_, errs := decode(config)
	return errs
}

// Languages: every field of a web metric is a value (the url, the
// headers, the jsonPath), into which an argument goes as it is and is
// then checked for what it is.
func (*Provider) Languages() map[string]lang.Language { return map[string]lang.Language{} }

// CredentialFields: the url's userinfo and the values of credential
// headers (redact.IsCredentialHeader).
func (*Provider) CredentialFields() []provider.CredentialField {
	return []provider.CredentialField{{Path: "url", URL: true}, {Path: "headers[].value", HeaderName: "key"}}
}

// Report: the report shows a web metric's measurements only; it has no
// query to link to.
func (*Provider) Report(json.RawMessage, provider.ReportOptions) provider.Report {
	return provider.Report{}
}

// PresentOnly: a web endpoint answers with what holds when it is asked,
// and cannot be asked for a past instant.
func (*Provider) PresentOnly(json.RawMessage) string {
	return "a web endpoint answers with what holds when it is asked; canaryd cannot ask it for a past instant"
}

// Credentials lists the credentials config sends: the values of its
// credential headers (redact.IsCredentialHeader).
func (*Provider) Credentials(config json.RawMessage) []string {
	var m Metric
	if json.Unmarshal(config, &m) != nil {
		return nil
	}
	var out []string
	for _, h := range m.Headers {
		if h.Value != "" && redact.IsCredentialHeader(h.Key) {
			out = append(out, h.Value)
		}
	}
	return out
}

type source struct {
	client    *http.Client
	r         *request
	maxValues int
}

// BoundByContext: a measurement returns soon after its context is done.
func (s *source) BoundByContext() bool { return true }

// Measure sends the request and reads the result as Argo does (see the
// package documentation).
func (s *source) Measure(ctx context.Context, _ time.Time) analysis.Observation {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	u := *s.r.url
	u.Host = outbound.RequestHost(&u)
	var body io.Reader
	if s.r.body != nil {
		body = bytes.NewReader(s.r.body)
	}
	req, err := http.NewRequestWithContext(ctx, s.r.method, u.String(), body)
	if err != nil {
		return analysis.Observation{Err: errors.New("building the request failed")}
	}
	req.Header = s.r.header.Clone()
	// As s.client.Do, without its copies for redirects.
	resp, err := outbound.Send(s.client, req)
	if err != nil {
		return analysis.Observation{Err: requestError(s.r.method, &u, err)}
	}
	// Drain a little so that the connection can be reused.
	defer outbound.DrainAndClose(resp.Body, 4<<10)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return analysis.Observation{Err: fmt.Errorf("received non 2xx response code: %d", resp.StatusCode)}
	}
	data, err := outbound.ReadBody(resp.Body, MaxResponseBytes)
	var tooLarge *outbound.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return analysis.Observation{Err: fmt.Errorf("the response body is longer than the %d bytes canaryd reads of a web metric's response", MaxResponseBytes)}
	case err != nil:
		return analysis.Observation{Err: fmt.Errorf("%s%s", noBytes, redact.Error(err, &u))}
	}
	return s.r.observe(data, s.maxValues)
}

// noBytes starts Argo's error for a body that cannot be read.
const noBytes = "Received no bytes in response: "

// observe turns a response body into the measurement's value: the value
// the jsonPath selects in the JSON document, with its JSON type (numbers
// are float64), written as JSON. A body that is not JSON (an empty one
// included) is the result as a string, and the conditions decide it, as in
// Argo Rollouts' fix of #4535; released Argo versions up to v1.10 call
// such a measurement Successful without evaluating any condition.
//
// The result is held to what the cost of a condition assumes of it (see
// internal/condition): the response at most maxValues values, and no string
// longer than condition.ResultStringBytes. A larger one is an Error naming
// the bound, so that no condition meets a result its cost was not checked
// for.
func (r *request) observe(data []byte, maxValues int) analysis.Observation {
	if err := countValues(data, maxValues); err != nil {
		return analysis.Observation{Err: err}
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		if len(data) > condition.ResultStringBytes {
			return analysis.Observation{Err: fmt.Errorf(
				"the response is not JSON, and longer than the %d bytes a string in a result may have", condition.ResultStringBytes)}
		}
		return analysis.Observation{Value: string(data), Display: string(data)}
	}
	v, err := r.path.find(doc)
	if err != nil {
		return analysis.Observation{Err: err}
	}
	if err := checkStrings(v); err != nil {
		return analysis.Observation{Err: err}
	}
	display, err := json.Marshal(v)
	if err != nil {
		return analysis.Observation{Err: fmt.Errorf("writing the result: %v", err)}
	}
	return analysis.Observation{Value: v, Display: string(display)}
}

// requestError is a failed request's error without the URL's query,
// userinfo or fragment, which may carry a credential, and without any
// header.
func requestError(method string, u *url.URL, err error) error {
	return fmt.Errorf("%s %s: %s", method, redact.URL(u), redact.Error(err, u))
}

// checkStrings holds a result's strings to condition.ResultStringBytes
// bytes, keys of objects included. (Its values were counted with the
// whole response, by countValues.)
func checkStrings(v any) error {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if err := checkStrings(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			if err := checkStrings(k); err != nil {
				return err
			}
			if err := checkStrings(e); err != nil {
				return err
			}
		}
	case string:
		if len(v) > condition.ResultStringBytes {
			return fmt.Errorf("the result holds a string of %d bytes, longer than the %d a string in a result may have", len(v), condition.ResultStringBytes)
		}
	}
	return nil
}

// countValues holds the whole response to maxValues values before it is
// decoded: a megabyte of JSON can hold half a million numbers, tens of
// megabytes once decoded, so the response is counted token by token, which
// keeps nothing, and refused at the first value over the bound. A body that
// is not JSON is left to observe.
func countValues(data []byte, maxValues int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or not JSON: observe decides
		}
		if _, delim := tok.(json.Delim); delim {
			continue
		}
		if n++; n > maxValues {
			return fmt.Errorf("the response has more than the %d values a measurement may have (--max-result-values), counting each key of an object; ask the endpoint for less", maxValues)
		}
	}
}
