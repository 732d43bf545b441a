package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServePeersRemoved runs the binary with --peers, which canaryd no
// longer has, from each source: it exits 64 at once, before it listens,
// with a message that points to --store and the docs' way to move.
func TestServePeersRemoved(t *testing.T) {
	file := filepath.Join(t.TempDir(), "canaryd.yaml")
	if err := os.WriteFile(file, []byte("peers: ['dns+http://canaryd-peers:8080']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const instead = `was removed: replicas share analyses through --store postgres://… (every replica answers every request from it); see "Moving from --peers to --store" in docs/operations.md`
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{name: "flag", args: []string{"--peers", "dns+http://canaryd-peers:8080"}, want: "--peers: " + instead},
		{name: "flag beside a store", args: []string{"--store", "postgres://canaryd@127.0.0.1:1/canaryd", "--peers=a=http://a:8080"}, want: "--peers: " + instead},
		{name: "variable", env: "CANARYD_PEERS=canaryd-0=http://canaryd-0.canaryd-peers:8080", want: "CANARYD_PEERS: " + instead},
		{name: "file", args: []string{"--config", file}, want: file + ": line 1: peers: " + instead},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = os.Environ()
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
			t.Errorf("%s: %v, want exit code %d:\n%s", tc.name, err, exitUsage, out)
			continue
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: the output does not say %q:\n%s", tc.name, tc.want, out)
		}
		if strings.Contains(string(out), "listening") {
			t.Errorf("%s: it listened before refusing the configuration:\n%s", tc.name, out)
		}
	}
}
