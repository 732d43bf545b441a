package datadog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' Datadog provider configuration (DatadogMetric,
// v1.10), with Argo's field names.
type Metric struct {
	// Interval is the window queried, ending at the measurement's
	// instant: a Go duration, 5m when empty (the default Argo's CRD sets).
	// Not the time between measurements.
	Interval string `json:"interval,omitempty"`
	// Query is a metric query: v1's only form, and v2's when Queries is
	// empty (as Queries {"query": Query}).
	Query string `json:"query,omitempty"`
	// Queries are v2's named queries, which Formula combines.
	Queries map[string]string `json:"queries,omitempty"`
	// Formula combines Queries by their names (v2).
	Formula string `json:"formula,omitempty"`
	// APIVersion is v1 (the default, as Argo's CRD sets it) or v2.
	APIVersion string `json:"apiVersion,omitempty"`
	// Aggregator reduces each v2 query's points to one: avg, min, max,
	// sum, last (the default), percentile, mean, l2norm or area.
	Aggregator string `json:"aggregator,omitempty"`
	// SecretRef names the Secret of the credentials, a subdirectory of
	// --credentials-dir.
	SecretRef SecretRef `json:"secretRef,omitempty"`
	// RequestTimeout bounds the request, 10s when empty.
	RequestTimeout string `json:"requestTimeout,omitempty"`
}

// SecretRef is Argo's SecretRef.
type SecretRef struct {
	// Name is the Secret's name: the subdirectory of --credentials-dir
	// that holds api-key, app-key and address. Empty means DD_API_KEY,
	// DD_APP_KEY and DD_ADDRESS when all three are set, else the Secret
	// named datadog.
	Name string `json:"name,omitempty"`
	// Namespaced, in Argo, looks for the Secret in the run's namespace;
	// canaryd has no namespaces, and reads Name from the directory either
	// way. As in Argo, it needs a Name.
	Namespaced bool `json:"namespaced,omitempty"`
}

// Argo's defaults and names.
const (
	DefaultInterval       = 5 * time.Minute
	DefaultRequestTimeout = 10 * time.Second
	// DefaultSecret is the Secret read when a metric names none (Argo's
	// DatadogTokensSecretName).
	DefaultSecret = "datadog"
	// DefaultAddress is Datadog's API when the credentials name none.
	DefaultAddress = "https://api.datadoghq.com"
	// DefaultAggregator is a v2 query's aggregator when the metric sets
	// none (Argo's).
	DefaultAggregator = "last"
)

// The keys of a Datadog Secret, and the environment variables that stand
// for them (Argo's).
const (
	KeyAPIKey  = "api-key"
	KeyAppKey  = "app-key"
	KeyAddress = "address"
	EnvAPIKey  = "DD_API_KEY"
	EnvAppKey  = "DD_APP_KEY"
	EnvAddress = "DD_ADDRESS"
)

// aggregators are the values Argo's CRD allows.
var aggregators = []string{"avg", "min", "max", "sum", "last", "percentile", "mean", "l2norm", "area"}

// base is the path of the configuration relative to its metric.
const base = "provider.datadog"

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
	v2       bool
	interval time.Duration
	timeout  time.Duration
	secret   string // "" for the environment, then DefaultSecret
	// query is v1's query, escaped for the URL's query string.
	query string
	// body is v2's request body with its window left out: the bytes
	// before and after the from and to numbers (see source.v2Body).
	bodyHead, bodyTail []byte
}

