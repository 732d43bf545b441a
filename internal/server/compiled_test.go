package server_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// compileCounter is a prometheus.Func that counts the metrics it builds a
// source for (once per metric each time a spec is compiled) and measures
// the query as a value: "good" is 1, "bad" is 0.5.
type compileCounter struct{ built atomic.Int64 }

func (c *compileCounter) sources(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	c.built.Add(1)
	value := 0.5
	if m.Query == "good" {
		value = 1
	}
	return analysis.SourceFunc(func(context.Context, time.Time) analysis.Observation {
		return analysis.Observation{Value: []float64{value}, Display: fmt.Sprintf("[%g]", value)}
	}), nil, nil
}

const argSpec = `{"args": [{"name": "q"}], "metrics": [{"name": "m", "successCondition": "result[0] >= 0.99",
  "provider": {"prometheus": {"query": "{{args.q}}"}}}]}`

// TestCompiledSpecsAreReused checks that a body sent again with the same
// arguments is answered from the spec compiled the first time, and that
// anything that changes what it compiles to (the arguments, the body, a
// reloaded template) is compiled anew: the cache saves work and never
// changes an answer.
func TestCompiledSpecsAreReused(t *testing.T) {
	var c compileCounter
	dir := t.TempDir()
	writeTemplate(t, dir, "gate.yaml", gateTemplate("good"))
	s := start(t, options{sources: c.sources, templates: dir})
	built := c.built.Load() // the store checks the template it loads

	evaluate := func(query, body string, want api.Phase, compiles int64) {
		t.Helper()
		resp := s.do(http.MethodPost, "/v1/evaluate"+query, jsonType, body)
		if a := resp.analysis(t); a.Phase != want {
			t.Errorf("evaluate%s: phase %s, want %s", query, a.Phase, want)
		}
		if got := c.built.Load() - built; got != compiles {
			t.Errorf("evaluate%s: %d compiles, want %d", query, got, compiles)
		}
		built = c.built.Load()
	}
	evaluate("?arg.q=good", argSpec, api.PhaseSuccessful, 1)
	evaluate("?arg.q=good", argSpec, api.PhaseSuccessful, 0)
	evaluate("?arg.q=bad", argSpec, api.PhaseFailed, 1)
	evaluate("?arg.q=good", argSpec, api.PhaseSuccessful, 0)
	evaluate("?arg.q=bad", argSpec, api.PhaseFailed, 0)
	evaluate("?arg.q=good", argSpec+" ", api.PhaseSuccessful, 1)
	// The timeout is read per request, not compiled in.
	evaluate("?arg.q=good&timeout=5s", argSpec, api.PhaseSuccessful, 0)
	// What a body over 64 KiB compiles to is not kept.
	large := argSpec + strings.Repeat(" ", 64<<10)
	evaluate("?arg.q=good", large, api.PhaseSuccessful, 1)
	evaluate("?arg.q=good", large, api.PhaseSuccessful, 1)

	// A problem in the query is reported with the body's own, which are
	// none here: the cached spec does not hide it.
	resp := s.do(http.MethodPost, "/v1/evaluate?arg.q=good&timeout=never", jsonType, argSpec)
	if resp.status != http.StatusBadRequest {
		t.Errorf("a bad timeout beside a cached body: %d, want 400", resp.status)
	}
	built = c.built.Load() // compiled, to report the body's problems with it

	gate := func(want int, compiles int64) {
		t.Helper()
		resp := s.do(http.MethodPost, "/v1/gates/gate", "", "")
		if resp.status != want {
			t.Errorf("gate: %d %s, want %d", resp.status, resp.body, want)
		}
		if got := c.built.Load() - built; got != compiles {
			t.Errorf("gate: %d compiles, want %d", got, compiles)
		}
		built = c.built.Load()
	}
	gate(http.StatusOK, 1)
	gate(http.StatusOK, 0)
	// A reloaded template is a new document: its own spec is compiled.
	writeTemplate(t, dir, "gate.yaml", gateTemplate("bad"))
	if err := s.store.Reload(); err != nil {
		t.Fatal(err)
	}
	built = c.built.Load() // the store checked the new version
	gate(http.StatusPreconditionFailed, 1)
	gate(http.StatusPreconditionFailed, 0)
}

func gateTemplate(query string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: gate
spec:
  metrics:
  - name: m
    successCondition: result[0] >= 0.99
    provider:
      prometheus:
        query: ` + query + "\n"
}

// TestSharedSpecsRunConcurrently runs many analyses and rounds of one body
// at once: they share its compiled spec, and the race detector checks that
// none of them changes it.
func TestSharedSpecsRunConcurrently(t *testing.T) {
	var c compileCounter
	s := start(t, options{sources: c.sources})
	// No interval: one measurement, whose count the engine fills in.
	const body = `{"metrics": [{"name": "m", "successCondition": "result[0] >= 0.99",
  "provider": {"prometheus": {"query": "good"}}}]}`
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			path := "/v1/evaluate"
			if i%2 == 1 {
				path = "/v1/analyses?wait=true"
			}
			resp, err := s.send(http.MethodPost, path, jsonType, body)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.status != http.StatusOK {
				t.Errorf("%s: %d %s", path, resp.status, resp.body)
			}
		})
	}
	wg.Wait()
	for _, a := range s.analyses.List() {
		if a.Phase != api.PhaseSuccessful {
			t.Errorf("analysis %s: %s, want Successful", a.ID, a.Phase)
		}
	}
}

// TestAnalysesOfOneBodyShareTheirSources checks that analyses started
// from one cached body hold one map of how their metrics query (for their
// HTML reports), made once, and that a body too large to be cached makes
// its own for each.
func TestAnalysesOfOneBodyShareTheirSources(t *testing.T) {
	var c compileCounter
	s := start(t, options{sources: c.sources})
	sourcesOf := func(body string) uintptr {
		t.Helper()
		resp := s.do(http.MethodPost, "/v1/analyses?arg.q=good", jsonType, body)
		if resp.status != http.StatusAccepted {
			t.Fatalf("POST /v1/analyses: %d %s", resp.status, resp.body)
		}
		run, ok := s.analyses.Get(resp.analysis(t).ID)
		if !ok || run.Sources() == nil {
			t.Fatalf("analysis %s: held %v, with sources %v", resp.analysis(t).ID, ok, run.Sources())
		}
		return reflect.ValueOf(run.Sources()).Pointer()
	}
	if a, b := sourcesOf(argSpec), sourcesOf(argSpec); a != b {
		t.Error("two analyses of one body hold two maps of sources, want one")
	}
	large := argSpec + strings.Repeat(" ", 64<<10)
	if a, b := sourcesOf(large), sourcesOf(large); a == b {
		t.Error("two analyses of a body over 64 KiB share one map of sources, want one each")
	}
}
