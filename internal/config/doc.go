// Package config reads the configuration of `canaryd serve`: command-line
// flags, their CANARYD_* environment variables and an optional YAML file
// (--config), in that order of precedence, and validates the result as a
// whole so that an operator sees every problem at once.
//
// The file exists for what flags express badly: several Prometheus
// datasources, each with its own headers (Mimir's and Cortex's
// X-Scope-OrgID) and, inline, Prometheus' own HTTP client configuration
// (prometheus/common/config: basic_auth, authorization, oauth2, tls_config,
// proxy_url, ...) and SigV4 signing (prometheus/sigv4), in the keys
// Prometheus users write; the keys canaryd took before (basicAuth,
// bearerTokenFile, tls) are mapped onto them. Every flag also has a file
// key, its name in camelCase.
//
// One table of settings (settings.go) drives the flags, their variables,
// the file's keys, -h and the configuration reference, docs/configuration.md,
// which Reference generates: after changing a setting, run
// `go generate ./internal/config` (TestReference fails until then). The
// defaults of the limits come from internal/limits, their one home.
//
// The package only reads and checks. It must not start anything, open
// network connections or log: the command wires what it returns. Secrets
// (the contents of token files) are held in Secret values, which never print.
package config

//go:generate go run ./gendocs ../../docs/configuration.md
