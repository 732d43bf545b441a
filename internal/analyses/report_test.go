package analyses

import (
	"reflect"
	"testing"

	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestSharedSourcesShared checks that the analyses of one compiled spec
// share its sources' map, asked for in a row or not.
func TestSharedSourcesShared(t *testing.T) {
	a := newTestAnalyses(t, 1)
	c1 := &compile.Compiled{Spec: &spec.Spec{Metrics: []spec.Metric{{Name: "m"}}}}
	c2 := &compile.Compiled{Spec: &spec.Spec{Metrics: []spec.Metric{{Name: "n"}}}}
	s1, s2 := map[string]report.Source{"m": {}}, map[string]report.Source{"n": {}}
	a.sharedSources.Add(c1, s1)
	a.sharedSources.Add(c2, s2)
	same := func(x, y map[string]report.Source) bool {
		return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer()
	}
	for i, tc := range []struct {
		c    *compile.Compiled
		want map[string]report.Source
	}{{c1, s1}, {c1, s1}, {c2, s2}, {c1, s1}, {c2, s2}, {c2, s2}} {
		if got := a.SharedSources(tc.c); !same(got, tc.want) {
			t.Errorf("ask %d: another map than the spec's", i)
		}
	}
}
