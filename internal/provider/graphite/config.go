package graphite

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' Graphite provider configuration (GraphiteMetric,
// v1.10), with Argo's field names.
type Metric struct {
	// Address is Graphite's base URL ("http://graphite.example.com:8080");
	// the render API is its path's /render. It must start with a
	// --graphite-allow prefix.
	Address string `json:"address,omitempty"`
	// Query is the render API's query string,
	// "target=sumSeries(app.*.count)&from=-5min"; white space is removed,
	// and format=json set, as Argo does.
	Query string `json:"query,omitempty"`
}

// base is the path of the configuration relative to its metric.
const base = "provider.graphite"

// decode reads the configuration strictly (spec.DecodeStrict): an unknown
// field or a value of the wrong type is a problem on its path.
func decode(raw json.RawMessage) (*Metric, []api.FieldError) {
	var m Metric
	if errs := spec.DecodeStrict(raw, &m, base); len(errs) > 0 {
		return nil, errs
	}
	return &m, nil
}

// plan is a configuration checked and made ready to send.
type plan struct {
	// render is the render API's URL, without its query.
	render *url.URL
	// params are the query's parameters, format=json among them.
	params url.Values
	// window is the query's from and until, to be measured as of an
	// instant (see window).
	window window
	// url is the request's URL but for the window's times (prepare).
	url string
}

// whitespace is what Argo removes from a query: Go's \s.
var whitespace = regexp.MustCompile(`\s+`)

// check validates the configuration against Argo's rules and the
// allow-list. No message quotes the address, which could carry a
// credential in a form the allow-list refuses.
func (p *Provider) check(m *Metric) (*plan, []api.FieldError) {
	var errs []api.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, api.FieldError{Field: base + field, Message: fmt.Sprintf(format, args...)})
	}
	pl := &plan{}
	pl.render = p.checkAddress(m.Address, add)
	pl.params = checkQuery(m.Query, add)
	if pl.params != nil {
		w, err := parseWindow(pl.params)
		if err != "" {
			add(".query", "%s", err)
		}
		pl.window = w
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if pl.render != nil {
		pl.prepare()
	}
	return pl, nil
}

// prepare writes the request's URL but for the window: the render URL
// with the query's parameters other than from and until (with them, when
// the window is fixed), as Argo encodes them; a measurement appends the
// window's times.
func (pl *plan) prepare() {
	u := *pl.render
	u.Host = outbound.RequestHost(&u)
	v := pl.params
	if !pl.window.fixed {
		v = make(url.Values, len(pl.params))
		for k, vs := range pl.params {
			if k != "from" && k != "until" {
				v[k] = vs
			}
		}
	}
	u.RawQuery = v.Encode()
	pl.url = u.String()
}

// checkAddress checks the address against the allow-list (only its
// syntax with checkOnly) and returns the render API's URL.
func (p *Provider) checkAddress(raw string, add func(field, format string, args ...any)) *url.URL {
	if strings.TrimSpace(raw) == "" {
		add(".address", "address must be specified: Graphite's base URL, such as http://graphite.example.com:8080")
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		add(".address", "Graphite address is not a valid URL")
		return nil
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		add(".address", "the Graphite address must have no query or fragment: the query goes in query")
		return nil
	case p.checkOnly && p.allow.Empty():
		return nil
	case outbound.PathProblem(u) != "":
		add(".address", "address refused: its path has %s", outbound.PathProblem(u))
		return nil
	case p.allow.Empty():
		add(".address", "Graphite metrics are disabled: this canaryd allows no Graphite address; its operator enables them with --graphite-allow URL-PREFIX (repeatable)")
		return nil
	}
	render := *u
	render.Path = path.Join("/", u.Path, "render")
	render.RawPath = ""
	if reason := p.allow.Refusal(&render); reason != "" {
		add(".address", "address refused: %s (--graphite-allow)", reason)
		return nil
	}
	return &render
}

// checkQuery reads the query as Argo sends it: white space removed, the
// rest a URL query string, format=json set. canaryd refuses what Argo
// would drop without a word: a parameter that does not decode (a bad
// escape, a ";"). A query without target is refused too: Graphite
// answers it with no series.
func checkQuery(q string, add func(field, format string, args ...any)) url.Values {
	q = whitespace.ReplaceAllLiteralString(q, "")
	if q == "" {
		add(".query", "query must be specified: the render API's query string, such as target=sumSeries(app.*.count)&from=-5min")
		return nil
	}
	u, err := url.Parse("./render?" + q)
	if err != nil {
		add(".query", "the query is not a URL query string: it holds a control character")
		return nil
	}
	v, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		add(".query", "the query is not a URL query string: %v", err)
		return nil
	}
	if len(v["target"]) == 0 || v.Get("target") == "" {
		add(".query", "the query sets no target: it must have target=EXPRESSION, such as target=sumSeries(app.*.count)")
		return nil
	}
	v.Set("format", "json")
	return v
}
