package argo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/metricproviders/webmetric"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	templateutil "github.com/argoproj/argo-rollouts/utils/template"
	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/canaryd/canaryd/internal/promtest"
	"github.com/canaryd/canaryd/test/internal/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// inCluster is the canaryd address the examples name: the Service of the
// example overlay. The tests send the same requests to their own canaryd.
const inCluster = "http://canaryd.canary.svc:8080"

// examples is the directory of the Argo Rollouts examples.
func examples(t *testing.T) string {
	return filepath.Join(harness.RepoRoot(t), "deploy", "examples", "argo")
}

// decodeStrict reads a one-document YAML file into out, refusing fields
// that out's type does not have: a misspelt field in an example would be
// dropped silently by the API server too (or refused by its schema).
func decodeStrict(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// shipped are the example's three documents.
type shipped struct {
	template v1alpha1.AnalysisTemplate
	rollout  v1alpha1.Rollout
	secret   corev1.Secret
}

func loadExamples(t *testing.T) shipped {
	t.Helper()
	dir := examples(t)
	var s shipped
	decodeStrict(t, filepath.Join(dir, "analysistemplate.yaml"), &s.template)
	decodeStrict(t, filepath.Join(dir, "rollout.yaml"), &s.rollout)
	decodeStrict(t, filepath.Join(dir, "secret.yaml"), &s.secret)
	for _, tm := range []metav1.TypeMeta{s.template.TypeMeta, s.rollout.TypeMeta} {
		if tm.APIVersion != "argoproj.io/v1alpha1" {
			t.Errorf("%s: apiVersion %q, want argoproj.io/v1alpha1", tm.Kind, tm.APIVersion)
		}
	}
	if s.template.Kind != "AnalysisTemplate" || s.rollout.Kind != "Rollout" || s.secret.Kind != "Secret" {
		t.Fatalf("kinds: %q, %q, %q", s.template.Kind, s.rollout.Kind, s.secret.Kind)
	}
	return s
}

// analysisOf returns how the Rollout uses the template: as its background
// analysis, or in its analysis step.
func analysisOf(t *testing.T, r v1alpha1.Rollout, background bool) v1alpha1.RolloutAnalysis {
	t.Helper()
	c := r.Spec.Strategy.Canary
	if c == nil {
		t.Fatal("the Rollout has no canary strategy")
	}
	if background {
		if c.Analysis == nil {
			t.Fatal("the Rollout has no background analysis")
		}
		return c.Analysis.RolloutAnalysis
	}
	for _, step := range c.Steps {
		if step.Analysis != nil {
			return *step.Analysis
		}
	}
	t.Fatal("the Rollout has no analysis step")
	return v1alpha1.RolloutAnalysis{}
}

// resolveMetric does what Argo's controllers do between a Rollout and a
// provider call: the Rollout's args (fieldRef metadata.namespace read from
// the Rollout) override the template's, the secret arg is read from the
// Secret, and {{args.*}} are substituted in the metric's JSON with Argo's
// own resolver (utils/analysis.ResolveMetricArgs does exactly these three
// lines; that package is not imported because it pulls in
// k8s.io/kubernetes).
func resolveMetric(t *testing.T, s shipped, use v1alpha1.RolloutAnalysis, namespace string) v1alpha1.Metric {
	t.Helper()
	if len(use.Templates) != 1 || use.Templates[0].TemplateName != s.template.Name {
		t.Fatalf("the Rollout's analysis uses %+v, want the template %q", use.Templates, s.template.Name)
	}
	args := append([]v1alpha1.Argument(nil), s.template.Spec.Args...)
	for _, in := range use.Args {
		value := in.Value
		switch vf := in.ValueFrom; {
		case vf == nil:
		case vf.PodTemplateHashValue != nil && *vf.PodTemplateHashValue == v1alpha1.Latest:
			// The canary's hash: the fixture's pods have it.
			value = promtest.CanaryHash
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "metadata.namespace":
			value = namespace
		default:
			t.Fatalf("arg %q: only fieldRef metadata.namespace and podTemplateHashValue Latest are resolved by this test, got %+v", in.Name, vf)
		}
		found := false
		for i := range args {
			if args[i].Name == in.Name {
				args[i].Value, args[i].ValueFrom, found = &value, nil, true
			}
		}
		if !found {
			t.Fatalf("the Rollout passes arg %q, which the template does not declare", in.Name)
		}
	}
	for i, a := range args {
		if a.ValueFrom == nil || a.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := a.ValueFrom.SecretKeyRef
		if ref.Name != s.secret.Name {
			t.Fatalf("arg %q reads Secret %q; the example Secret is %q", a.Name, ref.Name, s.secret.Name)
		}
		v, ok := s.secret.StringData[ref.Key]
		if !ok {
			t.Fatalf("arg %q reads key %q, which the example Secret lacks", a.Name, ref.Key)
		}
		args[i].Value, args[i].ValueFrom = &v, nil
	}
	if len(s.template.Spec.Metrics) != 1 {
		t.Fatalf("the template has %d metrics, want 1", len(s.template.Spec.Metrics))
	}
	b, err := json.Marshal(s.template.Spec.Metrics[0])
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := templateutil.ResolveQuotedArgs(string(b), args)
	if err != nil {
		t.Fatalf("resolving args: %v", err)
	}
	var m v1alpha1.Metric
	if err := json.Unmarshal([]byte(resolved), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// toTest points a metric resolved from the examples at the test's canaryd,
// and swaps the placeholder token of the example Secret for its token.
func toTest(t *testing.T, m v1alpha1.Metric, s shipped, c *harness.Canaryd) v1alpha1.Metric {
	t.Helper()
	web := m.Provider.Web
	if web == nil {
		t.Fatal("the metric has no web provider")
	}
	if !strings.HasPrefix(web.URL, inCluster+"/") {
		t.Fatalf("url %q does not start with %s/", web.URL, inCluster)
	}
	web.URL = c.URL + strings.TrimPrefix(web.URL, inCluster)
	placeholder := "Bearer " + s.secret.StringData["token"]
	swapped := false
	for i, h := range web.Headers {
		if h.Key == "Authorization" && h.Value == placeholder {
			web.Headers[i].Value, swapped = "Bearer "+c.Token, true
		}
	}
	if !swapped {
		t.Fatalf("no header Authorization: %s in %+v", placeholder, web.Headers)
	}
	return m
}

// measure runs one measurement with Argo's web provider, built as Argo's
// provider factory builds it.
func measure(t *testing.T, m v1alpha1.Metric) v1alpha1.Measurement {
	t.Helper()
	client, err := webmetric.NewWebMetricHttpClient(m)
	if err != nil {
		t.Fatal(err)
	}
	parser, err := webmetric.NewWebMetricJsonParser(m)
	if err != nil {
		t.Fatal(err)
	}
	logger := log.New()
	logger.SetOutput(testWriter{t})
	p := webmetric.NewWebMetricProvider(*log.NewEntry(logger), client, parser)
	run := &v1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "echo-canaryd", Namespace: "echo"}}
	return p.Run(run, m)
}

// testWriter sends Argo's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestWebMetricProvider runs the shipped AnalysisTemplate, as each of the
// shipped Rollout's two analyses uses it, through Argo's web provider:
// Successful for a healthy namespace, Failed for a failing one, and an
// Error measurement, as Argo records one, when Prometheus is down (canaryd
// answers 503) or the token is wrong (401).
func TestWebMetricProvider(t *testing.T) {
	s := loadExamples(t)
	prom := promtest.Start(t)
	canaryd := harness.StartCanaryd(t, harness.CanarydOptions{
		PrometheusURL: prom.URL,
		Templates:     harness.Templates(t),
	})

	cases := []struct {
		name       string
		background bool
		namespace  string
		wantCount  string // the effective count; "" for none (until ended)
		wantPhase  v1alpha1.AnalysisPhase
		wantValue  string
	}{
		{"step/echo-good", false, harness.EchoGood, "5", v1alpha1.AnalysisPhaseSuccessful, `"Successful"`},
		{"step/echo-bad", false, harness.EchoBad, "5", v1alpha1.AnalysisPhaseFailed, `"Failed"`},
		{"background/echo-good", true, harness.EchoGood, "", v1alpha1.AnalysisPhaseSuccessful, `"Successful"`},
		{"background/echo-bad", true, harness.EchoBad, "", v1alpha1.AnalysisPhaseFailed, `"Failed"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := resolveMetric(t, s, analysisOf(t, s.rollout, tc.background), tc.namespace)
			gotCount := ""
			if c := m.EffectiveCount(); c != nil {
				gotCount = c.String()
			}
			if gotCount != tc.wantCount {
				t.Errorf("effective count = %q, want %q", gotCount, tc.wantCount)
			}
			if got := string(m.Provider.Web.JSONBody); got != `{"args":{"canary-hash":"`+promtest.CanaryHash+`","namespace":"`+tc.namespace+`"}}` {
				t.Errorf("jsonBody = %s", got)
			}
			got := measure(t, toTest(t, m, s, canaryd))
			if got.Phase != tc.wantPhase || got.Value != tc.wantValue || got.Message != "" {
				t.Errorf("measurement = {Phase: %q, Value: %q, Message: %q}, want {Phase: %q, Value: %q, Message: \"\"}\ncanaryd's log:\n%s",
					got.Phase, got.Value, got.Message, tc.wantPhase, tc.wantValue, canaryd.Logs())
			}
			if got.StartedAt == nil || got.FinishedAt == nil {
				t.Errorf("measurement lacks startedAt or finishedAt: %+v", got)
			}
		})
	}

	t.Run("wrong token", func(t *testing.T) {
		m := toTest(t, resolveMetric(t, s, analysisOf(t, s.rollout, false), harness.EchoGood), s, canaryd)
		m.Provider.Web.Headers[0].Value = "Bearer not-" + canaryd.Token
		got := measure(t, m)
		assertError(t, got, "received non 2xx response code: 401")
	})

	// Last: it stops Prometheus.
	t.Run("prometheus down", func(t *testing.T) {
		prom.Stop()
		for _, background := range []bool{false, true} {
			m := toTest(t, resolveMetric(t, s, analysisOf(t, s.rollout, background), harness.EchoGood), s, canaryd)
			assertError(t, measure(t, m), "received non 2xx response code: 503")
		}
	})
}

// assertError checks an Error measurement as Argo's provider records it
// (metricutil.MarkMeasurementError): phase Error, the message, no value,
// and a finish time.
func assertError(t *testing.T, got v1alpha1.Measurement, wantMessage string) {
	t.Helper()
	if got.Phase != v1alpha1.AnalysisPhaseError || got.Message != wantMessage || got.Value != "" {
		t.Errorf("measurement = {Phase: %q, Value: %q, Message: %q}, want {Phase: Error, Value: \"\", Message: %q}",
			got.Phase, got.Value, got.Message, wantMessage)
	}
	if got.FinishedAt == nil {
		t.Errorf("Error measurement lacks finishedAt: %+v", got)
	}
}

// TestWebMetricProviderInlineSpec is the other way api.md offers Argo: the
// whole spec in the web provider's jsonBody, sent to POST /v1/evaluate, the
// argument in the query. The spec is the base's success-rate template.
func TestWebMetricProviderInlineSpec(t *testing.T) {
	prom := promtest.Start(t)
	canaryd := harness.StartCanaryd(t, harness.CanarydOptions{PrometheusURL: prom.URL})
	doc, err := os.ReadFile(filepath.Join(harness.Templates(t), "success-rate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	metric := func(namespace string) v1alpha1.Metric {
		return v1alpha1.Metric{
			Name:             "success-rate",
			SuccessCondition: `result == "Successful"`,
			FailureCondition: `result == "Failed"`,
			Provider: v1alpha1.MetricProvider{Web: &v1alpha1.WebMetric{
				Method:         v1alpha1.WebMetricMethodPost,
				URL:            canaryd.URL + "/v1/evaluate?arg.namespace=" + namespace,
				TimeoutSeconds: 5,
				Headers:        []v1alpha1.WebMetricHeader{{Key: "Authorization", Value: "Bearer " + canaryd.Token}},
				JSONBody:       body,
				JSONPath:       "{$.phase}",
			}},
		}
	}
	for _, tc := range []struct {
		namespace string
		wantPhase v1alpha1.AnalysisPhase
		wantValue string
	}{
		{harness.EchoGood, v1alpha1.AnalysisPhaseSuccessful, `"Successful"`},
		{harness.EchoBad, v1alpha1.AnalysisPhaseFailed, `"Failed"`},
	} {
		got := measure(t, metric(tc.namespace))
		if got.Phase != tc.wantPhase || got.Value != tc.wantValue || got.Message != "" {
			t.Errorf("%s: measurement = {Phase: %q, Value: %q, Message: %q}, want {Phase: %q, Value: %q}\ncanaryd's log:\n%s",
				tc.namespace, got.Phase, got.Value, got.Message, tc.wantPhase, tc.wantValue, canaryd.Logs())
		}
	}
	prom.Stop()
	assertError(t, measure(t, metric(harness.EchoGood)), "received non 2xx response code: 503")
}
