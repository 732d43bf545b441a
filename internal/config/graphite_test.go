package config

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestGraphiteAllow checks that --graphite-allow is read from a flag, a
// variable and the file, and that a prefix the allow-list cannot hold is
// refused with the rest, naming the flag.
func TestGraphiteAllow(t *testing.T) {
	file := writeFile(t, t.TempDir(), "c.yaml", "graphiteAllow: [http://graphite.file.example:8080]\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"default: none, Graphite metrics refused", nil, nil, nil},
		{"flags", []string{"--graphite-allow", "http://a.example:8080", "--graphite-allow=https://b.example/graphite/"}, nil, []string{"http://a.example:8080", "https://b.example/graphite/"}},
		{"variable", nil, []string{"CANARYD_GRAPHITE_ALLOW", "http://a.example/, http://b.example/"}, []string{"http://a.example/", "http://b.example/"}},
		{"file", []string{"--config", file}, nil, []string{"http://graphite.file.example:8080"}},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(c.GraphiteAllow, tc.want) {
			t.Errorf("%s: GraphiteAllow = %v, want %v", tc.name, c.GraphiteAllow, tc.want)
		}
	}

	_, err := Load([]string{"--graphite-allow", "graphite", "--graphite-allow", "http://g.example/?x=1", "--graphite-allow", "http://u:p@g.example/"}, env(), io.Discard)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("bad prefixes: %v", err)
	}
	for _, want := range []string{
		`--graphite-allow[0]: "graphite" is not an http or https URL`,
		`--graphite-allow[1]: allow prefix "http://g.example/?x=1" has a query or fragment`,
		`--graphite-allow[2]:`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("bad prefixes: %v\nwant %q", err, want)
		}
	}
}
