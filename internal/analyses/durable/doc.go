// Package durable keeps a replica's analyses in a store (internal/store)
// as they run, so that any replica can answer for them and take them over.
//
// It is laid out by concern:
//
//   - writer.go: the writer of each run (Writer), which commits each step
//     of the run under its lease, off the run's goroutine, and is the
//     outbox of its webhook. Its State says where it stands: Running, then
//     HandingOver and HandedOver at a hand-over, Final once the end is
//     written, or Lost from any of them once another replica holds the
//     analysis.
//   - keeper.go: a replica's writers and leases (Keeper): the renew loop,
//     the hand-over at shutdown, the last writes, the removal of what is
//     past its retention.
//   - adopt.go: the claim of the analyses whose replica stopped, resumed
//     by the service that runs them (Host), or their owed webhook events
//     delivered when they had completed.
//   - rounds.go: the writer of the rounds a replica keeps (RoundWriter),
//     in order, retried with a backoff, bounded while the store does not
//     answer.
//
// It knows no registry of analyses: the service hands it each run (Run)
// and resumes what it claims (Host).
//
// What it must not do: import net/http, or block an analysis on the store.
package durable
