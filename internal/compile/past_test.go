package compile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
)

// present is a provider whose metrics can be measured only as of now.
type present struct{ provider.Func }

func (present) PresentOnly(json.RawMessage) string { return "it answers with what holds now" }

// TestForBacktest: a spec compiled for a backtest (ForBacktest, which a
// planner's backtest options hold) is refused when a metric's provider
// says it cannot be measured in the past, on that provider's field and
// naming the metric; compiled to run, it is not.
func TestForBacktest(t *testing.T) {
	measure := provider.Func(func(json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
		return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation { return analysis.Observation{Value: 1.0} }), nil, nil
	})
	providers := provider.NewRegistry().Register("prometheus", measure).Register("web", present{measure})
	doc, errs := spec.Parse([]byte("metrics:\n- name: past\n  provider: {prometheus: {query: up}}\n- name: now\n  provider: {web: {url: 'http://x'}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, errs := compile.Compile(doc, nil, providers); len(errs) > 0 {
		t.Errorf("to run: %v", errs)
	}
	planner := compile.NewPlanner(compile.PlannerOptions{Providers: providers})
	for _, opts := range [][]compile.Option{{compile.ForBacktest()}, planner.Options(true)} {
		_, errs := compile.Compile(doc, nil, providers, opts...)
		if len(errs) != 1 || errs[0].Field != "metrics[1].provider.web" || !strings.Contains(errs[0].Message, `metric "now" cannot be backtested: it answers with what holds now`) {
			t.Errorf("to backtest: %v", errs)
		}
	}
}

// TestForBacktestBeforeCredentials: a metric that cannot be backtested is
// said to be so first, and what else its provider refuses (credentials
// it lacks) is not listed: a backtest would not get to them. Other
// metrics' problems are still listed.
func TestForBacktestBeforeCredentials(t *testing.T) {
	refuse := func(msg string) provider.Func {
		return provider.Func(func(json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
			return nil, nil, []api.FieldError{{Field: "provider.web", Message: msg}}
		})
	}
	providers := provider.NewRegistry().Register("prometheus", refuse("bad query")).Register("web", present{refuse("no credentials: the file web/api-key is missing")})
	doc, errs := spec.Parse([]byte("metrics:\n- name: past\n  provider: {prometheus: {query: up}}\n- name: now\n  provider: {web: {url: 'http://x'}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, errs = compile.Compile(doc, nil, providers, compile.ForBacktest())
	if len(errs) != 2 || errs[0].Field != "metrics[1].provider.web" || !strings.Contains(errs[0].Message, `metric "now" cannot be backtested`) ||
		!strings.Contains(errs[1].Message, "bad query") {
		t.Errorf("to backtest: %v; want the metric that cannot be backtested first, and no word of its credentials", errs)
	}
	for _, e := range errs {
		if strings.Contains(e.Message, "credentials") {
			t.Errorf("to backtest: %v; a metric that cannot be backtested is refused for that alone", e)
		}
	}
}
