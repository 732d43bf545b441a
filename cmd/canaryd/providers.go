package main

import (
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/web"
)

// newProviders registers the metric providers canaryd runs, each under the
// name a metric gives its provider object: the one place where a provider
// is added. prometheus builds provider.prometheus metrics, and through the
// judge provider.judge ones (compile.Builtin registers both, as every test
// of a compiled spec does); webProvider runs provider.web metrics.
func newProviders(prometheus compile.PrometheusFunc, webProvider *web.Provider) *provider.Registry {
	return compile.Builtin(prometheus).Register("web", webProvider)
}

// registry is the command line's providers: its Prometheus, and a web
// provider that allows no URL (run and backtest have no --web-allow), so
// that a web metric is refused with a message naming the flag serve takes;
// with checkOnly (validate, which sends nothing), one that checks a web
// metric's configuration but not its url, which the allow-list of the
// canaryd serving the template decides.
func (c *cliSources) registry(checkOnly bool) *provider.Registry {
	w, err := web.New(web.Options{CheckOnly: checkOnly})
	if err != nil {
		panic(err) // cannot happen: there is nothing to check
	}
	return newProviders(c.source, w)
}
