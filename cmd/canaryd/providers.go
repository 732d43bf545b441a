package main

import (
	"os"
	"time"

	"github.com/canaryd/canaryd/internal/credentials"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/provider/datadog"
	"github.com/canaryd/canaryd/internal/provider/judge"
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
		Register("cloudWatch", s.cloudWatch)
}

// newProviders is the service's registry (serve).
func newProviders(prometheus prometheus.Func, webProvider *web.Provider, datadogProvider *datadog.Provider, cloudWatchProvider *cloudwatch.Provider) *provider.Registry {
	return providerSet{prometheus: prometheus, web: webProvider, datadog: datadogProvider, cloudWatch: cloudWatchProvider}.registry()
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

// registry is the command line's providers: its Prometheus, and a web
// provider that allows no URL (run and backtest have no --web-allow), so
// that a web metric is refused with a message naming the flag serve takes;
// with checkOnly (validate, which sends nothing), one that checks a web
// metric's configuration but not its url, which the allow-list of the
// canaryd serving the template decides. Its Datadog provider reads the
// directory CANARYD_CREDENTIALS_DIR names, and DD_API_KEY, DD_APP_KEY and
// DD_ADDRESS; with checkOnly, none.
func (c *cliSources) registry(checkOnly bool) *provider.Registry {
	w, err := web.New(web.Options{CheckOnly: checkOnly})
	if err != nil {
		panic(err) // cannot happen: there is nothing to check
	}
	d, err := newDatadog(os.Getenv("CANARYD_CREDENTIALS_DIR"), 0, c.maxValues, checkOnly)
	if err != nil {
		// No such directory: each Datadog metric is refused, naming
		// what it lacks.
		d, _ = newDatadog("", 0, c.maxValues, checkOnly)
	}
	return newProviders(c.source, w, d, newCloudWatch(0, c.maxValues, checkOnly))
}
