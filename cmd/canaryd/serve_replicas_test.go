package main

import (
	"errors"
	"testing"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
)

// TestReplicaName checks where a replica's name comes from: --replica-name,
// else the host name made a label; a host name that makes none is no name.
func TestReplicaName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		host    string
		hostErr error
		want    string
	}{
		{name: "the flag wins", flag: "canaryd-0", host: "ignored", want: "canaryd-0"},
		{name: "a pod's host name", host: "canaryd-7d9f8b6c5-x2x9k", want: "canaryd-7d9f8b6c5-x2x9k"},
		{name: "a laptop's host name", host: "My_Laptop.local", want: "my-laptop"},
		{name: "no usable host name", host: "___", want: ""},
		{name: "no host name", hostErr: errors.New("uname failed"), want: ""},
	} {
		cfg := config.Default()
		cfg.ReplicaName = tc.flag
		if got := replicaName(cfg, zap.NewNop(), func() (string, error) { return tc.host, tc.hostErr }); got != tc.want {
			t.Errorf("%s: name %q, want %q", tc.name, got, tc.want)
		}
	}
}
