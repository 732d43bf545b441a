package config

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplicaName(t *testing.T) {
	file := writeFile(t, t.TempDir(), "c.yaml", "replicaName: canaryd-1\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "default: the host name"},
		{name: "flag", args: []string{"--replica-name", "canaryd-0"}, want: "canaryd-0"},
		{name: "environment, as the Deployment sets it",
			env: []string{"CANARYD_REPLICA_NAME", "canaryd-7d9f8b6c5-x2x9k"}, want: "canaryd-7d9f8b6c5-x2x9k"},
		{name: "file", args: []string{"--config", file}, want: "canaryd-1"},
		{name: "the environment over the file",
			args: []string{"--config", file}, env: []string{"CANARYD_REPLICA_NAME", "canaryd-2"}, want: "canaryd-2"},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.ReplicaName != tc.want {
			t.Errorf("%s: --replica-name %q, want %q", tc.name, c.ReplicaName, tc.want)
		}
	}
	_, err := Load([]string{"--replica-name", "Canaryd_0"}, env(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--replica-name: "Canaryd_0" is not a DNS label`) {
		t.Errorf("a name that is no DNS label: %v", err)
	}
}

// TestRemovedSettings checks that --peers, which canaryd no longer has, is
// refused from every source and whatever its value, each problem naming
// its source (the file's with its line) and pointing to --store; that it
// is not logged; and that the reference lists it apart, not among the
// settings.
func TestRemovedSettings(t *testing.T) {
	const instead = "was removed: replicas share analyses through --store postgres://… (every replica answers every request from it); " +
		`see "Moving from --peers to --store" in docs/operations.md`
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "a static peer", args: []string{"--peers", "canaryd-0=http://canaryd-0.canaryd-peers:8080"}, want: "--peers: " + instead},
		{name: "discovery, with =", args: []string{"--peers=dns+http://canaryd-peers:8080"}, want: "--peers: " + instead},
		{name: "repeated: one problem", args: []string{"--peers", "a=http://a:8080", "--peers", "b=http://b:8080"}, want: "--peers: " + instead},
		{name: "beside a store", args: []string{"--store", "postgres://db:5432/canaryd", "--peers", "dns+http://canaryd-peers:8080"}, want: "--peers: " + instead},
		{name: "the variable", env: []string{"CANARYD_PEERS", "dns+http://canaryd-peers:8080"}, want: "CANARYD_PEERS: " + instead},
		{name: "the file, a list",
			args: []string{"--config", writeFile(t, dir, "list.yaml", "listen: :9\npeers: ['dns+http://canaryd-peers:8080']\n")},
			want: filepath.Join(dir, "list.yaml") + ": line 2: peers: " + instead},
		{name: "the file, a string",
			args: []string{"--config", writeFile(t, dir, "string.yaml", "peers: dns+http://canaryd-peers:8080\n")},
			want: filepath.Join(dir, "string.yaml") + ": line 1: peers: " + instead},
		{name: "the file, a mapping",
			args: []string{"--config", writeFile(t, dir, "map.yaml", "\n\npeers: {a: b}\n")},
			want: filepath.Join(dir, "map.yaml") + ": line 3: peers: " + instead},
	} {
		problems, ok := loadProblems(t, tc.name, "", tc.args, "", tc.env...)
		if !ok {
			continue
		}
		if len(problems) != 1 || problems[0] != tc.want {
			t.Errorf("%s: problems\n  %s\nwant\n  %s", tc.name, strings.Join(problems, "\n  "), tc.want)
		}
	}

	// A key without a value sets nothing, as for every key.
	if _, err := Load([]string{"--config", writeFile(t, dir, "empty.yaml", "peers:\n")}, env(), io.Discard); err != nil {
		t.Errorf("peers without a value: %v", err)
	}
	// -h still works, and says it is removed.
	var help strings.Builder
	if _, err := Load([]string{"-h"}, env(), &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "removed: replicas share analyses through --store") {
		t.Errorf("-h: %v, the help does not say --peers is removed:\n%s", err, help.String())
	}
	for _, v := range Default().Values() {
		if v.Name == "peers" {
			t.Errorf("the removed --peers is among the values logged")
		}
	}
	ref := string(Reference())
	removed := ref[strings.Index(ref, "## Removed settings"):]
	if !strings.Contains(removed, "| `--peers` | `CANARYD_PEERS` | `peers` | replicas share analyses through --store") {
		t.Errorf("the reference's removed settings do not list --peers:\n%s", removed)
	}
	if before := ref[:strings.Index(ref, "## Removed settings")]; strings.Contains(before, "`--peers`") {
		t.Errorf("the reference lists --peers among the settings")
	}
}
