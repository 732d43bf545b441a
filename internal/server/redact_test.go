package server

import (
	"maps"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a plain value", "echo", "echo"},
		{"a URL without credentials", "http://prometheus:9090", "http://prometheus:9090"},
		{"user and password", "http://user:pa55@prometheus:9090/x", "http://*****@prometheus:9090/x"},
		{"a user alone", "https://token@mimir/prometheus", "https://*****@mimir/prometheus"},
		{"an @ in the path is not userinfo", "http://prometheus:9090/a@b", "http://prometheus:9090/a@b"},
		{"an e-mail address is not a URL", "ops@example.com", "ops@example.com"},
		{"a URL inside a longer value", "address http://u:p@h:1 and more", "address http://*****@h:1 and more"},
		{"two URLs", "http://a:b@h1 http://c:d@h2", "http://*****@h1 http://*****@h2"},
		{"upper-case scheme", "HTTP://U:P@H", "HTTP://*****@H"},
	}
	for _, tt := range tests {
		in := map[string]string{"v": tt.in, "other": "x"}
		before := maps.Clone(in)
		got := redactArgs(in)
		if got["v"] != tt.want || got["other"] != "x" {
			t.Errorf("%s: %q became %q, want %q", tt.name, tt.in, got["v"], tt.want)
		}
		if !maps.Equal(in, before) {
			t.Errorf("%s: the caller's map was changed", tt.name)
		}
	}
	if redactArgs(nil) != nil {
		t.Error("nil args became something")
	}
}
