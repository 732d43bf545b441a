package analyses

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
		{"user and password", "http://user:pa55@prometheus:9090/x", "http://*****@prometheus:9090/x"},
		{"a URL inside a longer value", "address http://u:p@h:1 and more", "address http://*****@h:1 and more"},
	}
	for _, tt := range tests {
		in := map[string]string{"v": tt.in, "other": "x"}
		before := maps.Clone(in)
		got := RedactArgs(in)
		if got["v"] != tt.want || got["other"] != "x" {
			t.Errorf("%s: %q became %q, want %q", tt.name, tt.in, got["v"], tt.want)
		}
		if !maps.Equal(in, before) {
			t.Errorf("%s: the caller's map was changed", tt.name)
		}
	}
	if RedactArgs(nil) != nil {
		t.Error("nil args became something")
	}
}
