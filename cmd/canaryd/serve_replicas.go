package main

import (
	"fmt"

	promclient "github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/replica"
	"github.com/canaryd/canaryd/internal/server"
)

// newReplicas names this replica and wires its peers: --replica-name, or
// else the host name (a pod's name, in Kubernetes), made a DNS label. It
// returns nil, for a canaryd on its own whose ids name no replica, only when
// the host name makes no name and there are no peers; with peers, that is a
// configuration error.
func newReplicas(cfg *config.Config, log *zap.Logger, reg promclient.Registerer, hostname func() (string, error)) (*server.Replicas, error) {
	name := cfg.ReplicaName
	if name == "" {
		host, err := hostname()
		if err != nil {
			host = ""
		}
		name = replica.FromHostname(host)
		if name == "" {
			if len(cfg.Peers) > 0 {
				return nil, &configError{fmt.Errorf("--replica-name: the host name %q makes no replica name; set one", host)}
			}
			log.Warn("the host name makes no replica name: the ids of analyses name no replica (set --replica-name)", zap.String("host", host))
			return nil, nil
		}
	}
	replicas, err := server.NewReplicas(server.ReplicasOptions{
		Name:       name,
		Peers:      cfg.Peers,
		Logger:     log,
		Registerer: reg,
	})
	if err != nil {
		return nil, &configError{err}
	}
	peers := make([]string, len(cfg.Peers))
	for i, p := range cfg.Peers {
		peers[i] = p.String()
	}
	log.Info("replica", zap.String("replica", name), zap.Strings("peers", peers))
	return replicas, nil
}
