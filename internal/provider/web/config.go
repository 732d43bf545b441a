package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' web provider configuration (WebMetric), with
// Argo's field names.
type Metric struct {
	// Method is GET (the default), POST or PUT.
	Method string `json:"method,omitempty"`
	// URL is requested; it must start with a --web-allow prefix.
	URL string `json:"url"`
	// Headers are set on the request, in order (the last of a name wins).
	Headers []Header `json:"headers,omitempty"`
	// Body, or JSONBody (sent as application/json), with POST or PUT.
	Body     string          `json:"body,omitempty"`
	JSONBody json.RawMessage `json:"jsonBody,omitempty"`
	// TimeoutSeconds bounds the request, body read included; 0 means 10.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// JSONPath selects the result in the JSON response ("{$.data.ok}");
	// empty means the whole document, "{$}".
	JSONPath string `json:"jsonPath,omitempty"`
	// Insecure skips verification of the server's TLS certificate.
	Insecure bool `json:"insecure,omitempty"`
}

// Header is one request header, as Argo's WebMetricHeader.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// DefaultTimeout is a request's timeout when timeoutSeconds is 0 (Argo's).
const DefaultTimeout = 10 * time.Second

// base is the path of the configuration relative to its metric.
const base = "provider.web"

// decode reads the configuration strictly (spec.DecodeStrict): an unknown
// field or a value of the wrong type is a problem on its path, every one of
// them reported. authentication, which Argo has, is refused with a message
// of its own, and jsonBody must be an object.
func decode(raw json.RawMessage) (*Metric, []api.FieldError) {
	var errs []api.FieldError
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		if _, ok := obj["authentication"]; ok {
			errs = append(errs, api.FieldError{Field: base + ".authentication", Message: "authentication is not supported by canaryd's web provider " +
				"(Argo uses only its oauth2 here): send a bearer token in headers, from a secret argument"})
			delete(obj, "authentication")
		}
		if b, ok := obj["jsonBody"]; ok && string(b) != "null" {
			if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
				errs = append(errs, api.FieldError{Field: base + ".jsonBody", Message: "must be an object"})
				delete(obj, "jsonBody")
			}
		}
		if len(errs) > 0 {
			raw, _ = json.Marshal(obj)
		}
	}
	var m Metric
	errs = append(errs, spec.DecodeStrict(raw, &m, base)...)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b api.FieldError) int { return strings.Compare(a.Field, b.Field) })
		return nil, errs
	}
	return &m, nil
}

// request is a configuration checked and made ready to send.
type request struct {
	method   string
	url      *url.URL
	header   http.Header
	body     []byte
	timeout  time.Duration
	path     *jsonPath
	insecure bool
}

// check validates the configuration against the provider's rules and the
// allow-list. No message quotes a header's value or the URL, either of
// which may carry a credential.
func (p *Provider) check(m *Metric) (*request, []api.FieldError) {
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: base + field, Message: fmt.Sprintf(format, args...)})
	}
	r := &request{method: m.Method, header: http.Header{}, insecure: m.Insecure}

	switch m.Method {
	case "":
		r.method = http.MethodGet
	case http.MethodGet, http.MethodPost, http.MethodPut:
	default:
		add(".method", "method must be GET, POST or PUT (Argo's web provider methods), got %q", truncate(m.Method))
	}
	switch {
	case m.Body != "" && len(m.JSONBody) > 0:
		add(".body", "use either Body or JSONBody; both cannot exists for WebMetric payload")
	case (m.Body != "" || len(m.JSONBody) > 0) && r.method == http.MethodGet:
		add(".body", "Body/JSONBody can only be used with POST or PUT WebMetric Method types")
	case len(m.JSONBody) > 0:
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.JSONBody); err != nil {
			add(".jsonBody", "must be a JSON object")
		}
		r.body = compact.Bytes()
	case m.Body != "":
		r.body = []byte(m.Body)
	}

	p.checkURL(m.URL, r, add)

	switch t := m.TimeoutSeconds; {
	case t < 0:
		add(".timeoutSeconds", "timeoutSeconds must not be negative (0 means the default, %s)", DefaultTimeout)
	case t == 0:
		r.timeout = DefaultTimeout
	case t > int64(math.MaxInt64/time.Second):
		r.timeout = time.Duration(math.MaxInt64)
	default:
		r.timeout = time.Duration(t) * time.Second
	}
	if p.maxTimeout > 0 && r.timeout > p.maxTimeout {
		r.timeout = p.maxTimeout
	}

	checkHeaders(m.Headers, r, add)
	if len(m.JSONBody) > 0 {
		r.header.Set("Content-Type", "application/json") // Argo forces it
	}

	jp, err := parseJSONPath(m.JSONPath)
	if err != nil {
		add(".jsonPath", "%v", err)
	}
	r.path = jp

	if len(errs) > 0 {
		return nil, errs
	}
	return r, nil
}

// checkURL checks the url against the allow-list (only its syntax with
// checkOnly) and sets r's.
func (p *Provider) checkURL(raw string, r *request, add func(field, format string, args ...any)) {
	switch {
	case strings.TrimSpace(raw) == "":
		add(".url", "url must be specified")
	case p.checkOnly && p.allow.Empty():
		if _, err := url.Parse(raw); err != nil {
			add(".url", "url is not a valid URL")
		}
	case p.allow.Empty():
		add(".url", "web metrics are disabled: this canaryd allows no URL; its operator enables them with --web-allow URL-PREFIX (repeatable)")
	default:
		u, err := url.Parse(raw)
		if err != nil {
			add(".url", "url is not a valid URL")
			return
		}
		if reason := p.allow.Refusal(u); reason != "" {
			add(".url", "url refused: %s (--web-allow)", reason)
			return
		}
		u.Fragment, u.RawFragment = "", ""
		r.url = u
	}
}

// checkHeaders checks the headers and sets r's: a valid name and value,
// and none that would redirect the request or that canaryd sets itself.
func checkHeaders(headers []Header, r *request, add func(field, format string, args ...any)) {
	for i, h := range headers {
		field := fmt.Sprintf(".headers[%d]", i)
		switch {
		case !outbound.ValidHeaderName(h.Key):
			add(field+".key", "invalid HTTP header name %q", truncate(h.Key))
			continue
		case !outbound.ValidHeaderValue(h.Value):
			// The value is not echoed: it may well be a credential.
			add(field+".value", "invalid HTTP header value: it must not contain control characters such as line breaks")
			continue
		}
		switch http.CanonicalHeaderKey(h.Key) {
		case "Host":
			add(field+".key", "a Host header is refused: it would send the request to another site than the allowed URL names; put the host in url")
		case "Content-Length", "Transfer-Encoding", "Connection":
			add(field+".key", "%s is set by canaryd, not by a metric", http.CanonicalHeaderKey(h.Key))
		default:
			r.header.Set(h.Key, h.Value)
		}
	}
}

// truncate keeps a quoted value in a message short.
func truncate(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
