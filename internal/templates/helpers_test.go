package templates

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/judge"
	promprovider "github.com/canaryd/canaryd/internal/provider/prometheus"
)

// fixture reads a file of testdata/templates.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFiles writes files into dir; a nil-content entry ("") removes the
// file.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// load loads dir into a store with its own registry and a test logger.
// testProviders are the service's Prometheus and judge, over a Prometheus
// that builds nothing, as cmd/canaryd registers them.
var testProviders = provider.NewRegistry().
	Register("prometheus", promprovider.Func(noSources)).
	Register("judge", judge.NewProvider(noSources))

func noSources(*promprovider.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	return nil, nil, nil
}

func load(t testing.TB, dir string, o Options) *Store {
	t.Helper()
	o.Dir = dir
	if o.Providers == nil {
		o.Providers = testProviders
	}
	if o.Logger == nil {
		o.Logger = zaptest.NewLogger(t)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	s, err := Load(o)
	if err != nil {
		t.Fatalf("Load(%s): %v", dir, err)
	}
	return s
}

// row is an Info reduced to what the tables compare: name, file:line,
// status and the fields of its errors.
type row struct {
	name, at, status, fields string
}

func (r row) String() string {
	return fmt.Sprintf("{%q %s %s [%s]}", r.name, r.at, r.status, r.fields)
}

func rows(infos []Info) []row {
	out := []row{}
	for _, in := range infos {
		var fields []string
		for _, e := range in.Errors {
			fields = append(fields, e.Field)
		}
		out = append(out, row{in.Name, fmt.Sprintf("%s:%d", in.File, in.Line), in.Status, strings.Join(fields, ",")})
	}
	return out
}

func checkRows(t *testing.T, name string, s *Store, want []row) {
	t.Helper()
	if want == nil {
		want = []row{}
	}
	if got := rows(s.List()); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: List:\ngot  %v\nwant %v\nfull: %s", name, got, want, formatInfos(s.List()))
	}
}

func formatInfos(infos []Info) string {
	var b strings.Builder
	for _, in := range infos {
		fmt.Fprintf(&b, "\n  %s %s:%d %s", in.Name, in.File, in.Line, in.Status)
		for _, e := range in.Errors {
			fmt.Fprintf(&b, "\n    %s: %s", e.Field, e.Message)
		}
	}
	return b.String()
}

func formatFieldErrors(errs []api.FieldError) string {
	if len(errs) == 0 {
		return "  (none)\n"
	}
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Field, e.Message)
	}
	return b.String()
}

// metricValues reads the store's metrics: loaded, broken files, and the
// load errors of each file named.
type metricValues struct {
	loaded, broken, reloads float64
	errors                  map[string]float64
}

// readMetrics gathers the store's metrics by their names. A file whose
// load-errors series does not exist reads -1.
func readMetrics(t testing.TB, s *Store, files ...string) metricValues {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := s.m.register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := metricValues{errors: map[string]float64{}}
	for _, f := range files {
		v.errors[f] = -1
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "canaryd_templates_loaded":
				v.loaded = m.GetGauge().GetValue()
			case "canaryd_template_files_broken":
				v.broken = m.GetGauge().GetValue()
			case "canaryd_templates_reloads_total":
				v.reloads = m.GetCounter().GetValue()
			case "canaryd_template_load_errors_total":
				for _, l := range m.GetLabel() {
					if _, ok := v.errors[l.GetValue()]; ok && l.GetName() == "file" {
						v.errors[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return v
}

// template builds an AnalysisTemplate document. spec is the YAML of its
// spec, indented by two spaces.
func template(name, spec string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// simple is a valid spec with one metric whose interval is given.
func simple(interval string) string {
	return `  metrics:
  - name: up
    interval: ` + interval + `
    count: 2
    successCondition: result[0] == 1
    provider:
      prometheus:
        query: up
`
}
