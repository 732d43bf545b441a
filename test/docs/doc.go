// Package docs checks canaryd's documentation, README.md and docs/*.md, as
// a reader would use it: every relative link and #anchor resolves, and every
// fenced block runs against a real canaryd and a real Prometheus holding the
// demo's data (docs/developing.md lists the info strings that say how),
// except a `go test` command, whose packages, test patterns and variables
// are checked against the repository instead.
package docs