// check validates the configuration with Argo's rules
// (validateIncomingProps), each on its field, and builds its plan.
func (p *Provider) check(m *Metric) (*plan, []api.FieldError) {
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: base + field, Message: fmt.Sprintf(format, args...)})
	}
	pl := &plan{secret: m.SecretRef.Name}
	switch m.APIVersion {
	case "", "v1":
	case "v2":
		pl.v2 = true
	default:
		add(".apiVersion", "apiVersion must be v1 or v2, got %q", clip(m.APIVersion))
	}
	query := strings.TrimSpace(m.Query) != ""
	switch {
	case !query && len(m.Queries) == 0:
		add(".query", "Must have either a query or queries. Please review the Analysis Template.")
	case query && len(m.Queries) > 0:
		add(".queries", "Cannot have both a query and queries. Please review the Analysis Template.")
	case !pl.v2 && !query:
		add(".queries", "Query is empty. API Version v1 only supports using the query parameter in your Analysis Template.")
	case m.Formula != "" && len(m.Queries) == 0:
		add(".formula", "Formula are only valid when queries are set. Please review the Analysis Template.")
	case m.Formula == "" && len(m.Queries) > 1:
		add(".formula", "When multiple queries are provided you must include a formula.")
	}
	for _, name := range slices.Sorted(mapKeys(m.Queries)) {
		switch {
		case name == "":
			add(".queries", "a query's name must not be empty: the formula refers to it")
		case strings.TrimSpace(m.Queries[name]) == "":
			add(".queries."+name, "the query is empty")
		}
	}
	switch {
	case !pl.v2 && m.Aggregator != "":
		add(".aggregator", "Aggregator is not supported in v1. Please review the Analysis Template.")
	case m.Aggregator != "" && !slices.Contains(aggregators, m.Aggregator):
		add(".aggregator", "aggregator must be one of %s, got %q", strings.Join(aggregators, ", "), clip(m.Aggregator))
	}
	pl.interval = DefaultInterval
	if m.Interval != "" {
		d, err := time.ParseDuration(m.Interval)
		switch {
		case err != nil:
			add(".interval", "interval must be a duration (5m, 1h), got %q", clip(m.Interval))
		case d < time.Second:
			add(".interval", "interval must be at least 1s: it is the window queried, ending at the measurement's instant")
		}
		pl.interval = d
	}
	pl.timeout = DefaultRequestTimeout
	if m.RequestTimeout != "" {
		d, err := time.ParseDuration(m.RequestTimeout)
		switch {
		case err != nil:
			add(".requestTimeout", "Could not parse the request timeout: %q is not a duration. Please review the Analysis Template.", clip(m.RequestTimeout))
		case d <= 0:
			add(".requestTimeout", "Request timeout must be a positive duration (e.g. 30s). Please review the Analysis Template.")
		}
		pl.timeout = d
	}
	if p.maxTimeout > 0 && pl.timeout > p.maxTimeout {
		pl.timeout = p.maxTimeout
	}
	switch {
	case m.SecretRef.Namespaced && m.SecretRef.Name == "":
		add(".secretRef.name", "secret name is required for namespaced credentials")
	case m.SecretRef.Name != "":
		if why := credentials.ValidName(m.SecretRef.Name); why != "" {
			add(".secretRef.name", "%q is not a Secret's name: %s", clip(m.SecretRef.Name), why)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if pl.v2 {
		queries := m.Queries
		if query {
			queries = map[string]string{"query": m.Query}
		}
		aggregator := m.Aggregator
		if aggregator == "" {
			aggregator = DefaultAggregator
		}
		pl.bodyHead, pl.bodyTail = v2Body(queries, m.Formula, aggregator)
	} else {
		pl.query = queryEscape(m.Query)
	}
	return pl, nil
}

// v2Body writes the body of a scalar query (POST /api/v2/query/scalar) as
// Argo sends it, around its window: head ends where the from
// milliseconds go, and tail starts after the to milliseconds, the
// two joined by `,"to":`.
func v2Body(queries map[string]string, formula, aggregator string) (head, tail []byte) {
	type query struct {
		Aggregator string `json:"aggregator"`
		DataSource string `json:"data_source"`
		Name       string `json:"name"`
		Query      string `json:"query"`
	}
	type formulaJSON struct {
		Formula string `json:"formula"`
	}
	qs := make([]query, 0, len(queries))
	for _, name := range slices.Sorted(mapKeys(queries)) {
		qs = append(qs, query{Aggregator: aggregator, DataSource: "metrics", Name: name, Query: queries[name]})
	}
	fs := []formulaJSON{}
	if formula != "" {
		fs = append(fs, formulaJSON{Formula: formula})
	}
	q, _ := json.Marshal(qs) // strings only: cannot fail
	f, _ := json.Marshal(fs)
	head = []byte(`{"data":{"attributes":{"from":`)
	var t bytes.Buffer
	t.WriteString(`,"queries":`)
	t.Write(q)
	t.WriteString(`,"formulas":`)
	t.Write(f)
	t.WriteString(`},"type":"scalar_request"}}`)
	return head, t.Bytes()
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// clip keeps a quoted value in a message short.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
