// Package store keeps canaryd's analyses where every replica can read them
// and any replica can take them over: what each analysis was asked for
// (the template's name or the posted document and its sha256, the
// arguments, the webhook subscription), its state (phase, counters,
// consecutive streaks: the resource as the engine shows it), every
// measurement as it finishes, and the webhook deliveries it still owes.
//
// Store has two implementations (Open, ParseURL), which the behavioural
// suite holds alike:
//
//   - postgres://… or postgresql://… (OpenPostgres): PostgreSQL 13 or newer
//     through pgx (pgxpool), shared by every replica. The schema ships
//     embedded (migrations/*.sql) and is migrated by tern (Migrate;
//     `canaryd migrate`), which records its version in VersionTable.
//   - NewMemory: one process' analyses in its own memory, lost with it, with
//     the same leases and fencing. It is `canaryd serve --store memory:`
//     (the default): a store that is not shared (Shared), where the
//     process holds the analyses it ran, finished, for their retention,
//     with the byte total of those it holds (Retained, RetainedIn). Tests
//     also run replicas of one process on one (Options.Shared).
//
// canaryd serve wraps the store it opens once (Metered): every call is
// bounded by a timeout and counted by operation and outcome (Outcome, which
// also says which errors are worth trying again: Retryable).
//
// Leases. A replica runs an analysis while it holds its lease: an owner
// (the replica's name), a token, and an expiry. Create gives the creating
// replica the first lease; Renew extends every lease a replica holds in one
// statement and returns them, so a replica learns which it lost; Claim takes
// analyses with work left (running, or owing deliveries) whose lease has
// expired, with SELECT … FOR UPDATE SKIP LOCKED so that replicas claiming at
// once never take the same one, and bumps each token; Release hands leases
// over (they expire now), as a replica does on SIGTERM. RequestTerminate,
// from any replica, asks the holder to terminate an analysis: its leases
// say so (Lease.Terminate) from its next Renew or Claim. Every write of an
// analysis' state, measurements and deliveries carries the token and is made
// only while the token is still the analysis' (WHERE id = $1 AND
// lease_token = $2, or its row locked and its token compared): a replica
// that lost its lease gets ErrLeaseLost and changes nothing. Time comes from
// Options.Clock; the fencing, not the clocks, keeps a stale replica out.
//
// A replica's writer commits each step of an analysis in one transaction
// (Commit, a Mutation): the webhook events it now owes, the measurements
// that finished, the state they led to, and the events done. Measurements
// are stored once per (analysis, metric, index): one taken again by the
// replica that adopted the analysis is counted once. Deliveries carry a
// webhook id chosen once per event, which every attempt on any replica
// sends; an event is recorded as owed before its first attempt.
//
// Group commit. canaryd serve also wraps its store in Grouped: the
// commits of all the analyses a replica runs, made within
// DefaultCommitInterval of each other, share one transaction (a
// BatchCommitter's CommitBatch), at most DefaultMaxBatchRows rows and one
// transaction at a time. Each write is still fenced by its own lease
// token (the batch's rows locked in the order of their ids), and each
// writer is told its own write's outcome once the transaction has ended:
// a lost lease fails that write alone, an error of the transaction fails
// every write of the batch, written by none, for each writer to try
// again.
//
// Notifications. Subscribe tells a reader of every write of an analysis:
// in postgres a trigger sends NOTIFY canaryd_analyses with "ID VERSION", a
// store's one listening connection hands it to the subscriptions of ID; in
// memory the write itself does. The reader fetches what changed.
//
// Secrets never reach a postgres store in clear. The values of secret
// arguments (named like secrets, redact.IsSecretName, or marked Secret), a
// webhook URL with userinfo or a query, and the posted document are sealed
// with AES-256-GCM under the key of --store-secret-key-file (ReadKeyFile),
// which every replica is given; what is stored in clear reads ***** in
// their place. Without a key, Create refuses an analysis that has any
// (SecretError, naming the field), so that nothing is stored that a
// replica could not resume. The memory store keeps them as given: they never
// leave the process.
//
// What the package must not do: log, read the environment or flags, or
// know HTTP. Its errors never quote a store URL's password (RedactURL).
package store
