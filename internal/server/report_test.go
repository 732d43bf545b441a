package server_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/canaryd/canaryd/internal/pgtest"
	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/store"
)

func init() {
	// The HTML report is text to the contract: openapi.yaml documents it
	// as a string.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// TestGetAnalysisHTML asks for a finished analysis as a browser does and
// checks that the answer is its self-contained report: the reason, a point
// per measurement, the query and the request as curl, and the headers
// that keep the browser from loading anything; behind the same token as
// the JSON.
func TestGetAnalysisHTML(t *testing.T) {
	prom := promtest.Start(t)
	s := start(t, options{prometheus: []string{prom.URL}, tokens: []string{"s3cret"}})
	auth := []string{"Authorization", "Bearer s3cret"}
	// The metric names its Prometheus: the report links to its graph.
	spec := strings.Replace(seed(t), "prometheus:\n          query:", "prometheus:\n          address: "+prom.URL+"\n          query:", 1)
	created := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, spec, auth...)
	a := created.analysis(t)
	if a.Phase != "Failed" {
		t.Fatalf("phase %s, want Failed: %d\n%s", a.Phase, created.status, created.body)
	}
	path := "/v1/analyses/" + a.ID
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

	r := s.do(http.MethodGet, path, "", "", append([]string{"Accept", browser}, auth...)...)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s:\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if got := r.header.Get("Content-Security-Policy"); got != report.ContentSecurityPolicy+"; frame-ancestors 'none'" {
		t.Errorf("Content-Security-Policy %q", got)
	}
	doc := string(r.body)
	text := html.UnescapeString(doc)
	for _, want := range []string{
		`Failed: metric "non-5xx-rate" measured [0.95] at `, "failed (2) > failureLimit (1)",
		"curl -sG '" + prom.URL + "/api/v1/query'",
		`destination_workload_namespace="echo-bad"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	n := 0
	for _, m := range a.MetricResults {
		n += len(m.Measurements)
	}
	if got := len(regexp.MustCompile(`<circle class="pt `).FindAllString(doc, -1)); got != n || n == 0 {
		t.Errorf("%d points for %d measurements", got, n)
	}
	if got := len(regexp.MustCompile(`<rect class="region r-`).FindAllString(doc, -1)); got == 0 {
		t.Error("no shaded regions: the plan's conditions were not at hand")
	}
	if got := strings.Count(doc, `<path class="sl `); got != 1 || strings.Contains(doc, "could not be drawn") {
		t.Errorf("%d series of the metric's query drawn beneath it, want 1", got)
	}
	if !strings.Contains(doc, `href="`+prom.URL+`/graph?`) {
		t.Error("no link to the Prometheus graph")
	}
	for _, bad := range []string{"<script", "s3cret"} {
		if strings.Contains(doc, bad) {
			t.Errorf("the report holds %q", bad)
		}
	}

	// JSON stays the answer to anything else.
	for _, accept := range []string{"", "application/json", "*/*", "application/json, text/html;q=0.5", "text/html;q=0"} {
		r := s.do(http.MethodGet, path, "", "", append([]string{"Accept", accept}, auth...)...)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("Accept %q: answered %s", accept, r.header.Get("Content-Type"))
		}
	}

	// The same token guards it, and an unknown id is the same 404.
	for _, headers := range [][]string{{"Accept", browser}, {"Accept", browser, "Authorization", "Bearer wrong"}} {
		r := s.do(http.MethodGet, path, "", "", headers...)
		if r.status != http.StatusUnauthorized || strings.Contains(string(r.body), "non-5xx-rate") {
			t.Errorf("without the token: %d\n%s", r.status, r.body)
		}
	}
	if r := s.do(http.MethodGet, "/v1/analyses/nope", "", "", append([]string{"Accept", browser}, auth...)...); r.status != http.StatusNotFound {
		t.Errorf("an unknown id as HTML: %d", r.status)
	}
}

