package main

import (
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/limits"
)

// serverLimits are the service's limits as configured: the server holds a
// request to its own (server.Options.Limits), and the analyses theirs,
// which serve hands them field by field.
func serverLimits(cfg *config.Config) limits.Limits { return cfg.Limits }
