package report

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	cond "github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// Source is how a Prometheus metric's measurements were queried, beyond
// what its result carries, so that the report can link to the Prometheus
// graph and show the request as curl. It holds no credential.
type Source struct {
	// URL is the Prometheus' base URL, without userinfo or query; empty
	// when it is not known: no link is drawn, and the curl reads
	// $PROMETHEUS_URL.
	URL string
	// Headers are the metric's own headers, the values of credential
	// headers (redact.IsCredentialHeader) and of secret arguments replaced
	// by redact.Placeholder.
	Headers []Header
	// Auth lists the credentials the metric sends besides, each shown as a
	// placeholder: "basic", "oauth2", "sigv4".
	Auth []string
	// Timeout is the query's timeout; 0 leaves it to Prometheus.
	Timeout time.Duration
	// Range, when set, makes the query a range query: its start and end
	// expressions (evaluated at the measurement's time) and step.
	Range *prometheus.RangeQuery
}

// Header is one HTTP header of a Source.
type Header struct {
	Name, Value string
}

// SourcesOf reads the Sources of a resolved spec's Prometheus metrics,
// by metric name. datasource gives the base URL a metric's address is
// queried at ("" when it is not known); args are the argument values the
// spec was resolved with, whose secret ones (redact.IsSecretName) are kept
// out of the headers shown.
func SourcesOf(s *spec.Spec, args map[string]string, datasource func(address string) string) map[string]Source {
	if s == nil {
		return nil
	}
	var secrets []string
	for name, v := range args {
		if redact.IsSecretName(name) && len(v) > 0 {
			secrets = append(secrets, v)
		}
	}
	out := map[string]Source{}
	for i := range s.Metrics {
		m := &s.Metrics[i]
		if names := m.Provider.Names(); len(names) != 1 || names[0] != "prometheus" {
			continue
		}
		p, errs := prometheus.Decode(m.Provider.Prometheus)
		if len(errs) > 0 {
			continue
		}
		src := Source{URL: cleanURL(datasource(p.Address)), Range: p.RangeQuery}
		src.Timeout = prometheus.DefaultTimeout
		if p.Timeout != nil && *p.Timeout >= 0 && *p.Timeout < 1<<31 {
			src.Timeout = time.Duration(*p.Timeout) * time.Second
		}
		for _, h := range p.Headers {
			v := redact.Placeholder
			if !redact.IsCredentialHeader(h.Key) {
				v = redact.Scrub(h.Value, secrets...)
			}
			src.Headers = append(src.Headers, Header{Name: h.Key, Value: v})
		}
		a := p.Authentication
		if a.BasicAuth.Username != "" || a.BasicAuth.Password != "" {
			src.Auth = append(src.Auth, "basic")
		}
		if a.OAuth2.TokenURL != "" || a.OAuth2.ClientID != "" {
			src.Auth = append(src.Auth, "oauth2")
		}
		if !a.Sigv4.IsZero() {
			src.Auth = append(src.Auth, "sigv4")
		}
		out[m.Name] = src
	}
	return out
}

// cleanURL is a datasource URL as the report may show it: no userinfo, no
// query, no fragment, no trailing slash; "" when it is not an http(s) URL.
func cleanURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return strings.TrimSuffix(u.String(), "/")
}

// graphURL links to the Prometheus graph of query around at, over the
// last span; "" when the datasource is not known.
func graphURL(src Source, query string, at time.Time, span time.Duration) string {
	if src.URL == "" || query == "" {
		return ""
	}
	q := url.Values{}
	q.Set("g0.expr", oneLine(query))
	q.Set("g0.tab", "0")
	q.Set("g0.range_input", rangeInput(span))
	if !at.IsZero() {
		q.Set("g0.end_input", at.UTC().Format("2006-01-02 15:04:05"))
		q.Set("g0.moment_input", at.UTC().Format("2006-01-02 15:04:05"))
	}
	return src.URL + "/graph?" + q.Encode()
}

// rangeInput is the graph's range: the span rounded up to a whole number of
// minutes or hours, at least 15 minutes.
func rangeInput(span time.Duration) string {
	span = max(span*2, 15*time.Minute)
	switch {
	case span < 2*time.Hour:
		return fmt.Sprintf("%dm", int(math.Ceil(span.Minutes())))
	case span < 48*time.Hour:
		return fmt.Sprintf("%dh", int(math.Ceil(span.Hours())))
	}
	return fmt.Sprintf("%dd", int(math.Ceil(span.Hours()/24)))
}

// oneLine is a query on one line: PromQL reads a line break as a space,
// and a command or a link reads better without one.
func oneLine(query string) string {
	lines := strings.Split(query, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.TrimSpace(strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), " "))
}

// curl is the request of one measurement, to run by hand.
func curl(src Source, query string, at time.Time) string {
	query = oneLine(query)
	base := "$PROMETHEUS_URL"
	if src.URL != "" {
		base = src.URL
	}
	var b strings.Builder
	endpoint := "/api/v1/query"
	if src.Range != nil {
		endpoint = "/api/v1/query_range"
	}
	if src.URL != "" {
		b.WriteString("curl -sG " + shellQuote(base+endpoint))
	} else {
		b.WriteString(`curl -sG "$PROMETHEUS_URL` + endpoint + `"`)
	}
	b.WriteString(" \\\n  --data-urlencode " + shellQuote("query="+query))
	if src.Range != nil {
		start, end := rangeAt(src.Range.Start, at), rangeAt(src.Range.End, at)
		b.WriteString(" \\\n  --data-urlencode " + shellQuote("start="+start))
		b.WriteString(" \\\n  --data-urlencode " + shellQuote("end="+end))
		b.WriteString(" \\\n  --data-urlencode " + shellQuote("step="+src.Range.Step))
	} else if !at.IsZero() {
		b.WriteString(" \\\n  --data-urlencode " + shellQuote("time="+at.UTC().Format(time.RFC3339)))
	}
	if src.Timeout >= time.Second {
		b.WriteString(" \\\n  --data-urlencode " + shellQuote("timeout="+src.Timeout.Truncate(time.Second).String()))
	}
	for _, h := range src.Headers {
		b.WriteString(" \\\n  -H " + shellQuote(h.Name+": "+h.Value))
	}
	for _, a := range src.Auth {
		switch a {
		case "basic":
			b.WriteString(" \\\n  -u " + shellQuote(redact.Placeholder+":"+redact.Placeholder))
		case "oauth2":
			b.WriteString(" \\\n  -H " + shellQuote("Authorization: Bearer "+redact.Placeholder))
		case "sigv4":
			b.WriteString(" \\\n  --aws-sigv4 " + shellQuote("aws:amz:REGION:aps") + " -u " + shellQuote(redact.Placeholder+":"+redact.Placeholder))
		}
	}
	return b.String()
}

// rangeAt evaluates a range query's time expression at the measurement's
// instant, as the provider does; the expression itself when it cannot be.
func rangeAt(expr string, at time.Time) string {
	te, err := cond.CompileTime(expr)
	if err != nil || at.IsZero() {
		return expr
	}
	t, err := te.Eval(at)
	if err != nil {
		return expr
	}
	return t.UTC().Format(time.RFC3339)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
