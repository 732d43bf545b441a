package compile

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/judge"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

// PrometheusFunc builds the source of a decoded provider.prometheus (a
// stand-in for the Prometheus provider's Source).
type PrometheusFunc = prometheus.Func

// Builtin is a registry of the Prometheus provider, built by prom, and of
// the judge over it, as the service registers them (cmd/canaryd).
func Builtin(prom PrometheusFunc) *provider.Registry {
	return provider.NewRegistry().
		Register("prometheus", prom).
		Register("judge", judge.NewProvider(prom))
}

// mustParse parses input that the test expects to be valid.
func mustParse(t testing.TB, input string) *spec.Document {
	t.Helper()
	doc, errs := spec.Parse([]byte(input))
	if len(errs) > 0 {
		t.Fatalf("Parse(%q): %s", input, formatErrors(errs))
	}
	return doc
}

// formatErrors shows problems in a test's message.
func formatErrors(errs []api.FieldError) string { return fmt.Sprintf("%+v", errs) }

// checkErrors fails the test, naming the case, when got is not want.
func checkErrors(t *testing.T, name string, got, want []api.FieldError) {
	t.Helper()
	if len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot  %s\nwant %s", name, formatErrors(got), formatErrors(want))
	}
}

func fe(field, msg string) api.FieldError { return api.FieldError{Field: field, Message: msg} }

func ptr[T any](v T) *T { return &v }

// noSources builds no source: these tests look at what Compile makes of
// the spec, not at Prometheus.
func noSources(*prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return nil, nil, nil
}

// recordingSources is a PrometheusFunc that records the metrics it is
// asked for and returns the problems problemsFor gives.
type recordingSources struct {
	asked       []prometheus.Metric
	problemsFor func(m *prometheus.Metric) []api.FieldError
}

func (r *recordingSources) source(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	r.asked = append(r.asked, *m)
	if r.problemsFor != nil {
		if errs := r.problemsFor(m); len(errs) > 0 {
			return nil, nil, errs
		}
	}
	query := m.Query
	return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		if strings.Contains(query, "canary") {
			return analysis.Observation{Value: []float64{130, 131, 129, 130.5, 128}}
		}
		return analysis.Observation{Value: []float64{100, 101, 99, 100.5, 98}}
	}), map[string]string{"ResolvedPrometheusQuery": m.Query}, nil
}
