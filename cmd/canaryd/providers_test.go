package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/providertest"
	"github.com/canaryd/canaryd/internal/provider/web"
)

// TestProvidersConform runs the providers' conformance suite
// (providertest) over the registry canaryd assembles (providerSet): a
// provider registered there needs a configuration here, and passes.
func TestProvidersConform(t *testing.T) {
	var mu sync.Mutex
	var closers []func()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			c()
		}
	})
	providertest.Run(t, providertest.Suite{
		Registry: func(backend string) *provider.Registry {
			sources := &cliSources{override: backend, providers: map[string]*prometheus.Provider{}}
			w, err := web.New(web.Options{Allow: []string{backend + "/"}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			closers = append(closers, w.CloseIdleConnections)
			mu.Unlock()
			d, err := datadog.New(datadog.Options{LookupEnv: func(k string) (string, bool) {
				v, ok := map[string]string{"DD_API_KEY": "api-s3cr3t", "DD_APP_KEY": "app-s3cr3t", "DD_ADDRESS": backend}[k]
				return v, ok
			}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			closers = append(closers, w.CloseIdleConnections, d.CloseIdleConnections)
			mu.Unlock()
			cw, err := cloudwatch.New(cloudwatch.Options{Load: cloudwatchtest.Config(backend)})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			closers = append(closers, cw.CloseIdleConnections)
			mu.Unlock()
			g, err := graphite.New(graphite.Options{Allow: []string{backend}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			closers = append(closers, g.CloseIdleConnections)
			mu.Unlock()
			root := t.TempDir()
			for secret, keys := range map[string]map[string]string{
				"influxdb": {"address": backend, "authToken": "influx-s3cr3t", "org": "org"},
				"newrelic": {"personal-api-key": "nr-s3cr3t", "account-id": "1", "base-url-nerdgraph": backend + "/graphql"},
			} {
				for k, v := range keys {
					if err := os.MkdirAll(filepath.Join(root, secret), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(root, secret, k), []byte(v), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			creds, err := openCredentials(root)
			if err != nil {
				t.Fatal(err)
			}
			i, n, err := newCredentialed(creds, 0, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			closers = append(closers, i.CloseIdleConnections, n.CloseIdleConnections)
			mu.Unlock()
			return newProviders(sources.source, w, d, cw, g, i, n)
		},
		Configs: map[string]func(string) json.RawMessage{
			"prometheus": func(string) json.RawMessage { return json.RawMessage(`{"query": "up"}`) },
			"cloudWatch": func(string) json.RawMessage {
				return json.RawMessage(`{"metricDataQueries": [{"id": "errors", "metricStat": {"metric": {"namespace": "app", "metricName": "errors"}, "period": 60, "stat": "Sum"}}]}`)
			},
			"judge": func(string) json.RawMessage {
				return json.RawMessage(`{"canary": "up", "baseline": "up", "lookback": "30m", "step": "1m"}`)
			},
			"datadog": func(string) json.RawMessage {
				return json.RawMessage(`{"query": "avg:trace.http.request.errors{*}", "apiVersion": "v2"}`)
			},
			"graphite": func(backend string) json.RawMessage {
				return json.RawMessage(`{"address": "` + backend + `", "query": "target=sumSeries(app.*.count)&from=-5min"}`)
			},
			"influxdb": func(string) json.RawMessage {
				return json.RawMessage(`{"query": "from(bucket: \"app\") |> range(start: -5m)"}`)
			},
			"newRelic": func(string) json.RawMessage {
				return json.RawMessage(`{"query": "FROM Transaction SELECT count(*) SINCE 5 minutes ago"}`)
			},
			"web": func(backend string) json.RawMessage {
				return json.RawMessage(`{"url": "` + backend + `/health", "jsonPath": "{$.data}"}`)
			},
		},
		Credentialed: map[string]json.RawMessage{
			"prometheus": json.RawMessage(`{"address": "https://user:a-s3cr3t@prom.example.com", "query": "up", "headers": [{"key": "Authorization", "value": "Bearer s3cr3t"}],
				"authentication": {"basicAuth": {"username": "u", "password": "pw-s3cr3t"}, "oauth2": {"tokenUrl": "https://t.example/token", "clientId": "c", "clientSecret": "cs-s3cr3t"}}}`),
			"judge": json.RawMessage(`{"canary": "up", "baseline": "up", "lookback": "30m", "step": "1m",
				"headers": [{"key": "X-Api-Key", "value": "k-s3cr3t"}], "authentication": {"basicAuth": {"username": "u", "password": "pw-s3cr3t"}}}`),
			"web": json.RawMessage(`{"url": "https://user:u-s3cr3t@status.example.com/health", "headers": [{"key": "Authorization", "value": "Bearer w-s3cr3t"}]}`),
		},
	})
}

// TestProvidersHavePages: every registered provider has its page,
// docs/providers/NAME.md (NAME in lower case: cloudwatch.md), linked from
// the documentation's index.
func TestProvidersHavePages(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("..", "..", "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&cliSources{providers: map[string]*prometheus.Provider{}}).registry(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range r.Names() {
		page := "providers/" + strings.ToLower(name) + ".md"
		if _, err := os.Stat(filepath.Join("..", "..", "docs", filepath.FromSlash(page))); err != nil {
			t.Errorf("provider %s has no page: %v", name, err)
		}
		if !strings.Contains(string(index), "("+page+")") {
			t.Errorf("docs/README.md does not link %s", page)
		}
	}
}
