package compile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// echoingSources is a Prometheus that puts the query it is sent in its
// errors and warnings, as Prometheus' parse errors do.
func echoingSources(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	query := m.Query
	return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{
			Err:      errors.New("bad_data: invalid parameter \"query\": 1:5: parse error in " + query),
			Metadata: map[string]string{"warnings": "PromQL warning: " + query},
			Display:  "[1]",
		}
	}), map[string]string{"ResolvedPrometheusQuery": query}, nil
}

// The value of a secret argument shows nowhere the compiled plan shows
// text: the conditions in its messages, the query in its metadata, its
// sources' errors, its conditions' errors, the problems of Compile.
func TestCompileKeepsSecretValuesOutOfEverythingShown(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	doc := mustParse(t, `
args: [{name: api-token}, {name: tenant, valueFrom: {secretKeyRef: {name: s, key: k}}}, {name: ns, value: echo}]
metrics:
- name: m
  successCondition: 'result == "{{args.api-token}}" || result.missing > 1'
  failureCondition: 'result == "{{args.tenant}}"'
  provider:
    prometheus:
      query: 'up{token="{{args.api-token}}", tenant="{{args.tenant}}", ns="{{args.ns}}"}'
      headers: [{key: X-Api-Key, value: "key-{{args.tenant}}"}]
`)
	compiled, errs := Compile(doc, map[string]string{"api-token": secret, "tenant": "t3nant-secret"}, Builtin(echoingSources))
	if len(errs) > 0 {
		t.Fatalf("Compile: %s", formatErrors(errs))
	}
	m := compiled.Plan.Metrics[0]
	if m.SuccessCondition != `result == "*****" || result.missing > 1` || m.FailureCondition != `result == "*****"` {
		t.Errorf("conditions shown: %q, %q", m.SuccessCondition, m.FailureCondition)
	}
	if q := m.Metadata["ResolvedPrometheusQuery"]; q != `up{token="*****", tenant="*****", ns="echo"}` {
		t.Errorf("ResolvedPrometheusQuery: %q", q)
	}
	if compiled.Args["api-token"] != "*****" || compiled.Args["tenant"] != "*****" || compiled.Args["ns"] != "echo" {
		t.Errorf("args: %v", compiled.Args)
	}
	obs := m.Source.Measure(context.Background(), time.Now())
	_, judgeErr := m.Judge.Judge(map[string]any{})
	if b, ok := m.Source.(analysis.ContextBound); !ok || b.BoundByContext() {
		t.Errorf("the source wrapper is not the source's own ContextBound: %v", ok)
	}
	shown := []string{m.SuccessCondition, m.FailureCondition, fmt.Sprint(m.Metadata), obs.Err.Error(), fmt.Sprint(obs.Metadata), obs.Display, fmt.Sprint(judgeErr)}
	for _, s := range shown {
		if strings.Contains(s, secret) || strings.Contains(s, "t3nant-secret") {
			t.Errorf("a secret shows in %q", s)
		}
	}
	if !strings.Contains(obs.Err.Error(), `parse error in up{token="*****", tenant="*****", ns="echo"}`) {
		t.Errorf("the source's error lost its text: %v", obs.Err)
	}

	// Problems: an interval that is no duration, quoted, and an argument
	// given two values.
	bad := mustParse(t, `
args: [{name: password, value: p4ssw0rd-one}, {name: password, value: p4ssw0rd-two}]
metrics: [{name: m, interval: "{{args.password}}", provider: {prometheus: {query: up}}}]
`)
	_, errs = Compile(bad, nil, Builtin(echoingSources))
	if len(errs) == 0 {
		t.Fatal("no problems")
	}
	bad.Spec.Args = bad.Spec.Args[:1]
	_, more := Compile(bad, nil, Builtin(echoingSources))
	for _, e := range append(errs, more...) {
		if strings.Contains(e.Message, "p4ssw0rd") {
			t.Errorf("a secret shows in the problem %v", e)
		}
	}
	if len(more) == 0 || !strings.Contains(fmt.Sprint(more), `time: invalid duration "*****"`) {
		t.Errorf("the interval's problem: %v", more)
	}
}
