package config

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/replica"
)

func TestReplicas(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "c.yaml", "replicaName: canaryd-1\npeers: ['dns+http://canaryd-peers:8080']\n")
	static := []replica.Peer{
		{Name: "canaryd-0", URL: "http://canaryd-0.canaryd-peers:8080"},
		{Name: "canaryd-1", URL: "http://canaryd-1.canaryd-peers:8080"},
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want Replicas
	}{
		{name: "default: the host name, no peers"},
		{name: "flags",
			args: []string{"--replica-name", "canaryd-0", "--peers", "canaryd-0=http://canaryd-0.canaryd-peers:8080", "--peers=canaryd-1=http://canaryd-1.canaryd-peers:8080/"},
			want: Replicas{ReplicaName: "canaryd-0", Peers: static}},
		{name: "environment, as the Deployment sets it",
			env:  []string{"CANARYD_REPLICA_NAME", "canaryd-7d9f8b6c5-x2x9k", "CANARYD_PEERS", "canaryd-0=http://canaryd-0.canaryd-peers:8080, canaryd-1=http://canaryd-1.canaryd-peers:8080"},
			want: Replicas{ReplicaName: "canaryd-7d9f8b6c5-x2x9k", Peers: static}},
		{name: "file",
			args: []string{"--config", file},
			want: Replicas{ReplicaName: "canaryd-1", Peers: []replica.Peer{{URL: "http://canaryd-peers:8080", Discover: true}}}},
		{name: "the environment over the file",
			args: []string{"--config", file}, env: []string{"CANARYD_PEERS", "dns+http://other:9000"},
			want: Replicas{ReplicaName: "canaryd-1", Peers: []replica.Peer{{URL: "http://other:9000", Discover: true}}}},
	} {
		c, err := Load(tc.args, env(tc.env...), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(c.Replicas, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, c.Replicas, tc.want)
		}
	}
}

func TestReplicasInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{name: "a name that is no DNS label",
			args: []string{"--replica-name", "Canaryd_0"},
			want: []string{`--replica-name: "Canaryd_0" is not a DNS label`}},
		{name: "every bad peer, each with its source",
			args: []string{"--peers", "canaryd-0", "--peers", "dns+http://canaryd-peers", "--peers", "b=http://user:hunter2@b:8080"},
			want: []string{"--peers: want NAME=URL", "--peers: \"dns+http://canaryd-peers\": give the replicas' port", "--peers: replica b: the URL must not carry credentials"}},
		{name: "from the environment",
			env:  []string{"CANARYD_PEERS", "dns+https://canaryd-peers:8443"},
			want: []string{"CANARYD_PEERS: \"dns+https://canaryd-peers:8443\": discovery takes dns+http://"}},
		{name: "one replica at two URLs",
			args: []string{"--peers", "a=http://a1:8080", "--peers", "a=http://a2:8080"},
			want: []string{"--peers[1]: replica a is given twice, at http://a1:8080 and at http://a2:8080"}},
	} {
		_, err := Load(tc.args, env(tc.env...), io.Discard)
		var cerr *Error
		if !errors.As(err, &cerr) {
			t.Errorf("%s: error %v, want an *Error", tc.name, err)
			continue
		}
		all := strings.Join(cerr.Problems, "\n")
		for _, want := range tc.want {
			if !strings.Contains(all, want) {
				t.Errorf("%s: no problem says %q; got:\n  %s", tc.name, want, strings.Join(cerr.Problems, "\n  "))
			}
		}
		if strings.Contains(all, "hunter2") {
			t.Errorf("%s: a problem quotes a password: %s", tc.name, all)
		}
	}
}
