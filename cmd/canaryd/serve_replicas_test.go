package main

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/replica"
)

// TestReplicaName checks where a replica's name comes from: --replica-name,
// else the host name made a label; a host name that makes none is no name
// on its own, and a configuration error with peers.
func TestReplicaName(t *testing.T) {
	peers := []replica.Peer{{URL: "http://canaryd-peers:8080", Discover: true}}
	for _, tc := range []struct {
		name    string
		flag    string
		host    string
		hostErr error
		peers   []replica.Peer
		want    string
		problem string
	}{
		{name: "the flag wins", flag: "canaryd-0", host: "ignored", want: "canaryd-0"},
		{name: "a pod's host name", host: "canaryd-7d9f8b6c5-x2x9k", want: "canaryd-7d9f8b6c5-x2x9k"},
		{name: "a laptop's host name", host: "My_Laptop.local", want: "my-laptop"},
		{name: "no usable host name, alone", host: "___", want: ""},
		{name: "no host name, alone", hostErr: errors.New("uname failed"), want: ""},
		{name: "no usable host name, with peers", host: "___", peers: peers, problem: "--replica-name: the host name \"___\" makes no replica name"},
	} {
		cfg := config.Default()
		cfg.ReplicaName, cfg.Peers = tc.flag, tc.peers
		rs, err := newReplicas(cfg, zap.NewNop(), nil, func() (string, error) { return tc.host, tc.hostErr })
		switch {
		case tc.problem != "":
			var cerr *configError
			if !errors.As(err, &cerr) || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("%s: %v, want a configuration error saying %q", tc.name, err, tc.problem)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case rs.Name() != tc.want:
			t.Errorf("%s: name %q, want %q", tc.name, rs.Name(), tc.want)
		case tc.want == "" && rs != nil:
			t.Errorf("%s: replicas without a name", tc.name)
		}
	}
}
