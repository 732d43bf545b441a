package config

import (
	"bytes"
	"fmt"
	"strings"
)

// Reference returns the configuration reference of `canaryd serve` in
// Markdown, generated from the table of settings: every setting with its
// flag, environment variable, file key, default and meaning, grouped, and
// the keys of a datasource. docs/configuration.md is its output
// (`go generate ./internal/config` writes it; a test fails when it differs).
func Reference() []byte {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("<!-- Generated from internal/config by `go generate ./internal/config`; do not edit. -->\n\n")
	p("# Configuration\n\n")
	p("`canaryd serve` reads its configuration from flags, their `%s*` environment\n", EnvPrefix)
	p("variables and an optional YAML file (`--config`). A flag wins over its variable,\n")
	p("which wins over the file, which wins over the default. Every problem found is\n")
	p("reported at once, each naming the flag, variable or file line at fault, and\n")
	p("canaryd does not start until there is none.\n\n")
	p("- **Durations** are Go's (`90s`, `1.5h`, `500ms`) or Prometheus' (`30d`, `1w`, `1d12h`).\n")
	p("- **Sizes** are bytes, or a number with `KiB`, `MiB`, `GiB` (`KB`, `MB`, `GB` in powers of ten).\n")
	p("- **Lists** are repeated flags (`--webhook-allow A --webhook-allow B`), comma-separated\n")
	p("  variables (`A,B`) and YAML lists; a source that gives a list replaces the lower sources' list.\n")
	p("- **Files** named in the configuration file are relative to it.\n")
	p("- The file's keys are the flags' names in camelCase; an unknown key is an error.\n\n")
	p("Contents:\n\n")
	for _, g := range groups {
		p("- [%s](#%s)\n", g, strings.ToLower(g))
	}
	p("- [Datasources](#datasources)\n")
	p("- [Removed settings](#removed-settings)\n")

	all := settings()
	for _, g := range groups {
		p("\n## %s\n\n", g)
		p("| Flag | Environment variable | Config key | Default | Meaning |\n")
		p("|---|---|---|---|---|\n")
		for _, s := range all {
			if s.group != g || s.removed != "" {
				continue
			}
			flag, env, key := "—", "—", "—"
			if !s.fileOnly {
				flag, env = code("--"+s.name), code(s.env())
			}
			if k := s.key(); k != "" {
				key = code(k)
			}
			meaning := s.usage
			if s.list {
				meaning += " (a list)"
			}
			if b := s.boundText(); b != "" {
				meaning += " (" + b + ")"
			}
			p("| %s | %s | %s | %s | %s |\n", flag, env, key, s.defaultCell(), cell(meaning))
		}
	}

	p("\n## Datasources\n\n")
	p("The `prometheus` key of the configuration file lists Prometheus-compatible\n")
	p("servers. Each takes canaryd's keys (`name`, `url`, `headers`, `sigv4`) and,\n")
	p("beside them, Prometheus' own HTTP client configuration: the keys Prometheus,\n")
	p("Alertmanager and blackbox_exporter users already write, with their meaning\n")
	p("([Prometheus' HTTP client configuration](https://prometheus.io/docs/prometheus/latest/configuration/configuration/#http_config)\n")
	p("has the full list). Files are relative to the configuration file; those holding\n")
	p("credentials are read for every query, and TLS files are reloaded when they change.\n")
	p("Secrets print as `<secret>`.\n\n")
	p("| Key | Meaning |\n|---|---|\n")
	for _, k := range datasourceKeys {
		p("| %s | %s |\n", code(k.key), cell(k.meaning))
	}
	p("\nThe keys canaryd took before still work, each the same as its new key; a\n")
	p("datasource that gives both is refused:\n\n")
	p("| Old key | New key |\n|---|---|\n")
	for _, k := range oldDatasourceKeys {
		p("| %s | %s |\n", code(k.key), code(k.meaning))
	}
	p("\nExamples, each loaded by the tests: [testdata/config](../testdata/config/).\n")

	p("\n## Removed settings\n\n")
	p("canaryd no longer has these. A flag, variable or file key of one is refused at\n")
	p("start (exit 64) with what to do instead, rather than ignored:\n\n")
	p("| Flag | Environment variable | Config key | Instead |\n|---|---|---|---|\n")
	for _, s := range all {
		if s.removed != "" {
			p("| %s | %s | %s | %s |\n", code("--"+s.name), code(s.env()), code(s.key()), cell(s.removed))
		}
	}
	return b.Bytes()
}

