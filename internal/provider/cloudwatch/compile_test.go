package cloudwatch_test

import (
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestCompile: compiled as a request's template is, with the provider
// registered, a CloudWatch metric's problems are on their fields under the
// metric (a 400 naming each): a value of the wrong type, an unknown field,
// an argument that would change an expression; Argo's template compiles.
func TestCompile(t *testing.T) {
	p, err := cloudwatch.New(cloudwatch.Options{CheckOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry().Register("cloudWatch", p)
	for _, tt := range []struct {
		doc   string
		args  map[string]string
		field string
	}{
		{`{"metrics": [{"name": "m", "provider": {"cloudWatch": ` + rateConfig + `}}]}`, nil, ""},
		{`{"metrics": [{"name": "m", "provider": {"cloudWatch": {"interval": 30, "metricDataQueries": [{"id": "e", "expression": "1"}]}}}]}`, nil,
			"metrics[0].provider.cloudWatch.interval"},
		{`{"metrics": [{"name": "m", "provider": {"cloudWatch": {"metricDataQueries": [{"id": "e", "expresion": "1"}]}}}]}`, nil,
			"metrics[0].provider.cloudWatch.metricDataQueries[0].expresion"},
		{`{"metrics": [{"name": "m", "provider": {"cloudWatch": {"metricDataQueries": [{"id": "e", "expression": "e1 * {{args.k}}"}]}}}], "args": [{"name": "k"}]}`,
			map[string]string{"k": "1 + e2"}, "args.k"},
		{`{"metrics": [{"name": "m", "provider": {"cloudWatch": {"metricDataQueries": [{"id": "e", "expression": "e1 * {{args.k}}"}]}}}], "args": [{"name": "k"}]}`,
			map[string]string{"k": "2"}, ""},
	} {
		doc, errs := spec.Parse([]byte(tt.doc))
		if len(errs) == 0 {
			_, errs = compile.Compile(doc, tt.args, reg)
		}
		switch {
		case tt.field == "" && len(errs) > 0:
			t.Errorf("%s: %v", tt.doc, errs)
		case tt.field != "" && (len(errs) == 0 || !strings.HasPrefix(errs[0].Field, tt.field)):
			t.Errorf("%s: %v; want a problem on %s", tt.doc, errs, tt.field)
		}
	}
}
