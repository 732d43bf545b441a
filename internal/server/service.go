package server

import "github.com/canaryd/canaryd/internal/analyses"

// The service the HTTP API serves (internal/analyses), under the names
// the API's callers know it by.
type (
	// Analyses is the analyses of one service (analyses.Analyses).
	Analyses = analyses.Analyses
	// AnalysesOptions configure them (analyses.AnalysesOptions).
	AnalysesOptions = analyses.AnalysesOptions
	// Run is an analysis the service holds (analyses.Run).
	Run = analyses.Run
	// StartOptions are what Analyses.Start is asked (analyses.StartOptions).
	StartOptions = analyses.StartOptions
	// WebhookRequest is the webhook of an analysis (analyses.WebhookRequest).
	WebhookRequest = analyses.WebhookRequest
)

// ShutdownMessage is the message of an analysis that was still running
// when the service stopped (analyses.ShutdownMessage).
const ShutdownMessage = analyses.ShutdownMessage

// DefaultMaxRounds is AnalysesOptions.MaxRounds when it is 0
// (analyses.DefaultMaxRounds).
const DefaultMaxRounds = analyses.DefaultMaxRounds

// NewAnalyses returns an empty set of analyses (analyses.NewAnalyses).
func NewAnalyses(opts AnalysesOptions) (*Analyses, error) { return analyses.NewAnalyses(opts) }
