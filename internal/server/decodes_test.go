package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestDecodesBeyondMaxDecodesAre429 holds every decode slot with bodies
// whose compilation waits (the metric's source is built while the slot
// is held), and wants the next body refused at once with a 429 naming the
// bound, with Retry-After, whatever it holds; once the slots are free, a
// body is decoded again.
func TestDecodesBeyondMaxDecodesAre429(t *testing.T) {
	const max = 2
	entered := make(chan struct{}, max)
	hold := make(chan struct{})
	var holding sync.Once
	s := start(t, options{maxDecodes: max, sources: func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		if strings.Contains(m.Query, "hold") {
			entered <- struct{}{}
			<-hold
		}
		return analysis.SourceFunc(nil), nil, nil
	}})
	release := func() { holding.Do(func() { close(hold) }) }
	t.Cleanup(release)

	held := "metrics:\n- {name: m, provider: {prometheus: {query: vector(1) or hold}}}\n"
	var wg sync.WaitGroup
	statuses := make(chan int, max)
	for range max {
		wg.Add(1)
		// Ends when release lets the source be built.
		go func() {
			defer wg.Done()
			statuses <- s.do(http.MethodPost, "/v1/validate", yamlType, held).status
		}()
	}
	for range max {
		<-entered
	}

	for _, tt := range []struct{ name, path, body string }{
		{"a document", "/v1/validate", once("echo-good")},
		{"a megabyte of nodes", "/v1/analyses", string(flowBomb())},
	} {
		resp := s.do(http.MethodPost, tt.path, yamlType, tt.body)
		if resp.status != http.StatusTooManyRequests {
			t.Errorf("%s beyond %d decodes: status %d, want 429: %.300s", tt.name, max, resp.status, resp.body)
			continue
		}
		p := resp.problem(t)
		if p.Type != server.ProblemTooManyDecodes || !strings.Contains(p.Detail, fmt.Sprintf("%d request bodies are being decoded", max)) {
			t.Errorf("%s: problem %+v, want too-many-decodes naming %d", tt.name, p, max)
		}
		if resp.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tt.name)
		}
	}

	release()
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusOK {
			t.Errorf("a held document: status %d, want 200", status)
		}
	}
	if resp := s.do(http.MethodPost, "/v1/validate", yamlType, once("echo-good")); resp.status != http.StatusOK {
		t.Errorf("with the slots free again: status %d, want 200: %s", resp.status, resp.body)
	}
}

// flowBomb is a megabyte of a flow sequence of ones: half a million YAML
// nodes.
func flowBomb() []byte {
	var b strings.Builder
	b.WriteString("metrics: [")
	for b.Len() < server.DefaultMaxBodyBytes-16 {
		b.WriteString("1,")
	}
	b.WriteString("1]\n")
	return []byte(b.String())
}

// TestBodiesBeyondMaxYAMLNodesAre400 sends a megabyte of nodes, within
// the body's size limit, to each route that decodes a body: a 400 on body
// naming the limit of nodes.
func TestBodiesBeyondMaxYAMLNodesAre400(t *testing.T) {
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}})
	want := fmt.Sprintf("more than %d YAML nodes", spec.MaxYAMLNodes)
	for _, path := range []string{"/v1/validate", "/v1/analyses", "/v1/evaluate", "/v1/gates", "/v1/backtests?start=-1h"} {
		resp := s.do(http.MethodPost, path, yamlType, string(flowBomb()))
		if resp.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %.300s", path, resp.status, resp.body)
			continue
		}
		p := resp.problem(t)
		if len(p.Errors) != 1 || p.Errors[0].Field != "body" || !strings.Contains(p.Errors[0].Message, want) {
			t.Errorf("%s: errors %+v, want one on body containing %q", path, p.Errors, want)
		}
	}
}
