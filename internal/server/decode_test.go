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
