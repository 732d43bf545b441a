// Package analyses is canaryd's service of analyses, between the HTTP API
// (internal/server) and the engine (internal/analysis) and store
// (internal/store). It knows no HTTP: the handlers call it and write what
// it answers.
//
// It is laid out by concern, a file or a package each:
//
//   - hub.go: the stream hub. A run's observer publishes each event once
//     (Hub.Publish); it is encoded once and handed to every stream that
//     follows the run, each with a bounded buffer, and a stream that falls
//     behind is cut off rather than waited for.
//   - retained.go: what the analyses held take, in bytes. Each run keeps
//     an estimate of its size (Ledger), from what it recorded; the service
//     keeps the sum, and evicts finished analyses to stay under its bound.
//   - listed.go: an analysis as a row of the list shows it (Summarize): its
//     report's sentence and the phases of each metric's newest
//     measurements, bounded whatever it holds.
//   - durable/: what keeps the analyses in a store. So far the writer of
//     the rounds kept (durable.RoundWriter).
//
// The registry of analyses, their durability in a store (each run's
// writer, its leases, adoption and hand-over), eviction, rounds and the
// list are still internal/server's (Analyses), and join this package as
// they move.
//
// What it must not do: import net/http, or speak a provider's protocol.
package analyses
