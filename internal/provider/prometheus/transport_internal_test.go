package prometheus

import (
	"io"
	"strings"
	"testing"
)

func TestLimitedBody(t *testing.T) {
	tests := []struct {
		name, body string
		max        int64
		wantErr    string
	}{
		{name: "under", body: "12345", max: 1 << 20},
		{name: "exactly the limit", body: strings.Repeat("x", 1<<20), max: 1 << 20},
		{name: "over", body: strings.Repeat("x", 1<<20+1), max: 1 << 20, wantErr: "prometheus response is larger than 1 MiB; narrow the query"},
	}
	for _, tc := range tests {
		b := &limitedBody{rc: io.NopCloser(strings.NewReader(tc.body)), left: tc.max, max: tc.max}
		got, err := io.ReadAll(b)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.wantErr {
			t.Errorf("%s: err = %q, want %q", tc.name, gotErr, tc.wantErr)
		}
		if tc.wantErr == "" && string(got) != tc.body {
			t.Errorf("%s: read %d bytes, want %d", tc.name, len(got), len(tc.body))
		}
	}
}

func TestSensitiveHeader(t *testing.T) {
	for key, want := range map[string]bool{
		"Authorization": true, "X-Api-Key": true, "X-AUTH-TOKEN": true, "Cookie": true, "X-Session-Id": true,
		"X-Client-Secret": true, "Proxy-Authorization": true, "x-password": true,
		"Content-Type": false, "User-Agent": false, "X-Scope-OrgID": false, "Accept-Encoding": false, "": false, "Ke": false,
	} {
		if got := sensitiveHeader(key); got != want {
			t.Errorf("sensitiveHeader(%q) = %v, want %v", key, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { sensitiveHeader("X-Scope-OrgID") }); n != 0 {
		t.Errorf("%v allocations a call, want none: it runs on every header of every query", n)
	}
}
