package graphite_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/providertest"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestBadInput: each problem of a configuration is refused on its field,
// and no source is built.
func TestBadInput(t *testing.T) {
	const allowed = "http://graphite.example.com:8080"
	p := newProvider(t, graphite.Options{Allow: []string{allowed}})
	for _, tt := range []struct {
		name, config, field, message string
	}{
		{"address of the wrong type", `{"address": 5, "query": "target=a"}`, "provider.graphite.address", ""},
		{"query of the wrong type", `{"address": "http://graphite.example.com:8080", "query": ["target=a"]}`, "provider.graphite.query", ""},
		{"an unknown field", `{"address": "http://graphite.example.com:8080", "query": "target=a", "timeout": "5s"}`, "provider.graphite.timeout", ""},
		{"no address", `{"query": "target=a"}`, "provider.graphite.address", "address must be specified"},
		{"no query", `{"address": "http://graphite.example.com:8080"}`, "provider.graphite.query", "query must be specified"},
		{"a query without target", `{"address": "http://graphite.example.com:8080", "query": "from=-5min"}`, "provider.graphite.query", "sets no target"},
		{"a query with a bad escape", `{"address": "http://graphite.example.com:8080", "query": "target=a%zz"}`, "provider.graphite.query", "not a URL query string"},
		{"a query with a semicolon", `{"address": "http://graphite.example.com:8080", "query": "target=a;from=-1h"}`, "provider.graphite.query", "not a URL query string"},
		{"from twice", `{"address": "http://graphite.example.com:8080", "query": "target=a&from=-1h&from=-2h"}`, "provider.graphite.query", "more than once"},
		{"an address outside the allow-list", `{"address": "http://other.example.com:8080", "query": "target=a"}`, "provider.graphite.address", "does not start with any allowed prefix (--graphite-allow)"},
		{"an address with a query", `{"address": "http://graphite.example.com:8080/?x=1", "query": "target=a"}`, "provider.graphite.address", "no query or fragment"},
		{"an address with credentials", `{"address": "http://user:hunter2@graphite.example.com:8080", "query": "target=a"}`, "provider.graphite.address", "credentials"},
		{"an address that is not http", `{"address": "ftp://graphite.example.com:8080", "query": "target=a"}`, "provider.graphite.address", "not an http or https URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, _, errs := p.Source(json.RawMessage(tt.config))
			if src != nil || len(errs) == 0 {
				t.Fatalf("accepted: %v", errs)
			}
			if errs[0].Field != tt.field || !strings.Contains(errs[0].Message, tt.message) {
				t.Errorf("got %v, want %s: …%s…", errs, tt.field, tt.message)
			}
			if strings.Contains(fmt.Sprint(errs), "hunter2") {
				t.Errorf("a credential in %v", errs)
			}
			if d := p.Decode(json.RawMessage(tt.config)); tt.message == "" && len(d) == 0 {
				t.Errorf("Decode accepted a shape Source refuses")
			}
		})
	}
}

// TestAllow: the address's render URL must start with a --graphite-allow
// prefix (the rules of --web-allow); with none, serve refuses every
// Graphite metric, and the command line (AnyURL) allows every http or
// https address unless a prefix narrows it. validate (CheckOnly) checks
// no address.
func TestAllow(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       graphite.Options
		address string
		refused string // "" when allowed
	}{
		{"serve, no prefix: refused", graphite.Options{}, "http://graphite.example.com", "Graphite metrics are disabled"},
		{"serve, the prefix's host", graphite.Options{Allow: []string{"http://graphite.example.com"}}, "http://graphite.example.com", ""},
		{"serve, another host", graphite.Options{Allow: []string{"http://graphite.example.com"}}, "http://graphite.example.com.evil.com", "allowed prefix"},
		{"serve, another port", graphite.Options{Allow: []string{"http://graphite.example.com"}}, "http://graphite.example.com:8080", "allowed prefix"},
		{"serve, another scheme", graphite.Options{Allow: []string{"https://graphite.example.com"}}, "http://graphite.example.com", "allowed prefix"},
		{"serve, under the prefix's path", graphite.Options{Allow: []string{"http://g.example.com/graphite/"}}, "http://g.example.com/graphite", ""},
		{"serve, beside the prefix's path", graphite.Options{Allow: []string{"http://g.example.com/graphite"}}, "http://g.example.com/graphitex", "allowed prefix"},
		{"serve, the render path only", graphite.Options{Allow: []string{"http://g.example.com/render"}}, "http://g.example.com", ""},
		{"serve, a dot segment", graphite.Options{Allow: []string{"http://g.example.com/graphite"}}, "http://g.example.com/graphite/../admin", "segments"},
		{"command line, no prefix: any http", graphite.Options{AnyURL: true}, "http://graphite.example.com:8080", ""},
		{"command line, no prefix: any https", graphite.Options{AnyURL: true}, "https://10.0.0.1", ""},
		{"command line, no prefix: not ftp", graphite.Options{AnyURL: true}, "ftp://graphite.example.com", "not an http or https URL"},
		{"command line, no prefix: no credentials", graphite.Options{AnyURL: true}, "http://u:p@graphite.example.com", "credentials"},
		{"command line, a prefix narrows it", graphite.Options{AnyURL: true, Allow: []string{"http://graphite.example.com"}}, "http://other.example.com", "allowed prefix"},
		{"command line, within the prefix", graphite.Options{AnyURL: true, Allow: []string{"http://graphite.example.com"}}, "http://graphite.example.com", ""},
		{"validate checks no address", graphite.Options{CheckOnly: true}, "http://anywhere.example.com", ""},
		{"validate, a prefix given: checked", graphite.Options{CheckOnly: true, Allow: []string{"http://graphite.example.com"}}, "http://anywhere.example.com", "allowed prefix"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, tt.o)
			_, _, errs := p.Source(config(tt.address, "target=a.b"))
			switch {
			case tt.refused == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tt.refused != "" && (len(errs) == 0 || errs[0].Field != "provider.graphite.address" || !strings.Contains(errs[0].Message, tt.refused)):
				t.Errorf("got %v, want address refused: %s", errs, tt.refused)
			}
		})
	}
	if _, err := graphite.New(graphite.Options{Allow: []string{"http://g.example.com/?q=1"}}); err == nil {
		t.Error("a prefix with a query was accepted")
	}
}

