package main

import (
	"fmt"
	"time"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/influxdb"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/newrelic"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/web"
)

// providerSet is what canaryd's providers are built from: the one
// assembly of the registry that serve, run, validate, backtest and the
// template check all use. Each provider is built where its settings are
// read (serve from the configuration, the command line from its flags).
type providerSet struct {
	// prometheus builds provider.prometheus metrics, and through the
	// judge provider.judge ones.
	prometheus prometheus.Func
	web        *web.Provider
	datadog    *datadog.Provider
	cloudWatch *cloudwatch.Provider
	graphite   *graphite.Provider
	influxdb   *influxdb.Provider
	newRelic   *newrelic.Provider
}

// registry registers the metric providers canaryd runs, each under the
// name a metric gives its provider object: the one place where a
// provider is added, with one line.
func (s providerSet) registry() *provider.Registry {
	return provider.NewRegistry().
		Register("prometheus", s.prometheus).
		Register("judge", judge.NewProvider(s.prometheus)).
		Register("web", s.web).
		Register("datadog", s.datadog).
		Register("cloudWatch", s.cloudWatch).
		Register("graphite", s.graphite).
		Register("influxdb", s.influxdb).
		Register("newRelic", s.newRelic)
}

// newProviders is the service's registry (serve).
func newProviders(prometheus prometheus.Func, webProvider *web.Provider, datadogProvider *datadog.Provider, cloudWatchProvider *cloudwatch.Provider, graphiteProvider *graphite.Provider, influxdbProvider *influxdb.Provider, newRelicProvider *newrelic.Provider) *provider.Registry {
	return providerSet{prometheus: prometheus, web: webProvider, datadog: datadogProvider, cloudWatch: cloudWatchProvider, graphite: graphiteProvider, influxdb: influxdbProvider, newRelic: newRelicProvider}.registry()
}

// serveProviders builds the service's registry from cfg around its
// Prometheus, and a func that closes the idle connections of the
// providers it built.
func serveProviders(cfg *config.Config, prometheus prometheus.Func) (*provider.Registry, func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	webProvider, err := web.New(web.Options{Allow: cfg.WebAllow, MaxTimeout: cfg.MaxQueryTimeout, MaxResultValues: cfg.MaxResultValues})
	if err != nil {
		return nil, nil, &configError{fmt.Errorf("--web-allow: %w", err)}
	}
	closers = append(closers, webProvider.CloseIdleConnections)
	datadogProvider, err := newDatadog(cfg.CredentialsDir, cfg.MaxQueryTimeout, cfg.MaxResultValues, false)
	if err != nil {
		closeAll()
		return nil, nil, &configError{err}
	}
	closers = append(closers, datadogProvider.CloseIdleConnections)
	influxdbProvider, newRelicProvider, err := newCredentialed(cfg.CredentialsDir, cfg.MaxQueryTimeout, cfg.MaxResultValues, false)
	if err != nil {
		closeAll()
		return nil, nil, &configError{err}
	}
	closers = append(closers, influxdbProvider.CloseIdleConnections, newRelicProvider.CloseIdleConnections)
	graphiteProvider, err := graphite.New(graphite.Options{Allow: cfg.GraphiteAllow, MaxTimeout: cfg.MaxQueryTimeout, MaxResultValues: cfg.MaxResultValues})
	if err != nil {
		closeAll()
		return nil, nil, &configError{fmt.Errorf("--graphite-allow: %w", err)}
	}
	closers = append(closers, graphiteProvider.CloseIdleConnections)
	cloudWatchProvider := newCloudWatch(cfg.MaxQueryTimeout, cfg.MaxResultValues, false)
	return newProviders(prometheus, webProvider, datadogProvider, cloudWatchProvider, graphiteProvider, influxdbProvider, newRelicProvider), closeAll, nil
}

