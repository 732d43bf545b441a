package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/server"
)

// TestWebhookBacklog tries to exceed --max-webhook-backlog: an analysis
// with a webhook counts from its start until its deliveries are made, one
// more with a webhook is a 429 naming the field and the flag, one without
// still starts, and the slot is free again once the deliveries are made.
func TestWebhookBacklog(t *testing.T) {
	rc := newReceiver(t, nil)
	s := start(t, options{sources: instantSources, webhookAllow: []string{rc.prefix()}, webhookBacklog: 1})
	hook := "/v1/analyses?webhook=" + url.QueryEscape(rc.prefix()+"/a")
	first := s.do(http.MethodPost, hook, yamlType, forever("echo-good"))
	if first.status != http.StatusAccepted {
		t.Fatalf("the first analysis with a webhook: status %d, want 202: %s", first.status, first.body)
	}
	resp := s.do(http.MethodPost, hook, yamlType, forever("echo-good"))
	if resp.status != http.StatusTooManyRequests {
		t.Fatalf("a second with a webhook and --max-webhook-backlog 1: status %d, want 429: %s", resp.status, resp.body)
	}
	p := resp.problem(t)
	if p.Type != server.ProblemTooManyAnalyses || len(p.Errors) != 1 || p.Errors[0].Field != "webhook" || !strings.Contains(p.Detail+p.Errors[0].Message, "--max-webhook-backlog") {
		t.Errorf("problem %+v, want too-many-analyses with an error on webhook naming --max-webhook-backlog", p)
	}
	if got := s.do(http.MethodPost, "/v1/analyses", yamlType, forever("echo-good")); got.status != http.StatusAccepted {
		t.Errorf("an analysis without a webhook: status %d, want 202", got.status)
	}
	s.do(http.MethodDelete, "/v1/analyses/"+first.analysis(t).ID, "", "")
	waitFor(t, "the first analysis' deliveries to be made and free its slot", func() bool {
		resp := s.do(http.MethodPost, hook, yamlType, once("echo-good"))
		return resp.status == http.StatusAccepted
	})
}
