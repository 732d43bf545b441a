// Package pgtest starts a real, throwaway PostgreSQL for the tests of
// canaryd's store (internal/store), of `canaryd migrate`, and of anything
// else that needs one (the nested test/ module included: its path is under
// canaryd's, so it may import this package).
//
// Start creates a cluster of its own for one test: initdb into a fresh
// temporary directory, then `postgres` listening on a free 127.0.0.1 port
// and on a unix socket in that directory, with fsync off (a crash of a
// throwaway cluster loses nothing of value). Cluster.Database gives each
// test a database of its own (CREATE DATABASE … TEMPLATE template0),
// dropped when the test ends. Cluster.Stop and Cluster.Start stop and start
// the same cluster again on the same port, for tests of a store outage and
// of a Postgres restart.
//
// Shared is the cluster of a whole test binary, started at its first use
// and stopped by Main, which a package that uses Shared calls from its
// TestMain (through VerifyTestMain, which also checks for leaked
// goroutines): one initdb per `go test` of a package rather than one per
// test. postgres runs as a proctest.Process, in a process group of its own.
//
// Debian's postgresql package provides the binaries
// (/usr/lib/postgresql/VERSION/bin; the newest is taken, PostgreSQL 13 or
// newer). PostgreSQL refuses to run as root, so when the tests run as root
// initdb and postgres run as the `postgres` system user (the package
// creates it) or, failing that, as `nobody`, with the temporary directory
// given to that user.
//
// What this package must not do:
//   - skip a test: when PostgreSQL is missing it fails the test saying that
//     `make test` installs it (`make postgresql`), because CI must never
//     pass by testing nothing;
//   - listen anywhere but 127.0.0.1 and its own socket directory, or leave a
//     postgres running or its directory behind after its test (on Linux
//     the kernel kills the server if the test binary dies first);
//   - be imported by non-test code.
package pgtest
