// Package analyses is canaryd's service of analyses, between the HTTP API
// (internal/server) and the engine (internal/analysis) and store
// (internal/store). It knows no HTTP: the handlers call it and write what
// it answers.
//
// It is laid out by concern, a file or a package each:
//
//   - service.go: the registry (Analyses): the analyses running and,
//     through its store.Retained, the finished ones for their retention; Start, Get, List, Evaluate,
//     Drain and WaitWebhooks. Its errors (ErrDraining, ErrTooMany, ...) are
//     what the HTTP layer answers as problems.
//   - persist.go, stored.go: durability in a store that replicas share
//     (AnalysesOptions.Store, store.Shared), the service's side of it.
//     Each run started here has a writer (durable.Writer) that commits
//     its steps under the run's lease; the service's durable.Keeper renews
//     the leases, claims those of replicas that stopped and has the
//     service resume their analyses (Room, Resume, DeliverOwed:
//     durable.Host); Drain hands the running analyses over instead of
//     ending them. A store's failure reaches the caller as a StoreError.
//     memory: is a store too (store.NewMemory), which is not shared: a
//     run there has no writer and no lease, and a shutdown ends it.
//   - retention.go, retained.go: what the analyses held take, in bytes.
//     Each run keeps an estimate of its size (Ledger), from what it
//     recorded, in one sum; a store.Retained holds the finished analyses
//     and evicts them to stay under its bound and MaxFinished, none
//     younger than MinRetention. With memory: it is the memory store's
//     own (store.RetainedIn), where the analyses are kept.
//   - rounds.go, kept.go: rounds and gates, bounded in number and by their
//     deadlines; a round kept is held, and written to the store.
//   - series.go: the key of the calls that make one analysis over time
//     (SeriesOf), which the list filters on.
//   - list.go, listed.go: the list of the analyses held, with the store's
//     filters and cursors (Page), and an analysis as a row of it shows it
//     (Summarize). With a store the list is every replica's
//     (ListPage).
//   - backtests.go, report.go: backtests in virtual time, and what the HTML
//     reports share.
//   - hub.go: the stream hub. A run's observer publishes each event once
//     (Hub.Publish); it is encoded once and handed to every stream that
//     follows the run, each with a bounded buffer, and a stream that falls
//     behind is cut off rather than waited for.
//   - durable/: what keeps the analyses in a store and needs no registry:
//     each run's writer, the leases, adoption and hand-over
//     (durable.Keeper), and the writer of the rounds kept
//     (durable.RoundWriter).
//
// What it must not do: import net/http, or speak a provider's protocol.
package analyses
