package prometheus

import (
	"encoding/json"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' Prometheus provider configuration
// (PrometheusMetric), with Argo's field names: a metric's
// provider.prometheus.
type Metric struct {
	Address        string         `json:"address,omitempty"`
	Query          string         `json:"query,omitempty"`
	Authentication Authentication `json:"authentication,omitempty"`
	// Timeout is in seconds; nil means 30.
	Timeout    *int64      `json:"timeout,omitempty"`
	Insecure   bool        `json:"insecure,omitempty"`
	Headers    []Header    `json:"headers,omitempty"`
	RangeQuery *RangeQuery `json:"rangeQuery,omitempty"`
}

// RangeQuery turns the query into a range query. Start and End are
// expressions that evaluate to a time (`now() - duration("5m")`).
type RangeQuery struct {
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	Step  string `json:"step,omitempty"`
}

// Header is one HTTP header sent with every query.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Authentication configures how queries authenticate.
type Authentication struct {
	Sigv4     SigV4     `json:"sigv4,omitempty"`
	OAuth2    OAuth2    `json:"oauth2,omitempty"`
	BasicAuth BasicAuth `json:"basicAuth,omitempty"`
}

// OAuth2 is the OAuth2 client-credentials flow.
type OAuth2 struct {
	TokenURL     string   `json:"tokenUrl,omitempty"`
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// SigV4 is AWS SigV4 signing (Amazon Managed Prometheus).
type SigV4 struct {
	Region  string `json:"region,omitempty"`
	Profile string `json:"profile,omitempty"`
	RoleARN string `json:"roleArn,omitempty"`
}

// IsZero reports whether no SigV4 field is set.
func (s SigV4) IsZero() bool { return s == SigV4{} }

// BasicAuth is HTTP basic authentication.
type BasicAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// base is the path of the configuration relative to its metric.
const base = "provider.prometheus"

// Decode reads a metric's provider.prometheus strictly (spec.DecodeStrict):
// every unknown field and value of the wrong type is a problem on its path
// ("provider.prometheus.timeout").
func Decode(config json.RawMessage) (*Metric, []api.FieldError) {
	var m Metric
	if errs := spec.DecodeStrict(config, &m, base); len(errs) > 0 {
		return nil, errs
	}
	return &m, nil
}

// Credentials lists the credentials the configuration sends, the empty
// ones left out: the values of credential headers
// (redact.IsCredentialHeader), the basic auth password and the OAuth2
// client secret.
func Credentials(headers []Header, auth Authentication) []string {
	var out []string
	for _, h := range headers {
		if h.Value != "" && redact.IsCredentialHeader(h.Key) {
			out = append(out, h.Value)
		}
	}
	for _, v := range []string{auth.BasicAuth.Password, auth.OAuth2.ClientSecret} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// CredentialFields are the fields of a configuration, Prometheus' or a
// judge's, that may hold credentials: the address's userinfo, the values
// of credential headers, the basic auth password and the OAuth2 client
// secret.
var CredentialFields = []provider.CredentialField{
	{Path: "address", URL: true},
	{Path: "headers[].value", HeaderName: "key"},
	{Path: "authentication.basicAuth.password"},
	{Path: "authentication.oauth2.clientSecret"},
}

// Func builds the measurement source of a decoded configuration, with the
// metric result's metadata; problems carry paths relative to the metric
// ("provider.prometheus.address"). A Provider's Source is one; so is what
// the command line builds (one Provider for each address). As a
// provider.Provider, it is the provider of provider.prometheus.
type Func func(m *Metric) (analysis.Source, map[string]string, []api.FieldError)

// Source decodes config (Decode) and builds its source.
func (f Func) Source(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
	m, errs := Decode(config)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return f(m)
}

// Decode checks config's shape (see Decode).
func (Func) Decode(config json.RawMessage) []api.FieldError {
	_, errs := Decode(config)
	return errs
}

// Languages are the configuration's fields written in PromQL (query) and
// in expr (the range query's start and end).
func (Func) Languages() map[string]lang.Language {
	return map[string]lang.Language{"query": promql.Language{}, "rangeQuery.start": condition.Expr, "rangeQuery.end": condition.Expr}
}

// CredentialFields are the fields that may hold credentials
// (CredentialFields).
func (Func) CredentialFields() []provider.CredentialField { return CredentialFields }

// Credentials lists the credentials config sends (see Credentials).
func (Func) Credentials(config json.RawMessage) []string {
	var m Metric
	if json.Unmarshal(config, &m) != nil {
		return nil
	}
	return Credentials(m.Headers, m.Authentication)
}
