package newrelic

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' New Relic provider configuration
// (NewRelicMetric, v1.10), with Argo's field names.
type Metric struct {
	// Profile names the Secret of the credentials, a subdirectory of
	// --credentials-dir; DefaultSecret when empty.
	Profile string `json:"profile,omitempty"`
	// Query is a NRQL query.
	Query string `json:"query,omitempty"`
	// Timeout is the NRQL query's timeout in seconds, which New Relic
	// applies; DefaultNRQLTimeout when nil.
	Timeout *int64 `json:"timeout,omitempty"`
}

// Argo's defaults and names.
const (
	// DefaultSecret is the Secret read when a metric names no profile
	// (Argo's DefaultNewRelicProfileSecretName).
	DefaultSecret = "newrelic"
	// DefaultNRQLTimeout is the NRQL query's timeout, in seconds, when
	// the metric sets none (Argo's defaultNrqlTimeout).
	DefaultNRQLTimeout = 5
	// DefaultTimeout bounds a measurement's request: Argo's client gives
	// up on one after 30s (newrelic-client-go's default timeout).
	DefaultTimeout = 30 * time.Second
	// MetadataQuery is the metric result's metadata key of the query, as
	// Argo's GetMetadata stores it.
	MetadataQuery = "ResolvedNewRelicQuery"
)

// The keys of a New Relic Secret (Argo's).
const (
	KeyPersonalAPIKey   = "personal-api-key"
	KeyAccountID        = "account-id"
	KeyRegion           = "region"
	KeyBaseURLNerdGraph = "base-url-nerdgraph"
	KeyBaseURLRest      = "base-url-rest"
)

// base is the path of the configuration relative to its metric.
const base = "provider.newRelic"

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
	query   string
	timeout time.Duration
	// bodyHead and bodyTail are the request's body around the account's
	// id, which the credentials give.
	bodyHead, bodyTail []byte
}

// nrqlQuery is the GraphQL query Argo sends, with its three variables.
const nrqlQuery = `query (
  $query: Nrql!, 
  $accountId: Int!,
  $timeout: Seconds!
)
{
  actor {
    account(id: $accountId) {
      nrql(query: $query, timeout: $timeout) {
        results
      }
    }
  }
}
`

// check validates the configuration, each problem on its field, and
// builds its plan.
func (p *Provider) check(m *Metric) (*plan, []api.FieldError) {
	var errs []api.FieldError
	add := func(field, msg string) {
		errs = append(errs, api.FieldError{Field: base + field, Message: msg})
	}
	if strings.TrimSpace(m.Query) == "" {
		add(".query", "the query is empty: a NRQL query is required")
	}
	if m.Timeout != nil && *m.Timeout < 0 {
		add(".timeout", "timeout value needs to be a positive value")
	}
	if m.Profile != "" {
		if why := credentials.ValidName(m.Profile); why != "" {
			add(".profile", "the profile is not a Secret's name: "+why)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	pl := &plan{secret: m.Profile, query: m.Query, timeout: DefaultTimeout}
	if pl.secret == "" {
		pl.secret = DefaultSecret
	}
	if p.maxTimeout > 0 && pl.timeout > p.maxTimeout {
		pl.timeout = p.maxTimeout
	}
	nrql := int64(DefaultNRQLTimeout)
	if m.Timeout != nil {
		nrql = *m.Timeout
	}
	pl.bodyHead, pl.bodyTail = requestBody(m.Query, nrql)
	return pl, nil
}

// requestBody writes the body of the NerdGraph request as Argo's client
// sends it, around the account's id: head ends where the id goes.
func requestBody(query string, timeout int64) (head, tail []byte) {
	gql, _ := json.Marshal(nrqlQuery) // strings: cannot fail
	q, _ := json.Marshal(query)
	head = append(head, `{"query":`...)
	head = append(head, gql...)
	head = append(head, `,"variables":{"accountId":`...)
	tail = append(tail, `,"query":`...)
	tail = append(tail, q...)
	tail = append(tail, `,"timeout":`...)
	tail = strconv.AppendInt(tail, timeout, 10)
	tail = append(tail, `}}`...)
	return head, tail
}
