package main

import (
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/server"
)

// serverLimits are the server's limits as configured (the limits of
// analyses, backtests and streams running at once go to the Analyses).
func serverLimits(cfg *config.Config) server.Limits {
	return server.Limits{
		MaxMetrics:              cfg.MaxMetrics,
		MaxConditionLength:      cfg.MaxConditionLength,
		MaxQueryLength:          cfg.MaxQueryLength,
		VerbatimArgs:            cfg.VerbatimArgs,
		MaxBacktestWindow:       cfg.MaxBacktestWindow,
		MaxBacktestStarts:       cfg.MaxBacktestStarts,
		MaxBacktestMeasurements: cfg.MaxBacktestMeasurements,
		MaxJudgeLooks:           cfg.MaxJudgeLooks,
	}
}
