// Package analyses is canaryd's service of analyses, between the HTTP API
// (internal/server) and the engine (internal/analysis) and store
// (internal/store). It knows no HTTP: the handlers call it and write what
// it answers.
//
// It is laid out by concern, one file each:
//
//   - hub.go: the stream hub. A run's observer publishes each event once
//     (Hub.Publish); it is encoded once and handed to every stream that
//     follows the run, each with a bounded buffer, and a stream that falls
//     behind is cut off rather than waited for.
//
// The registry of analyses, their durability in a store (the writer, its
// leases, adoption and hand-over), retention, rounds and the list are still
// internal/server's (Analyses), and join this package as they move.
//
// What it must not do: import net/http, or speak a provider's protocol.
package analyses
