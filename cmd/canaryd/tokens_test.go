package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/canaryd/canaryd/internal/config"
)

// Tokens of the tests: long enough (config.MinTokenLength), and each with
// "tok-" in it, which no log line may show.
const (
	tokOne   = "tok-one-0123456789"
	tokTwo   = "tok-two-0123456789"
	tokThree = "tok-three-0123456789"
	tokFour  = "tok-four-0123456789"
)

// TestTokenFileReload drives the reloading of --auth-token-file step by
// step: a changed file replaces the tokens; an unreadable or empty one, or
// one with a token too short, keeps the last good set and is logged once;
// tokens never reach the log.
func TestTokenFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tokOne + "\n")
	cfg := &config.Config{AuthTokenFile: path, AuthTokens: []config.Secret{tokOne}}
	core, logs := observer.New(zapcore.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	var background sync.WaitGroup
	defer background.Wait()
	defer cancel()
	tokens, err := watchTokenFile(ctx, cfg, zap.New(core), time.Hour, &background)
	if err != nil {
		t.Fatal(err)
	}
	f := &tokenFile{path: path, tokens: tokens, log: zap.New(core), seen: digestTokens([]string{tokOne})}

	steps := []struct {
		name     string
		change   func()
		accepted []string
		refused  []string
		logged   string // the message of the line the step logs, "" for none
	}{
		{"unchanged", func() {}, []string{tokOne}, []string{tokTwo}, ""},
		{"comments and blank lines change nothing", func() { write("# rotated soon\n\n" + tokOne + "\n") }, []string{tokOne}, nil, ""},
		{"rotated", func() { write(tokTwo + "\n" + tokThree + "\n") }, []string{tokTwo, tokThree}, []string{tokOne}, "auth tokens reloaded"},
		{"removed: the last good set stays", func() { _ = os.Remove(path) }, []string{tokTwo}, nil, "--auth-token-file cannot be read; the tokens read before stay in force"},
		{"still removed: logged once", func() {}, []string{tokTwo}, nil, ""},
		{"a short token: the last good set stays", func() { write(tokThree + "\n\nshort-tok-1\n") }, []string{tokTwo, tokThree}, []string{"short-tok-1"}, "--auth-token-file holds a token that is too short; the tokens read before stay in force"},
		{"emptied: the last good set stays", func() { write("# nothing\n") }, []string{tokTwo}, nil, "--auth-token-file holds no token; the tokens read before stay in force (an empty file would not open the API)"},
		{"back", func() { write(tokFour + "\n") }, []string{tokFour}, []string{tokTwo}, "auth tokens reloaded"},
	}
	for _, st := range steps {
		before := logs.Len()
		st.change()
		f.reload(false)
		for _, tok := range st.accepted {
			if !tokens.Accepts(tok) {
				t.Errorf("%s: %q refused, want it accepted", st.name, tok)
			}
		}
		for _, tok := range st.refused {
			if tokens.Accepts(tok) {
				t.Errorf("%s: %q accepted, want it refused", st.name, tok)
			}
		}
		lines := logs.All()[before:]
		switch {
		case st.logged == "" && len(lines) > 0:
			t.Errorf("%s: logged %q, want nothing", st.name, lines[0].Message)
		case st.logged != "" && (len(lines) != 1 || lines[0].Message != st.logged):
			t.Errorf("%s: logged %v, want one line %q", st.name, lines, st.logged)
		}
	}
	for _, e := range logs.All() {
		for _, field := range e.Context {
			if strings.Contains(field.String, "tok-") {
				t.Errorf("a log line shows a token: %s %v", e.Message, e.Context)
			}
		}
	}
}

// TestServeAuthTokenReload runs the built binary with --auth-token-file and
// rotates the file under it: SIGHUP applies a change at once, polling within
// a few seconds; a file that disappears keeps the tokens read before.
func TestServeAuthTokenReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(content string) {
		t.Helper()
		// Written beside and renamed, as a mounted Secret changes: a
		// reader never sees half a file.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("first-token-0123456789\n")
	cmd, base, logs, _ := startServe(t, "--prometheus-url", "http://127.0.0.1:9", "--auth-token-file", path)
	status := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/analyses", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	expect := func(step string, want map[string]int) {
		t.Helper()
		for token, code := range want {
			if got := status(token); got != code {
				t.Errorf("%s: %s answered %d, want %d", step, token, got, code)
			}
		}
	}
	expect("at start", map[string]int{"first-token-0123456789": 200, "second-token-0123456789": 401})

	write("second-token-0123456789\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, `"msg":"auth tokens reloaded"`)
	expect("after SIGHUP", map[string]int{"first-token-0123456789": 401, "second-token-0123456789": 200})

	write("third-token-0123456789\n")
	deadline := time.Now().Add(authTokenPollInterval + 5*time.Second)
	for status("third-token-0123456789") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("the poll did not pick up the change within %s:\n%s", authTokenPollInterval+5*time.Second, logs.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
	expect("after the poll", map[string]int{"second-token-0123456789": 401, "third-token-0123456789": 200})

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, `"msg":"--auth-token-file cannot be read; the tokens read before stay in force"`)
	expect("with the file gone", map[string]int{"third-token-0123456789": 200})
	for _, tok := range []string{"first-token-0123456789", "second-token-0123456789", "third-token-0123456789"} {
		if strings.Contains(logs.text(), tok) {
			t.Errorf("the log shows %s", tok)
		}
	}
}
