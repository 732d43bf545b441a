// Package durable keeps a replica's analyses in a store (internal/store)
// as they run, so that any replica can answer for them and take them over.
//
// It is laid out by concern:
//
//   - rounds.go: the writer of the rounds a replica keeps (RoundWriter),
//     in order, retried with a backoff, bounded while the store does not
//     answer.
//
// The writer of each run, its lease, adoption and hand-over are still
// methods of internal/analyses' registry (persist.go, resume.go there),
// and join this package as they are cut loose from it.
//
// What it must not do: import net/http, or block an analysis on the store.
package durable
