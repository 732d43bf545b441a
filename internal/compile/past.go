package compile

import (
	"fmt"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
)

// ForBacktest makes Compile refuse a spec with a metric that cannot be
// measured as of a past instant (PastProblems): the options of a spec to
// be backtested.
func ForBacktest() Option { return func(o *compileOptions) { o.backtest = true } }

// PastProblems lists the metrics of the resolved spec s that cannot be
// measured as of a past instant, as their providers say
// (provider.Present), each a problem on its provider's field
// ("metrics[1].provider.web") naming the metric: a backtest, which
// measures each metric as of past instants, refuses them before it
// starts rather than measure the present. nil when there are none, or no
// providers.
func PastProblems(s *spec.Spec, providers Providers) []api.FieldError {
	if s == nil || providers == nil {
		return nil
	}
	var errs []api.FieldError
	for i, m := range s.Metrics {
		for _, name := range m.Provider.Names() {
			p, _ := providers.Lookup(name)
			present, ok := p.(provider.Present)
			if !ok {
				continue
			}
			if why := present.PresentOnly(m.Provider.Config(name)); why != "" {
				errs = append(errs, api.FieldError{
					Field:   fmt.Sprintf("metrics[%d].provider.%s", i, name),
					Message: fmt.Sprintf("metric %q cannot be backtested: %s", m.Name, why),
				})
			}
		}
	}
	return errs
}