// newCloudWatch builds the CloudWatch provider, whose credentials and
// region are the AWS SDK's default chain, read at the first CloudWatch
// metric; with checkOnly it reads none.
func newCloudWatch(maxTimeout time.Duration, maxValues int, checkOnly bool) *cloudwatch.Provider {
	p, err := cloudwatch.New(cloudwatch.Options{MaxTimeout: maxTimeout, MaxResultValues: maxValues, CheckOnly: checkOnly})
	if err != nil {
		panic(err) // cannot happen: the settings are checked positive
	}
	return p
}

// newDatadog builds the Datadog provider: its credentials from the
// directory dir (--credentials-dir, none when empty) and from DD_API_KEY,
// DD_APP_KEY and DD_ADDRESS.
func newDatadog(dir string, maxTimeout time.Duration, maxValues int, checkOnly bool) (*datadog.Provider, error) {
	o := datadog.Options{MaxTimeout: maxTimeout, MaxResultValues: maxValues, CheckOnly: checkOnly}
	if dir != "" && !checkOnly {
		d, err := credentials.New(dir, credentials.Options{})
		if err != nil {
			return nil, err
		}
		o.Credentials = d
	}
	return datadog.New(o)
}

// newCredentialed builds the InfluxDB and New Relic providers, whose
// credentials are the Secrets of the directory dir (--credentials-dir,
// none when empty): with none, their metrics are refused, naming it.
func newCredentialed(dir string, maxTimeout time.Duration, maxValues int, checkOnly bool) (*influxdb.Provider, *newrelic.Provider, error) {
	var creds *credentials.Dir
	if dir != "" && !checkOnly {
		d, err := credentials.New(dir, credentials.Options{})
		if err != nil {
			return nil, nil, err
		}
		creds = d
	}
	i, err := influxdb.New(influxdb.Options{Credentials: creds, MaxTimeout: maxTimeout, MaxResultValues: maxValues, CheckOnly: checkOnly})
	if err != nil {
		return nil, nil, err
	}
	n, err := newrelic.New(newrelic.Options{Credentials: creds, MaxTimeout: maxTimeout, MaxResultValues: maxValues, CheckOnly: checkOnly})
	if err != nil {
		return nil, nil, err
	}
	return i, n, nil
}

// registry is the command line's providers: its Prometheus; web and
// Graphite providers that allow any http or https URL unless --web-allow
// or --graphite-allow narrows it (the person running the command is its
// operator); a Datadog provider that reads --credentials-dir
// (CANARYD_CREDENTIALS_DIR), and DD_API_KEY, DD_APP_KEY and DD_ADDRESS;
// InfluxDB and New Relic providers that read the same directory; and
// CloudWatch with the AWS SDK's default chain. With checkOnly
// (validate, which sends nothing), they check a configuration, and a url
// or address only against the prefixes given, and read no credentials.
func (c *cliSources) registry(checkOnly bool) *provider.Registry {
	w, err := web.New(web.Options{Allow: c.webAllow, AnyURL: true, MaxResultValues: c.maxValues, CheckOnly: checkOnly})
	if err != nil {
		panic(err) // cannot happen: each prefix was checked as a flag (prefixFlags.Set)
	}
	g, err := graphite.New(graphite.Options{Allow: c.graphiteAllow, AnyURL: true, MaxResultValues: c.maxValues, CheckOnly: checkOnly})
	if err != nil {
		panic(err) // likewise
	}
	d, err := newDatadog(c.credentialsDir, 0, c.maxValues, checkOnly)
	if err != nil {
		// No such directory: each Datadog metric is refused, naming
		// what it lacks.
		d, _ = newDatadog("", 0, c.maxValues, checkOnly)
	}
	i, n, err := newCredentialed(c.credentialsDir, 0, c.maxValues, checkOnly)
	if err != nil {
		// The directory is missing: their metrics are refused, each
		// naming what is missing.
		i, n, _ = newCredentialed("", 0, c.maxValues, checkOnly)
	}
	return newProviders(c.source, w, d, newCloudWatch(0, c.maxValues, checkOnly), g, i, n)
}
