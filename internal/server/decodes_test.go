package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/server"
	"github.com/canaryd/canaryd/internal/spec"
)

// TestDecodesBeyondMaxDecodesAre429 holds every decode slot with bodies
// whose compilation waits (the metric's source is built while the slot
// is held), and wants the next body refused, once it has waited
// decodeWait, with a 429 naming the bound, with Retry-After, whatever it
// holds; once the slots are free, a body is decoded again.
func TestDecodesBeyondMaxDecodesAre429(t *testing.T) {
	const max = 2
	entered := make(chan struct{}, max)
	hold := make(chan struct{})
	var holding sync.Once
	s := start(t, options{maxDecodes: max, decodeWait: 10 * time.Millisecond, sources: func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
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

// holdingServer starts a server of one decode slot, whose documents with
// "hold" in their query keep the slot until the returned release.
func holdingServer(t *testing.T, o options) (s *testServer, entered <-chan struct{}, release func()) {
	t.Helper()
	in := make(chan struct{}, 16)
	hold := make(chan struct{})
	var holding sync.Once
	o.maxDecodes = 1
	o.sources = func(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
		if strings.Contains(m.Query, "hold") {
			in <- struct{}{}
			<-hold
		}
		return analysis.SourceFunc(nil), nil, nil
	}
	s = start(t, o)
	release = func() { holding.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return s, in, release
}

const heldDocument = "metrics:\n- {name: m, provider: {prometheus: {query: vector(1) or hold}}}\n"

// waitForGauge polls the gauge name until it reads want.
func waitForGauge(t *testing.T, s *testServer, name string, want float64) {
	t.Helper()
	for {
		families, err := s.registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge().GetValue() == want {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDecodesWaitForASlot: a body that finds every decode slot taken waits
// for one (here up to a minute, so that only the slot's release can end
// the wait), and is answered once the slot is free: a burst of templates
// is served in turn, not refused.
func TestDecodesWaitForASlot(t *testing.T) {
	s, entered, release := holdingServer(t, options{decodeWait: time.Minute})
	first := make(chan int, 1)
	go func() { first <- s.do(http.MethodPost, "/v1/validate", yamlType, heldDocument).status }()
	<-entered

	waiting := make(chan int, 1)
	go func() { waiting <- s.do(http.MethodPost, "/v1/validate", yamlType, once("echo-good")).status }()
	waitForGauge(t, s, "canaryd_decodes_waiting", 1)
	release()
	if status := <-waiting; status != http.StatusOK {
		t.Errorf("the body that waited for the slot: status %d, want 200", status)
	}
	if status := <-first; status != http.StatusOK {
		t.Errorf("the body that held the slot: status %d, want 200", status)
	}
	waitForGauge(t, s, "canaryd_decodes_waiting", 0)
}

// TestDecodeWaitersBeyondTheBoundAre429: with the slot taken and
// maxDecodeWaiters bodies waiting, one more is refused at once, whatever
// the wait it could have had.
func TestDecodeWaitersBeyondTheBoundAre429(t *testing.T) {
	const waiters = 2
	s, entered, release := holdingServer(t, options{decodeWait: time.Minute, maxDecodeWaiters: waiters})
	first := make(chan int, 1)
	go func() { first <- s.do(http.MethodPost, "/v1/validate", yamlType, heldDocument).status }()
	<-entered
	waited := make(chan int, waiters)
	for range waiters {
		go func() { waited <- s.do(http.MethodPost, "/v1/validate", yamlType, once("echo-good")).status }()
	}
	waitForGauge(t, s, "canaryd_decodes_waiting", waiters)

	resp := s.do(http.MethodPost, "/v1/validate", yamlType, once("echo-good"))
	if resp.status != http.StatusTooManyRequests || resp.problem(t).Type != server.ProblemTooManyDecodes {
		t.Errorf("a body beyond %d waiting: status %d, want 429 too-many-decodes: %.300s", waiters, resp.status, resp.body)
	}
	release()
	for range waiters {
		if status := <-waited; status != http.StatusOK {
			t.Errorf("a waiting body: status %d, want 200", status)
		}
	}
	<-first
}
