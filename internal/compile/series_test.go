package compile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/series"
)

// echoingSeries is a Prometheus whose series carry the query's label
// values, and whose errors quote the query.
type echoingSeries struct {
	analysis.Source
	query string
}

func (s echoingSeries) QuerySeries(context.Context, series.Query) (series.Set, error) {
	return series.Set{Series: []series.Series{{Labels: `{token="s3cr3t-t0ken-value", ns="echo"}`}}},
		errors.New("bad_data: parse error in " + s.query)
}

// TestSeriesKeepSecretValuesOut checks a metric's series as a report
// draws them: the source's own (series.Source) through the plan, with the
// values of secret arguments out of their labels and errors; a source
// without a query to run over a range says so.
func TestSeriesKeepSecretValuesOut(t *testing.T) {
	const secret = "s3cr3t-t0ken-value"
	doc := mustParse(t, `
args: [{name: api-token}]
metrics:
- name: m
  provider: {prometheus: {query: 'up{token="{{args.api-token}}", ns="echo"}'}}
`)
	sources := func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		src, md, _ := echoingSources(m)
		return echoingSeries{Source: src, query: m.Query}, md, nil
	}
	compiled, errs := Compile(doc, map[string]string{"api-token": secret}, Builtin(sources))
	if len(errs) > 0 {
		t.Fatal(formatErrors(errs))
	}
	src, ok := compiled.Plan.Metrics[0].Source.(series.Source)
	if !ok {
		t.Fatalf("the plan's source %T runs no range query", compiled.Plan.Metrics[0].Source)
	}
	set, err := src.QuerySeries(context.Background(), series.Query{})
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), `token="*****"`) {
		t.Errorf("error %v", err)
	}
	if len(set.Series) != 1 || set.Series[0].Labels != `{token="*****", ns="echo"}` {
		t.Errorf("series %+v", set.Series)
	}

	// A source of another kind, behind the same redaction.
	compiled, errs = Compile(doc, map[string]string{"api-token": secret}, Builtin(echoingSources))
	if len(errs) > 0 {
		t.Fatal(formatErrors(errs))
	}
	if _, err := compiled.Plan.Metrics[0].Source.(series.Source).QuerySeries(context.Background(), series.Query{Start: time.Now()}); !errors.Is(err, series.ErrNoQuery) {
		t.Errorf("a source without range queries: %v", err)
	}
}
