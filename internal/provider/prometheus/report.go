package prometheus

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/redact"
)

// reportSource is how a metric's measurements were queried, beyond what
// its result carries, so that the report can link to the Prometheus graph
// and show the request as curl. It holds no credential.
type reportSource struct {
	// URL is the Prometheus' base URL, without userinfo or query; empty
	// when it is not known: no link is drawn, and the curl reads
	// $PROMETHEUS_URL.
	URL string
	// Headers are the metric's own headers, the values of credential
	// headers (redact.IsCredentialHeader) and of secret arguments replaced
	// by redact.Placeholder.
	Headers []reportHeader
	// Auth lists the credentials the metric sends besides, each shown as a
	// placeholder: "basic", "oauth2", "sigv4".
	Auth []string
	// Timeout is the query's timeout; 0 leaves it to Prometheus.
	Timeout time.Duration
	// Range, when set, makes the query a range query: its start and end
	// expressions (evaluated at the measurement's time) and step.
	Range *RangeQuery
}

// reportHeader is one HTTP header of a reportSource.
type reportHeader struct {
	Name, Value string
}

// Report declares what the report shows of a Prometheus metric: its
// resolved query (ResolvedPrometheusQuery), a link to the Prometheus graph
// at a measurement when the datasource's URL is known, and the request as
// curl, every credential a placeholder.
func (Func) Report(config json.RawMessage, o provider.ReportOptions) provider.Report {
	m, errs := Decode(config)
	if len(errs) > 0 {
		return provider.Report{}
	}
	datasource := ""
	if o.Datasource != nil {
		datasource = o.Datasource(m.Address)
	}
	src := newReportSource(m, datasource, o.Secrets)
	return provider.Report{
		Metadata: []string{ResolvedPrometheusQuery},
		Link: func(md map[string]string, at time.Time, span time.Duration) string {
			return graphURL(src, md[ResolvedPrometheusQuery], at, span)
		},
		Request: func(md map[string]string, at time.Time) (string, string) {
			q := md[ResolvedPrometheusQuery]
			if q == "" {
				return "", ""
			}
			note := "Headers and credentials of the Prometheus datasource itself are not shown."
			if src.URL == "" {
				note = "Set PROMETHEUS_URL to the Prometheus the metric queries. " + note
			}
			return curl(src, q, at), note
		},
	}
}

// newReportSource is how m is queried at datasource (its base URL, ""
// when not known), the values of secrets kept out of its headers.
func newReportSource(m *Metric, datasource string, secrets []string) *reportSource {
	src := &reportSource{URL: cleanURL(datasource), Range: m.RangeQuery, Timeout: DefaultTimeout}
	if m.Timeout != nil && *m.Timeout >= 0 && *m.Timeout < 1<<31 {
		src.Timeout = time.Duration(*m.Timeout) * time.Second
	}
	for _, h := range m.Headers {
		v := redact.Placeholder
		if !redact.IsCredentialHeader(h.Key) {
			v = redact.Scrub(h.Value, secrets...)
		}
		src.Headers = append(src.Headers, reportHeader{Name: h.Key, Value: v})
	}
	a := m.Authentication
	if a.BasicAuth.Username != "" || a.BasicAuth.Password != "" {
		src.Auth = append(src.Auth, "basic")
	}
	if a.OAuth2.TokenURL != "" || a.OAuth2.ClientID != "" {
		src.Auth = append(src.Auth, "oauth2")
	}
	if !a.Sigv4.IsZero() {
		src.Auth = append(src.Auth, "sigv4")
	}
	return src
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
func graphURL(src *reportSource, query string, at time.Time, span time.Duration) string {
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
func curl(src *reportSource, query string, at time.Time) string {
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
	te, err := condition.CompileTime(expr)
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
