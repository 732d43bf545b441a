package config

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestWebAllow checks that --web-allow is read from a flag, a variable and
// the file, and that a prefix the allow-list cannot hold is refused with
// the rest, naming the flag.
func TestWebAllow(t *testing.T) {
	file := writeFile(t, t.TempDir(), "c.yaml", "webAllow: [https://file.example/]\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"default", nil, nil, nil},
		{"flags", []string{"--web-allow", "https://a.example/x", "--web-allow=http://b.example:8080/"}, nil, []string{"https://a.example/x", "http://b.example:8080/"}},
		{"variable", nil, []string{"CANARYD_WEB_ALLOW", "https://a.example/, https://b.example/"}, []string{"https://a.example/", "https://b.example/"}},
		{"file", []string{"--config", file}, nil, []string{"https://file.example/"}},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(c.WebAllow, tc.want) {
			t.Errorf("%s: WebAllow = %v, want %v", tc.name, c.WebAllow, tc.want)
		}
	}

	_, err := Load([]string{"--web-allow", "slo", "--web-allow", "https://slo.example/api?token=x", "--web-allow", "https://u:p@slo.example/"}, env(), io.Discard)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("bad prefixes: %v", err)
	}
	for _, want := range []string{
		`--web-allow[0]: "slo" is not an http or https URL`,
		`--web-allow[1]: allow prefix "https://slo.example/api?token=x" has a query or fragment`,
		`--web-allow[2]:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("bad prefixes: %v\nwant %q", err, want)
		}
	}
}