// TestGetAnalysisHTMLDefaultDatasource checks the report of a metric that
// names no address: the default datasource's URL is not shown, so there is
// no graph link and the curl reads $PROMETHEUS_URL; with
// PrometheusExternalURL (--prometheus-external-url) the graph link and the
// curl name that address, and still not the one queried.
func TestGetAnalysisHTMLDefaultDatasource(t *testing.T) {
	prom := promtest.Start(t)
	const external = "https://prometheus.example.com"
	for _, o := range []options{{prometheus: []string{prom.URL}}, {prometheus: []string{prom.URL}, prometheusExternalURL: external}} {
		s := start(t, o)
		a := s.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-good", yamlType, seed(t)).analysis(t)
		for _, path := range []string{"/v1/analyses/" + a.ID, "/v1/backtests?start=-30m&end=-10m&arg.namespace=echo-good"} {
			var r response
			if strings.HasPrefix(path, "/v1/backtests") {
				r = s.do(http.MethodPost, path, yamlType, seed(t), "Accept", "text/html")
			} else {
				r = s.do(http.MethodGet, path, "", "", "Accept", "text/html")
			}
			text := html.UnescapeString(string(r.body))
			if r.status != http.StatusOK || !strings.Contains(text, "Successful: its one metric passed") {
				t.Fatalf("%s: %d:\n%s", path, r.status, r.body)
			}
			if strings.Contains(text, prom.URL) {
				t.Errorf("%s: the report shows the address canaryd queries, %s", path, prom.URL)
			}
			switch o.prometheusExternalURL {
			case "":
				if strings.Contains(text, "/graph?") || !strings.Contains(text, `curl -sG "$PROMETHEUS_URL/api/v1/query"`) {
					t.Errorf("%s: the report of a metric on the default datasource links to a graph or names no $PROMETHEUS_URL", path)
				}
			default:
				if !strings.Contains(text, `href="`+external+`/graph?`) || !strings.Contains(text, "curl -sG '"+external+"/api/v1/query'") {
					t.Errorf("%s: with an external URL, no graph link or curl to it:\n%s", path, text)
				}
			}
		}
	}
}

// TestStoreReportOnOtherReplica asks one replica for the HTML report of an
// analysis another ran, on a postgres store: it answers from the store,
// with the plan compiled again (its limits, shaded bands and the query's
// series), a point per measurement; a replica that cannot compile the
// plan (the metric's Prometheus is not one of its datasources) shows the
// metrics by name.
func TestStoreReportOnOtherReplica(t *testing.T) {
	prom := promtest.Start(t)
	st := openStore(t, pgtest.Shared(t).Database(t).URL, store.Options{})
	a := start(t, options{prometheus: []string{prom.URL}, store: st})
	b := start(t, options{prometheus: []string{prom.URL}, store: st})
	elsewhere := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, store: st})
	spec := strings.Replace(seed(t), "prometheus:\n          query:", "prometheus:\n          address: "+prom.URL+"\n          query:", 1)
	done := a.do(http.MethodPost, "/v1/analyses?wait=true&arg.namespace=echo-bad", yamlType, spec).analysis(t)
	waitStored(t, st, done.ID)
	n := 0
	for _, m := range done.MetricResults {
		n += len(m.Measurements)
	}

	for _, c := range []struct {
		name    string
		replica *testServer
		planned bool
	}{{"a replica with the plan's datasource", b, true}, {"a replica without it", elsewhere, false}} {
		r := c.replica.do(http.MethodGet, "/v1/analyses/"+done.ID, "", "", "Accept", "text/html")
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s:\n%s", c.name, r.status, r.header.Get("Content-Type"), r.body)
		}
		doc := string(r.body)
		text := html.UnescapeString(doc)
		if !strings.Contains(text, `id="verdict">Failed<`) || !strings.Contains(text, `data-metric="non-5xx-rate"`) {
			t.Errorf("%s: the report from the store does not show the verdict and the metric:\n%s", c.name, text)
		}
		if got := strings.Count(doc, `<circle class="pt `); got != n || n == 0 {
			t.Errorf("%s: %d points for %d measurements", c.name, got, n)
		}
		planned := []bool{strings.Contains(text, "limit 1"), strings.Contains(doc, `<rect class="region r-`), strings.Contains(doc, `<path class="sl `)}
		for i, what := range []string{"limits", "shaded bands", "series of the query"} {
			if planned[i] != c.planned {
				t.Errorf("%s: the report shows %s: %v, want %v", c.name, what, planned[i], c.planned)
			}
		}
	}
	if r := b.do(http.MethodGet, "/v1/analyses/nope", "", "", "Accept", "text/html"); r.status != http.StatusNotFound {
		t.Errorf("an unknown id on a store: %d", r.status)
	}
}
