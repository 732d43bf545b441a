package main

import (
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/ids"
)

// replicaName names this replica: --replica-name, or else the host name (a
// pod's name, in Kubernetes), made a DNS label; "" when the host name
// makes none. With a store, the name begins the owner of the leases this
// replica holds, so that the store says which pod runs an analysis; no id
// carries it.
func replicaName(cfg *config.Config, log *zap.Logger, hostname func() (string, error)) string {
	name := cfg.ReplicaName
	if name == "" {
		host, err := hostname()
		if err != nil {
			host = ""
		}
		name = ids.FromHostname(host)
		if name == "" {
			log.Info("the host name makes no replica name; a store names this replica's leases canaryd (set --replica-name)", zap.String("host", host))
			return ""
		}
	}
	log.Info("replica", zap.String("replica", name))
	return name
}
