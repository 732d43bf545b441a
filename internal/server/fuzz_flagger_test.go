package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/templates"
)

// flaggerFuzzTemplate declares two of the arguments Flagger's payload gives
// (name, namespace) and one its metadata may set (threshold); never phase
// or checksum.
const flaggerFuzzTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: {name: flagger}
spec:
  args:
    - name: name
      value: default-name
    - name: namespace
    - name: threshold
      value: "0.99"
  metrics:
    - name: m
      consecutiveErrorLimit: 0
      successCondition: result[0] >= {{args.threshold}}
      provider:
        prometheus:
          query: 'up{namespace="{{args.namespace}}", canary="{{args.name}}"}'
`

// FuzzFlaggerGate posts arbitrary bodies, as JSON or YAML, with arbitrary
// query strings, to POST /v1/gates/{name}, which takes Flagger's webhook
// payload: never a panic or a 500; a refusal is a problem naming every
// field; an answer is the finished analysis with the verdict as its status,
// whose arguments are only those the template declares (Flagger's phase
// and checksum never among them), and whose namespace is the payload's
// when nothing overrides it.
func FuzzFlaggerGate(f *testing.F) {
	f.Add(true, "", `{"name": "podinfo", "namespace": "test", "phase": "Progressing", "checksum": "85d557f47b", "metadata": {"threshold": "0.5"}}`)
	f.Add(true, "arg.namespace=prod", `{"name": "podinfo", "namespace": "test", "phase": "Progressing"}`)
	f.Add(true, "", `{"namespace": "test", "args": {"namespace": "other"}}`)
	f.Add(true, "", `{"namespace": "test", "metadata": {"phase": "x", "nope": "1"}}`)
	f.Add(false, "", "name: podinfo\nnamespace: test\nmetadata:\n  threshold: 0.9\n")
	f.Add(false, "timeout=1s", "namespace: [a]\nphase: {x: 1}\nchecksum: 7\n")
	f.Add(true, "", `{"namespace": null, "metadata": null, "name": 1}`)
	f.Add(true, "", `{"namespace": "test", "webhook": {"url": "http://x"}}`)
	f.Add(true, "", `{"namespace": "{{args.threshold}}"}`)
	f.Add(true, "", `[]`)

	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flagger.yaml"), []byte(flaggerFuzzTemplate), 0o600); err != nil {
		f.Fatal(err)
	}
	// Measurements answer at once and never touch the network: a value
	// that passes the template's condition whatever the threshold.
	passing := analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{Value: []float64{1e9}, Display: "[1e9]"}
	})
	sources := PromAndJudge(func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		if m.Address != "" {
			return nil, nil, []api.FieldError{{Field: "provider.prometheus.address", Message: "not allowed"}}
		}
		return passing, nil, nil
	})
	store, err := templates.Load(templates.Options{Dir: dir, Providers: sources, Check: func(doc *spec.Document) []api.FieldError {
		_, errs := compile.Compile(doc, nil, sources)
		return errs
	}})
	if err != nil {
		f.Fatal(err)
	}
	if _, ok := store.Get("flagger"); !ok {
		f.Fatalf("the fuzz template does not load: %+v", store.List())
	}
	declared := []string{"name", "namespace", "threshold"}

	f.Fuzz(func(t *testing.T, isJSON bool, query, body string) {
		svc, err := analyses.NewAnalyses(analyses.AnalysesOptions{MaxRunning: 10, MaxFinished: 10, Retention: time.Hour, ErrorRetryInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(Options{Analyses: svc, Providers: sources, Templates: store, MaxBodyBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		ctx, hangUp := context.WithTimeout(context.Background(), 2*time.Second)
		defer hangUp()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/gates/flagger", strings.NewReader(body))
		req.URL.RawQuery = query
		if isJSON {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "application/yaml")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		over, cancel := context.WithCancel(context.Background())
		cancel()
		svc.Drain(over)
		svc.WaitWebhooks(over)

		switch rec.Code {
		case http.StatusOK, http.StatusPreconditionFailed, http.StatusServiceUnavailable:
			var a api.Analysis
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || !a.Phase.Completed() {
				t.Fatalf("status %d with a body that is not a finished analysis: %s", rec.Code, rec.Body)
			}
			if gateStatus(a.Phase) != rec.Code {
				t.Fatalf("status %d for phase %s", rec.Code, a.Phase)
			}
			for name := range a.Args {
				if !slices.Contains(declared, name) {
					t.Fatalf("argument %q, which the template does not declare, reached the analysis: %v", name, a.Args)
				}
			}
			if ns, ok := payloadNamespace(body, isJSON); ok && !queryOverrides(query, "namespace") && a.Args["namespace"] != analyses.RedactArgs(map[string]string{"namespace": ns})["namespace"] {
				t.Fatalf("the payload's namespace %q became %q", ns, a.Args["namespace"])
			}
		default:
			if rec.Code >= 500 {
				t.Fatalf("status %d for input: %s", rec.Code, rec.Body)
			}
			var p api.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Type == "" {
				t.Fatalf("status %d with a body that is not its problem: %s", rec.Code, rec.Body)
			}
			for _, e := range p.Errors {
				if e.Field == "" || e.Message == "" {
					t.Fatalf("a problem without its field or message: %+v", e)
				}
				if e.Field == "phase" || e.Field == "checksum" {
					if !strings.Contains(e.Message, "must be a string") {
						t.Fatalf("Flagger's %s was refused for another reason than its type: %+v", e.Field, e)
					}
				}
			}
		}
	})
}

// payloadNamespace is the namespace a JSON payload gives as a string, when
// nothing else in it (args, metadata) may set the argument; ok is false
// otherwise.
func payloadNamespace(body string, isJSON bool) (string, bool) {
	if !isJSON {
		return "", false
	}
	var obj map[string]any
	if json.Unmarshal([]byte(body), &obj) != nil {
		return "", false
	}
	ns, ok := obj["namespace"].(string)
	if !ok {
		return "", false
	}
	if _, set := obj["args"]; set {
		return "", false
	}
	if md, isMap := obj["metadata"].(map[string]any); isMap {
		if _, set := md["namespace"]; set {
			return "", false
		}
	}
	return ns, true
}

// queryOverrides reports whether the query sets the argument name.
func queryOverrides(query, name string) bool {
	values, err := url.ParseQuery(query)
	if err != nil {
		return true // refused anyway
	}
	_, set := values[argPrefix+name]
	return set
}
