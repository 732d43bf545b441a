package server

import (
	"net/http"
	"testing"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   responseMode
	}{
		{"", modeJSON},
		{"application/json", modeJSON},
		{"*/*", modeJSON},
		{"text/html", modeJSON},
		{"application/x-ndjson", modeNDJSON},
		{"text/event-stream", modeSSE},
		{"text/event-stream; charset=utf-8", modeSSE},
		{"application/json, application/x-ndjson", modeNDJSON},
		{"application/x-ndjson;q=0, text/event-stream", modeSSE},
		{"application/x-ndjson;q=0", modeJSON},
		{"garbage;;;, text/event-stream", modeSSE},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := negotiate(r); got != tc.want {
			t.Errorf("Accept %q: mode %d, want %d", tc.accept, got, tc.want)
		}
	}
}

func TestCheckWebhook(t *testing.T) {
	allowed, err := parseWebhookAllow([]string{"https://hooks.example.com/canary/", "http://127.0.0.1:8081"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/canary", true},
		{"https://hooks.example.com/canary/", true},
		{"https://hooks.example.com/canary/a/b?x=1", true},
		{"https://HOOKS.example.com/canary/a", true},
		{"http://127.0.0.1:8081/anything", true},
		{"https://hooks.example.com/canaryx", false},
		{"https://hooks.example.com/other", false},
		{"https://hooks.example.com.evil.test/canary", false},
		{"http://hooks.example.com/canary", false},
		{"http://127.0.0.1:8082/", false},
		{"https://user:pw@hooks.example.com/canary", false},
		{"ftp://hooks.example.com/canary", false},
		{"/canary", false},
	} {
		msg := checkWebhook(tc.url, allowed)
		if got := msg == ""; got != tc.ok {
			t.Errorf("%s: allowed %v (%q), want %v", tc.url, got, msg, tc.ok)
		}
	}
	if msg := checkWebhook("https://hooks.example.com/canary", nil); msg == "" {
		t.Error("a webhook was allowed without --webhook-allow")
	}
	if _, err := parseWebhookAllow([]string{"hooks.example.com"}); err == nil {
		t.Error("a prefix that is not a URL was accepted")
	}
}