type keyDoc struct{ key, meaning string }

// datasourceKeys are the keys of a datasource in the file, as the
// reference lists them.
var datasourceKeys = []keyDoc{
	{"name", "labels the datasource in metrics and messages; default its URL"},
	{"url", "base URL a metric's address names (http://mimir-query-frontend:8080/prometheus); user:password@ in it is basic auth"},
	{"headers", "headers sent with every query, which a metric cannot override (X-Scope-OrgID for Mimir and Cortex)"},
	{"basic_auth.username", "HTTP basic authentication: user name (or username_file)"},
	{"basic_auth.password", "password; or password_file, a file read for every query"},
	{"authorization.type", "Authorization header's scheme; default Bearer"},
	{"authorization.credentials", "the credentials, e.g. a bearer token; or credentials_file, a file read for every query"},
	{"bearer_token_file", "Prometheus' older spelling of authorization.credentials_file"},
	{"oauth2", "OAuth2 client credentials the datasource's token is fetched with: client_id, client_secret (or client_secret_file), token_url, scopes, endpoint_params"},
	{"tls_config.ca_file", "CA certificates to verify the server with, PEM; reloaded when it changes"},
	{"tls_config.cert_file", "client certificate, PEM, with key_file; reloaded when they change"},
	{"tls_config.key_file", "client certificate's key, PEM, with cert_file"},
	{"tls_config.server_name", "name to verify the server's certificate against, and to send in SNI"},
	{"tls_config.insecure_skip_verify", "do not verify the server's certificate"},
	{"tls_config.min_version", "least TLS version (TLS12, TLS13); default TLS 1.2"},
	{"follow_redirects", "follow redirects, within the datasource's own origin only; default true"},
	{"enable_http2", "use HTTP/2 over TLS when the server offers it; default true"},
	{"proxy_url", "HTTP proxy the queries go through (with no_proxy, proxy_connect_header); none by default. proxy_from_environment is refused: canaryd never takes a proxy from the environment"},
	{"http_headers", "more headers, Prometheus' way (values, secrets, files)"},
	{"sigv4", "sign every query with AWS Signature Version 4, for Amazon Managed Service for Prometheus; not with basic_auth, authorization or oauth2. A metric's authentication.sigv4 is accepted only on such a datasource, whose settings apply"},
	{"sigv4.region", "AWS region (default: the AWS SDK's, e.g. AWS_REGION)"},
	{"sigv4.access_key", "AWS access key ID, with secret_key; without them the AWS SDK's default chain (environment, web identity, shared files, instance role)"},
	{"sigv4.secret_key", "AWS secret access key"},
	{"sigv4.profile", "named profile of the AWS shared configuration files"},
	{"sigv4.role_arn", "role to assume with AWS STS (with external_id, session_name)"},
}

// oldDatasourceKeys are the keys of a datasource canaryd took before
// Prometheus' HTTP client configuration, with the key each maps onto.
var oldDatasourceKeys = []keyDoc{
	{"bearerTokenFile", "authorization.credentials_file"},
	{"basicAuth.username", "basic_auth.username"},
	{"basicAuth.password", "basic_auth.password"},
	{"basicAuth.passwordFile", "basic_auth.password_file"},
	{"tls.caFile", "tls_config.ca_file"},
	{"tls.certFile", "tls_config.cert_file"},
	{"tls.keyFile", "tls_config.key_file"},
	{"tls.insecureSkipVerify", "tls_config.insecure_skip_verify"},
	{"tls.serverName", "tls_config.server_name"},
}

// code quotes s as code in Markdown.
func code(s string) string { return "`" + s + "`" }

// cell makes s safe in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

// defaultCell shows the setting's default in a table: a value as code,
// what no value means in words.
func (s setting) defaultCell() string {
	if s.get != nil {
		if v := s.get(Default()); v != "" {
			if s.storeDefault != "" {
				return code(v) + "; " + code(s.storeDefault) + " with a postgres " + code("--store")
			}
			return code(v)
		}
	}
	return cell(s.defaultText())
}
