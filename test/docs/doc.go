// Package docs checks canaryd's documentation, README.md, CHANGELOG.md and
// the Markdown files under docs/, as a reader would use it: every relative
// link and #anchor resolves, and every fenced block runs against a real
// canaryd and a real Prometheus holding the demo's data (docs/developing.md
// lists the info strings that say how), except a `go test` command, whose
// packages, test patterns and variables are checked against the repository
// instead. docs/operations.md stays short enough to read through, and only
// docs/configuration.md states the defaults of canaryd serve's flags.
package docs
