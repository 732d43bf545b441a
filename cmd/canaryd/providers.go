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
// Prometheus; check, the registry with which a template of --templates is
// checked when it is loaded; and a func that closes the idle connections
// of the providers it built. check is the same but for the providers that
// read --credentials-dir (Datadog, InfluxDB, New Relic): it checks their
// configurations and reads no credentials. A template is loaded whether
// or not its Secret is there yet, and each analysis that uses it reads the
// Secret, as a posted document's does, so that a Secret created or
// rotated after the template was loaded takes effect without a reload.
func serveProviders(cfg *config.Config, prometheus prometheus.Func) (run, check *provider.Registry, closeAll func(), err error) {
	var closers []func()
	closeProviders := func() {
		for _, c := range closers {
			c()
		}
	}
	defer func() {
		if err != nil {
			closeProviders()
		}
	}()
	webProvider, err := web.New(web.Options{Allow: cfg.WebAllow, MaxTimeout: cfg.MaxQueryTimeout, MaxResultValues: cfg.MaxResultValues})
	if err != nil {
		return nil, nil, nil, &configError{fmt.Errorf("--web-allow: %w", err)}
	}
	closers = append(closers, webProvider.CloseIdleConnections)
	creds, err := openCredentials(cfg.CredentialsDir)
	if err != nil {
		return nil, nil, nil, &configError{err}
	}
	set := providerSet{prometheus: prometheus, web: webProvider}
	checked := set
	for _, s := range []struct {
		p         *providerSet
		creds     *credentials.Dir
		checkOnly bool
	}{{&set, creds, false}, {&checked, nil, true}} {
		if s.p.datadog, err = newDatadog(s.creds, cfg.MaxQueryTimeout, cfg.MaxResultValues, s.checkOnly); err != nil {
			return nil, nil, nil, &configError{err}
		}
		if s.p.influxdb, s.p.newRelic, err = newCredentialed(s.creds, cfg.MaxQueryTimeout, cfg.MaxResultValues, s.checkOnly); err != nil {
			return nil, nil, nil, &configError{err}
		}
	}
	closers = append(closers, set.datadog.CloseIdleConnections, set.influxdb.CloseIdleConnections, set.newRelic.CloseIdleConnections)
	graphiteProvider, err := graphite.New(graphite.Options{Allow: cfg.GraphiteAllow, MaxTimeout: cfg.MaxQueryTimeout, MaxResultValues: cfg.MaxResultValues})
	if err != nil {
		return nil, nil, nil, &configError{fmt.Errorf("--graphite-allow: %w", err)}
	}
	closers = append(closers, graphiteProvider.CloseIdleConnections)
	cloudWatchProvider := newCloudWatch(cfg.MaxQueryTimeout, cfg.MaxResultValues, false)
	set.graphite, checked.graphite = graphiteProvider, graphiteProvider
	set.cloudWatch, checked.cloudWatch = cloudWatchProvider, cloudWatchProvider
	return set.registry(), checked.registry(), closeProviders, nil
}

// openCredentials is the directory dir (--credentials-dir), nil when dir
// is empty; an error, naming the flag, when it is not a directory.
func openCredentials(dir string) (*credentials.Dir, error) {
	if dir == "" {
		return nil, nil
	}
	return credentials.New(dir, credentials.Options{})
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
// directory creds (--credentials-dir, none when nil) and from DD_API_KEY,
// DD_APP_KEY and DD_ADDRESS. With checkOnly it reads none.
func newDatadog(creds *credentials.Dir, maxTimeout time.Duration, maxValues int, checkOnly bool) (*datadog.Provider, error) {
	return datadog.New(datadog.Options{Credentials: creds, MaxTimeout: maxTimeout, MaxResultValues: maxValues, CheckOnly: checkOnly})
}

// newCredentialed builds the InfluxDB and New Relic providers, whose
// credentials are the Secrets of the directory creds (--credentials-dir,
// none when nil): with none, their metrics are refused, naming it. With
// checkOnly they read none.
func newCredentialed(creds *credentials.Dir, maxTimeout time.Duration, maxValues int, checkOnly bool) (*influxdb.Provider, *newrelic.Provider, error) {
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
// or address only against the prefixes given, and read no credentials but
// those of --credentials-dir when it is given: then a metric whose
// Secret's files are missing is a problem naming them. A
// --credentials-dir that is not a directory is an error naming the flag,
// as serve's is.
func (c *cliSources) registry(checkOnly bool) (*provider.Registry, error) {
	creds, err := openCredentials(c.credentialsDir)
	if err != nil {
		return nil, err
	}
	w, err := web.New(web.Options{Allow: c.webAllow, AnyURL: true, MaxResultValues: c.maxValues, CheckOnly: checkOnly})
	if err != nil {
		panic(err) // cannot happen: each prefix was checked as a flag (prefixFlags.Set)
	}
	g, err := graphite.New(graphite.Options{Allow: c.graphiteAllow, AnyURL: true, MaxResultValues: c.maxValues, CheckOnly: checkOnly})
	if err != nil {
		panic(err) // likewise
	}
	// validate reads the directory's credentials when it is given one.
	readsNone := checkOnly && creds == nil
	d, err := newDatadog(creds, 0, c.maxValues, readsNone)
	if err != nil {
		panic(err) // cannot happen: the bounds are canaryd's own
	}
	i, n, err := newCredentialed(creds, 0, c.maxValues, readsNone)
	if err != nil {
		panic(err) // likewise
	}
	return newProviders(c.source, w, d, newCloudWatch(0, c.maxValues, checkOnly), g, i, n), nil
}
