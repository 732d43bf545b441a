package compile

import (
	"context"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// TestCompileWithPrograms: specs compiled with a shared cache of condition
// programs report the same problems and reach the same verdicts as specs
// compiled alone, however often they are compiled.
func TestCompileWithPrograms(t *testing.T) {
	const good = `metrics:
- name: rate
  successCondition: result[0] >= 0.99
  failureCondition: result[0] < 0.9
  provider: {prometheus: {query: up}}
`
	const bad = `metrics:
- name: rate
  successCondition: result[0] >=
  provider: {prometheus: {query: up}}
`
	sources := func(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation { return analysis.Observation{} }), nil, nil
	}
	programs := condition.NewPrograms(0)
	for round := range 3 {
		alone, problems := Compile(mustParse(t, good), nil, Builtin(sources))
		shared, sharedProblems := Compile(mustParse(t, good), nil, Builtin(sources), WithPrograms(programs))
		checkErrors(t, "good spec", sharedProblems, problems)
		for _, v := range []any{[]float64{0.995}, []float64{0.95}, []float64{0.5}, []float64{}, "x"} {
			wantPhase, wantErr := alone.Plan.Metrics[0].Judge.Judge(v)
			gotPhase, gotErr := shared.Plan.Metrics[0].Judge.Judge(v)
			if gotPhase != wantPhase || errText(gotErr) != errText(wantErr) {
				t.Errorf("round %d, %v: shared (%s, %v), alone (%s, %v)", round, v, gotPhase, gotErr, wantPhase, wantErr)
			}
		}
		_, problems = Compile(mustParse(t, bad), nil, Builtin(sources))
		_, sharedProblems = Compile(mustParse(t, bad), nil, Builtin(sources), WithPrograms(programs))
		if len(problems) == 0 {
			t.Fatal("the bad spec compiled")
		}
		checkErrors(t, "bad spec", sharedProblems, problems)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
