package compile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
)

// ForBacktest makes Compile refuse a spec with a metric that cannot be
// measured as of a past instant (PastProblems): the options of a spec to
// be backtested.
func ForBacktest() Option { return func(o *compileOptions) { o.backtest = true } }

// pastFirst is the problems of a spec to be backtested: first the metrics
// that cannot be measured in the past (past), then the other problems but
// those of the providers of these metrics (their credentials, say), which
// a backtest would not get to: whether a metric can be backtested is said
// before what else it lacks.
func pastFirst(past, problems []api.FieldError) []api.FieldError {
	if len(past) == 0 {
		return problems
	}
	out := slices.Clip(past)
	for _, p := range problems {
		if !slices.ContainsFunc(past, func(q api.FieldError) bool {
			return p.Field == q.Field || strings.HasPrefix(p.Field, q.Field+".")
		}) {
			out = append(out, p)
		}
	}
	return out
}

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