// TestRedirects: a redirect is followed within the allow-list only.
func TestRedirects(t *testing.T) {
	b := newBackend(t)
	b.set("number.json", 200, 0)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request reached a server outside the allow-list")
	}))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := b.srv.URL
		if strings.HasPrefix(r.URL.Path, "/out") {
			to = elsewhere.URL
		}
		http.Redirect(w, r, to+"/render?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer redirect.Close()
	p := newProvider(t, graphite.Options{Allow: []string{b.srv.URL, redirect.URL}})
	if _, got := run(t, p, config(redirect.URL, query), "true", ""); got.phase != "Successful" {
		t.Errorf("within: %+v", got)
	}
	if _, got := run(t, p, config(redirect.URL+"/out", query), "true", ""); got.phase != "Error" || !strings.Contains(got.message, "redirect refused") {
		t.Errorf("outside: %+v", got)
	}
}

// TestArguments: a value goes into a query as one path segment, a number
// as a function's argument, or the inside of a string literal; anything
// that would add a segment, widen the series, call a function or change
// the query string is refused, naming the field.
func TestArguments(t *testing.T) {
	const q = `{address: "http://g", query: "target=summarize(app.{{args.a}}.count, '{{args.b}}', 'sum')&from=-{{args.c}}"}`
	for _, tt := range []struct {
		name, a, b, c, want, refused string
	}{
		{"a segment, a literal, a window", "checkout-api", "5min", "10min", "target=summarize(app.checkout-api.count, '5min', 'sum')&from=-10min", ""},
		{"non-ASCII letters", "café", "1h", "1h", "app.café.count", ""},
		{"a dot adds a segment", "checkout.v2", "5min", "5min", "", "provider.graphite.query"},
		{"a wildcard widens it", "*", "5min", "5min", "", "provider.graphite.query"},
		{"a brace list widens it", "{a,b}", "5min", "5min", "", "provider.graphite.query"},
		{"a function", "a)|alias(b", "5min", "5min", "", "provider.graphite.query"},
		{"another parameter", "a&target=b", "5min", "5min", "", "provider.graphite.query"},
		{"a space", "a b", "5min", "5min", "", "provider.graphite.query"},
		{"empty", "", "5min", "5min", "", "provider.graphite.query"},
		{"a quote ends the literal", "a", "5min', 'max", "5min", "", "provider.graphite.query"},
		{"a literal may hold dots", "a", "app.x", "5min", "'app.x'", ""},
		{"a window may not hold &", "a", "5min", "5min&target=x", "", "provider.graphite.query"},
	} {
		got, refused := resolve(t, q, map[string]string{"a": tt.a, "b": tt.b, "c": tt.c})
		switch {
		case tt.refused == "" && (refused != "" || !strings.Contains(got, tt.want)):
			t.Errorf("%s: %s %s; want %s", tt.name, got, refused, tt.want)
		case tt.refused != "" && !strings.Contains(refused, tt.refused):
			t.Errorf("%s: %s %q; want refused in %s", tt.name, got, refused, tt.refused)
		}
	}
	if got, refused := resolve(t, `{address: "http://g", query: "target=scale(a.b, {{args.a}})"}`, map[string]string{"a": "0.5", "b": "x", "c": "x"}); refused != "" || !strings.Contains(got, "scale(a.b, 0.5)") {
		t.Errorf("a number as an argument: %s %s", got, refused)
	}
	if _, refused := resolve(t, `{address: "http://g", query: "target=a.{{args.a}}.b"}`, map[string]string{"a": "0.5", "b": "x", "c": "x"}); refused == "" {
		t.Error("a number with a dot as a path segment was accepted")
	}
}

// resolve substitutes args into a Graphite metric with the languages the
// provider declares, as internal/compile does.
func resolve(t *testing.T, provider string, args map[string]string) (string, string) {
	t.Helper()
	doc, errs := spec.Parse([]byte("metrics:\n- name: m\n  provider:\n    graphite: " + provider + "\nargs: [{name: a}, {name: b}, {name: c}]\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	langs := map[string]spec.Language{}
	for f, l := range (&graphite.Provider{}).Languages() {
		langs["provider.graphite."+f] = l
	}
	res, errs := doc.Spec.Resolve(args, spec.ResolveOptions{Conditions: condition.Expr, Languages: langs})
	if len(errs) > 0 {
		return "", errs[0].Field + ": " + errs[0].Message
	}
	var m graphite.Metric
	if err := json.Unmarshal(res.Spec.Metrics[0].Provider.Graphite, &m); err != nil {
		t.Fatal(err)
	}
	return m.Query, ""
}

// TestConformance runs the providers' conformance suite over Graphite.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Registry: func(backend string) *provider.Registry {
			p, err := graphite.New(graphite.Options{Allow: []string{backend}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.CloseIdleConnections)
			return provider.NewRegistry().Register("graphite", p)
		},
		Configs: map[string]func(string) json.RawMessage{
			"graphite": func(backend string) json.RawMessage { return config(backend, query) },
		},
	})
}
