package server_test

import (
	"net/http"
	"testing"

	"github.com/canaryd/canaryd/internal/server"
)

// TestTokensReplace checks that a replaced set of tokens applies to the
// next request, and that a replacement that would open the API is refused.
func TestTokensReplace(t *testing.T) {
	tokens, err := server.NewTokens([]string{"first"})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, options{prometheus: []string{"http://127.0.0.1:9"}, tokenSet: tokens})
	status := func(token string) int {
		return s.do(http.MethodGet, "/v1/analyses", "", "", "Authorization", "Bearer "+token).status
	}
	steps := []struct {
		name    string
		replace []string
		wantErr bool
		want    map[string]int
	}{
		{name: "as started", want: map[string]int{"first": 200, "second": 401}},
		{name: "rotated", replace: []string{"second", "third"}, want: map[string]int{"first": 401, "second": 200, "third": 200}},
		{name: "emptied: refused, the set stays", replace: []string{}, wantErr: true, want: map[string]int{"second": 200, "first": 401}},
		{name: "an empty token: refused", replace: []string{"fourth", ""}, wantErr: true, want: map[string]int{"second": 200, "fourth": 401}},
	}
	for _, st := range steps {
		if st.replace != nil {
			if err := tokens.Replace(st.replace); (err != nil) != st.wantErr {
				t.Errorf("%s: Replace: %v, want an error: %v", st.name, err, st.wantErr)
			}
		}
		for token, want := range st.want {
			if got := status(token); got != want {
				t.Errorf("%s: %q answered %d, want %d", st.name, token, got, want)
			}
		}
	}

	open, err := server.NewTokens(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Replace([]string{"x"}); err == nil {
		t.Error("an API started open was closed by Replace; it must need a restart")
	}
	if _, err := server.NewTokens([]string{"a", ""}); err == nil {
		t.Error("NewTokens took an empty token")
	}
}
