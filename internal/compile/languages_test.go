package compile

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/prometheus/promql"
)

// TestCompilePromQLFields: every PromQL field a provider declares
// (provider.Languages) is parsed, the judge's counts too, each refused on
// its path with the parser's position; conditions are compiled and the
// other fields checked all the same.
func TestCompilePromQLFields(t *testing.T) {
	const input = `metrics:
- name: errors
  successCondition: reslt[0] < 1
  provider:
    prometheus:
      query: sum(rate(x[5m])
- name: judged
  provider:
    judge:
      canary: rate(x[5m]
      baseline: rate(x[5m])
      lookback: 30m
      step: 15s
- name: counted
  provider:
    judge:
      counts:
        canary: {bad: 'x{a="1"', total: requests}
        baseline: {bad: x, total: requests)}
`
	_, _, errs := ParseAndCompile([]byte(input), nil, Builtin(noSources))
	want := map[string]string{
		"metrics[0].provider.prometheus.query":            "1:16: parse error: unclosed left parenthesis",
		"metrics[0].successCondition":                     "unknown name reslt",
		"metrics[1].provider.judge.canary":                "1:11: parse error: unclosed left parenthesis",
		"metrics[2].provider.judge.counts.canary.bad":     "1:8: parse error: unexpected end of input inside braces",
		"metrics[2].provider.judge.counts.baseline.total": "1:10: parse error: unexpected right parenthesis ')'",
	}
	got := map[string]api.FieldError{}
	for _, e := range errs {
		if _, dup := got[e.Field]; !dup {
			got[e.Field] = e
		}
	}
	for field, msg := range want {
		e, ok := got[field]
		if !ok || !strings.Contains(e.Message, msg) {
			t.Errorf("%s: %q, want %q (all: %v)", field, e.Message, msg, errs)
		}
	}
	for _, e := range errs {
		if strings.HasPrefix(e.Message, promql.Problem) && want[e.Field] == "" {
			t.Errorf("%s: refused: %s", e.Field, e.Message)
		}
	}
}

// eachQuery declares every field of its queries object PromQL.
type eachQuery struct{ provider.Func }

func (eachQuery) Languages() map[string]lang.Language {
	return map[string]lang.Language{"queries.*": promql.Language{}}
}

// TestCheckLanguagesEach: a language declared on "KEY.*" parses every
// field of that object, each refused on its own path.
func TestCheckLanguagesEach(t *testing.T) {
	errs := checkLanguages("each", eachQuery{}, []byte(`{"queries": {"b": "sum(x", "a": "up", "c": 1}, "other": "sum(("}`))
	if len(errs) != 1 || errs[0].Field != "provider.each.queries.b" || !strings.HasPrefix(errs[0].Message, promql.Problem) {
		t.Errorf("checkLanguages = %v; want queries.b refused alone", errs)
	}
	if errs := checkLanguages("each", eachQuery{}, []byte(`{"queries": "sum(x"}`)); len(errs) != 0 {
		t.Errorf("queries not an object: %v", errs)
	}
}

// eachElement declares the expr field of every element of its list PromQL.
type eachElement struct{ provider.Func }

func (eachElement) Languages() map[string]lang.Language {
	return map[string]lang.Language{"list[].expr": promql.Language{}}
}

// TestCheckLanguagesEveryElement: a language declared on "KEY[].FIELD"
// parses that field of every element of the list, each refused on its
// own path.
func TestCheckLanguagesEveryElement(t *testing.T) {
	errs := checkLanguages("each", eachElement{}, []byte(`{"list": [{"expr": "up"}, {"expr": "sum(x"}, {"other": "sum(("}, "x"], "expr": "sum(("}`))
	if len(errs) != 1 || errs[0].Field != "provider.each.list[1].expr" || !strings.HasPrefix(errs[0].Message, promql.Problem) {
		t.Errorf("checkLanguages = %v; want list[1].expr refused alone", errs)
	}
	if errs := checkLanguages("each", eachElement{}, []byte(`{"list": {"expr": "sum(x"}}`)); len(errs) != 0 {
		t.Errorf("list not a list: %v", errs)
	}
}
