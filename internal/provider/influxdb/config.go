package influxdb

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' InfluxDB provider configuration
// (InfluxdbMetric, v1.10), with Argo's field names.
type Metric struct {
	// Profile names the Secret of the credentials, a subdirectory of
	// --credentials-dir; DefaultSecret when empty.
	Profile string `json:"profile,omitempty"`
	// Query is a Flux query.
	Query string `json:"query,omitempty"`
}

// Argo's defaults and names.
const (
	// DefaultSecret is the Secret read when a metric names no profile
	// (Argo's DefaultInfluxdbTokensSecretName).
	DefaultSecret = "influxdb"
	// DefaultTimeout bounds a measurement: Argo's client gives up on a
	// request after 20s (influxdb-client-go's HTTPRequestTimeout), before
	// the 30s of its query's context.
	DefaultTimeout = 20 * time.Second
)

// The keys of an InfluxDB Secret (Argo's).
const (
	KeyAddress   = "address"
	KeyAuthToken = "authToken"
	KeyOrg       = "org"
)

// base is the path of the configuration relative to its metric.
const base = "provider.influxdb"

// decode reads the configuration strictly (spec.DecodeStrict): an unknown
// field or a value of the wrong type is a problem on its path.
func decode(raw json.RawMessage) (*Metric, []api.FieldError) {
	var m Metric
	if errs := spec.DecodeStrict(raw, &m, base); len(errs) > 0 {
		return nil, errs
	}
	return &m, nil
}

// plan is a configuration checked: what every measurement of it sends.
type plan struct {
	secret  string
	timeout time.Duration
	// bodyHead is the request's body up to the value of its "now" (the
	// measurement's instant), which ends it: `"}`.
	bodyHead []byte
}

// check validates the configuration, each problem on its field, and
// builds its plan.
func (p *Provider) check(m *Metric) (*plan, []api.FieldError) {
	var errs []api.FieldError
	if strings.TrimSpace(m.Query) == "" {
		errs = append(errs, api.FieldError{Field: base + ".query", Message: "the query is empty: a Flux query is required"})
	}
	if m.Profile != "" {
		if why := credentials.ValidName(m.Profile); why != "" {
			errs = append(errs, api.FieldError{Field: base + ".profile", Message: "the profile is not a Secret's name: " + why})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	pl := &plan{secret: m.Profile, timeout: DefaultTimeout}
	if pl.secret == "" {
		pl.secret = DefaultSecret
	}
	if p.maxTimeout > 0 && pl.timeout > p.maxTimeout {
		pl.timeout = p.maxTimeout
	}
	pl.bodyHead = requestHead(m.Query)
	return pl, nil
}

// requestHead writes the body of a Flux query (POST /api/v2/query) as
// Argo's client sends it, its dialect influxdb-client-go's default
// (annotations datatype, group and default; a header row; commas), up to
// the value of "now", which the measurement appends with `"}`.
func requestHead(query string) []byte {
	q, _ := json.Marshal(query) // a string: cannot fail
	var b []byte
	b = append(b, `{"query":`...)
	b = append(b, q...)
	b = append(b, `,"type":"flux","dialect":{"annotations":["datatype","group","default"],"delimiter":",","header":true},"now":"`...)
	return b
}
