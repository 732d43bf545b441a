package config

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestShortTokensRefused: a token shorter than MinTokenLength (a
// placeholder, a word typed by hand) is refused at start, the problem
// naming the file and every line at fault and never a token.
func TestShortTokensRefused(t *testing.T) {
	dir := t.TempDir()
	good := strings.Repeat("a", MinTokenLength)
	for _, tc := range []struct {
		name, content string
		problem       string // "" when the file is accepted
		tokens        int
	}{
		{name: "long enough", content: good + "\n", tokens: 1},
		{name: "one short token", content: "# the pipeline\n\nchangeme\n" + good + "\n", problem: "line 3: a token must be at least 16 bytes long"},
		{name: "one byte short", content: good[1:] + "\n", problem: "line 1: a token must be at least 16 bytes long"},
		{name: "several, each named", content: "\n\nshort-one\n" + good + "\n  short-two  \n", problem: "lines 3, 5: a token must be at least 16 bytes long"},
	} {
		file := writeFile(t, dir, "tokens", tc.content)
		c, err := Load([]string{"--auth-token-file", file}, env(), io.Discard)
		if tc.problem == "" {
			if err != nil || len(c.AuthTokens) != tc.tokens {
				t.Errorf("%s: %v, want %d tokens", tc.name, err, tc.tokens)
			}
			continue
		}
		var cerr *Error
		if !errors.As(err, &cerr) {
			t.Fatalf("%s: error %v, want an *Error", tc.name, err)
		}
		want := "--auth-token-file: " + file + ": " + tc.problem
		if len(cerr.Problems) != 1 || !strings.HasPrefix(cerr.Problems[0], want) {
			t.Errorf("%s: problems %q, want one starting %q", tc.name, cerr.Problems, want)
		}
		for _, secret := range []string{"changeme", "short-one", "short-two", good[1:]} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the problem shows the token %q: %v", tc.name, secret, err)
			}
		}
	}
}
