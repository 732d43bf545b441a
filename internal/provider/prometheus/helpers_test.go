package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// fakeProm is a Prometheus stand-in for the faults and requests a real one
// cannot be made to show. Its handler sees every request.
func fakeProm(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// answer writes a successful query response.
func answer(w http.ResponseWriter, resultType, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":%s}}`, resultType, result)
}

func newProvider(t *testing.T, opts prometheus.Options) *prometheus.Provider {
	t.Helper()
	p, err := prometheus.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func urls(us ...string) prometheus.Options {
	var o prometheus.Options
	for _, u := range us {
		o.Datasources = append(o.Datasources, prometheus.Datasource{URL: u})
	}
	return o
}

func seconds(s int64) *int64 { return &s }

// httpConfig is Prometheus' default HTTP client configuration, changed by
// set.
func httpConfig(set func(*config.HTTPClientConfig)) *config.HTTPClientConfig {
	c := config.DefaultHTTPClientConfig
	set(&c)
	return &c
}

// bearerFile authorizes with the token in a file, as bearer_token_file.
func bearerFile(path string) *config.HTTPClientConfig {
	return httpConfig(func(c *config.HTTPClientConfig) { c.BearerTokenFile = path })
}

func tlsConfig(t config.TLSConfig) *config.HTTPClientConfig {
	return httpConfig(func(c *config.HTTPClientConfig) { c.TLSConfig = t })
}

// measure validates m and takes one measurement at at.
func measure(t *testing.T, p *prometheus.Provider, m prometheus.Metric, at time.Time) analysis.Observation {
	t.Helper()
	src, _, errs := p.Source(&m)
	if len(errs) > 0 {
		t.Fatalf("Source: %v", errs)
	}
	return src.Measure(context.Background(), at)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func equalValue(got, want any) bool { return reflect.DeepEqual(got, want) }
