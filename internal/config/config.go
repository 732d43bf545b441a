package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/sigv4"
	"go.uber.org/zap/zapcore"

	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/limits"
	"github.com/canaryd/canaryd/internal/provider/graphite"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/provider/web"
	"github.com/canaryd/canaryd/internal/templates"
	"github.com/canaryd/canaryd/internal/webhook"
)

// EnvPrefix starts the environment variable of every flag:
// --max-analyses is CANARYD_MAX_ANALYSES.
const EnvPrefix = "CANARYD_"

// Config is the validated configuration of `canaryd serve`.
type Config struct {
	// File is the configuration file read, "" when none.
	File string
	// Listen is the address to listen on, host:port (":0" for any free
	// port).
	Listen string
	// LogLevel is the least severe level logged: debug, info, warn or error.
	LogLevel zapcore.Level
	// Datasources are the Prometheus servers metrics may query; the first
	// is the default for metrics that name no address.
	Datasources []Datasource
	// PrometheusOAuth2TokenURLs are the OAuth2 token endpoints a metric's
	// authentication.oauth2.tokenUrl may name (a trailing "/" allows every
	// URL under it). None means OAuth2 is refused.
	PrometheusOAuth2TokenURLs []string
	// PrometheusExternalURL is the default datasource's address as a
	// person's browser reaches it, for the links of the HTML report and
	// the page; "" for none.
	PrometheusExternalURL string
	// Templates is the directory of named templates; "" for none.
	Templates string
	// TemplatesPollInterval is how often the templates directory is
	// checked for changes; 0 checks only on SIGHUP.
	TemplatesPollInterval time.Duration
	// EvaluateTimeout bounds a round of the evaluate endpoints when the
	// caller sets no deadline of its own.
	EvaluateTimeout time.Duration
	// WebAllow are the URL prefixes a web metric may request; none means
	// web metrics are refused.
	WebAllow []string
	// CredentialsDir is the directory of the providers' Secrets, laid out
	// as Kubernetes mounts them (DIR/datadog/api-key); "" for none.
	CredentialsDir string
	// GraphiteAllow are the URL prefixes a Graphite metric's render URL
	// may start with; none means Graphite metrics are refused.
	GraphiteAllow []string
	// WebhookAllow are the URL prefixes webhooks may be sent to; none
	// means webhooks are refused.
	WebhookAllow []string
	// WebhookSecretFile holds the HMAC key that signs webhooks, and
	// WebhookSecret is the key it holds (webhook.ReadSecretFile: the
	// decoded bytes of a whsec_ key, else the file's bytes without the
	// trailing newline); "" sends webhooks unsigned.
	WebhookSecretFile string
	WebhookSecret     Secret
	// WebhookMaxElapsed is how long the deliveries of one webhook event
	// are retried, from its first attempt.
	WebhookMaxElapsed time.Duration
	// WebhookTimeout bounds one webhook delivery attempt.
	WebhookTimeout time.Duration
	// MaxWebhookBacklog is how many analyses may have webhook deliveries
	// owed at once (running with a webhook, or finished with deliveries
	// still being made); beyond it a new analysis with a webhook gets 429.
	MaxWebhookBacklog int
	// AuthTokenFile holds the bearer tokens that /v1 calls need, one a
	// line, and AuthTokens are those tokens. None means the API is open.
	AuthTokenFile string
	AuthTokens    []Secret
	// MaxAnalyses is how many analyses may run at once.
	MaxAnalyses int
	// Workers is how many measurements the analyses take at once: the
	// scheduler's pool of workers (analysis.Scheduler).
	Workers int
	// MaxFinished is how many finished analyses are kept readable; the
	// oldest are dropped first.
	MaxFinished int
	// Retention is how long a finished analysis stays readable.
	Retention time.Duration
	// ShutdownGrace is how long running analyses get to finish on SIGTERM.
	ShutdownGrace time.Duration
	// ErrorRetry is the wait after an Error measurement.
	ErrorRetry time.Duration
	// Limits bound what one caller can make the service do, each with its
	// flag (limits.go); their MaxAnalysisDuration bounds every analysis (0:
	// no bound).
	limits.Limits
	// Replicas name this replica (replicas.go).
	Replicas
	// Storage says where analyses are kept (store.go).
	Storage
}

// Datasource is one Prometheus-compatible server (Prometheus, Thanos,
// Mimir, Cortex) and how to reach it: canaryd's keys (name, url, headers,
// sigv4) and, inline, Prometheus' HTTP client configuration, in the keys
// Prometheus, Alertmanager and blackbox_exporter users write (basic_auth,
// authorization, oauth2, tls_config, follow_redirects, enable_http2,
// proxy_url, http_headers). datasourceKeys documents them all.
type Datasource struct {
	// Name labels the datasource in metrics and messages; default its URL.
	Name string
	// URL is the base URL a metric's address names
	// (http://mimir-query-frontend:8080/prometheus).
	URL string
	// Headers are sent with every query; a metric cannot override them
	// (X-Scope-OrgID for Mimir and Cortex).
	Headers map[string]string
	// HTTP is how the datasource is reached; nil (a --prometheus-url)
	// means Prometheus' defaults. Its secrets print as <secret>.
	HTTP *promconfig.HTTPClientConfig
	// SigV4 signs every query with AWS Signature Version 4 (Amazon
	// Managed Service for Prometheus); nil for none. Its secret key
	// prints as <secret>.
	SigV4 *sigv4.SigV4Config
}

// Secret is a credential read from a file. It prints as [redacted] in
// every format (fmt, JSON, zap), so a configuration can be logged whole
// without leaking it; Reveal returns the value.
type Secret string

// String hides the value.
func (Secret) String() string { return "[redacted]" }

// GoString hides the value from %#v.
func (Secret) GoString() string { return `"[redacted]"` }

// MarshalJSON hides the value.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Reveal returns the secret's value, for the code that uses it.
func (s Secret) Reveal() string { return string(s) }

// Defaults of the settings that have one.
const (
	DefaultListen              = ":8080"
	DefaultPrometheusURL       = "http://localhost:9090"
	DefaultMaxAnalyses         = limits.MaxAnalyses
	DefaultWorkers             = analysis.DefaultWorkers
	DefaultMaxFinished         = limits.MaxFinished
	DefaultRetention           = time.Hour
	DefaultShutdownGrace       = 30 * time.Second
	DefaultErrorRetry          = analysis.DefaultErrorRetryInterval
	DefaultMaxAnalysisDuration = limits.MaxAnalysisDuration
	// DefaultErrorRetry, DefaultTemplatesPollInterval,
	// DefaultWebhookMaxElapsed and DefaultWebhookTimeout are the defaults
	// of the packages that use them; DefaultEvaluateTimeout is a limit's.
	DefaultTemplatesPollInterval = templates.DefaultPollInterval
	DefaultEvaluateTimeout       = limits.EvaluateTimeout
	DefaultWebhookMaxElapsed     = webhook.DefaultMaxElapsed
	DefaultWebhookTimeout        = webhook.DefaultAttemptTimeout
)

// Default returns the configuration used when nothing is set.
func Default() *Config {
	return &Config{
		Listen:        DefaultListen,
		LogLevel:      zapcore.InfoLevel,
		Datasources:   []Datasource{{URL: DefaultPrometheusURL}},
		MaxAnalyses:   DefaultMaxAnalyses,
		Workers:       DefaultWorkers,
		MaxFinished:   DefaultMaxFinished,
		Retention:     DefaultRetention,
		ShutdownGrace: DefaultShutdownGrace,
		ErrorRetry:    DefaultErrorRetry,
		Limits:        limits.Default(),
		Storage:       Storage{Store: DefaultStore, StoreLease: DefaultStoreLease},

		TemplatesPollInterval: DefaultTemplatesPollInterval,
		EvaluateTimeout:       DefaultEvaluateTimeout,
		WebhookMaxElapsed:     DefaultWebhookMaxElapsed,
		WebhookTimeout:        DefaultWebhookTimeout,
		MaxWebhookBacklog:     limits.MaxWebhookBacklog,
	}
}

// Error lists every problem found in a configuration.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// ParseDuration reads an operator's duration in Go's form (90s, 1.5h,
// 500ms) or Prometheus' (30d, 1w, 1y, 1d12h: a day is 24h, a week 7d, a
// year 365d), so that --retention=30d means what it means in Prometheus'
// own flags. A leading - is kept, for the settings' checks to refuse with
// their own words.
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	d, err := model.ParseDurationAllowNegative(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 30s, 5m, 1h, 1d12h, 30d, 1w)", s)
	}
	return time.Duration(d), nil
}

// rawValues records a flag's values as given, so that precedence can be
// applied after every source has been read.
type rawValues struct {
	list, boolean bool
	values        []string
}

// IsBoolFlag lets a boolean setting's flag go without a value
// (flag.Value's boolFlag).
func (r *rawValues) IsBoolFlag() bool { return r.boolean }

func (r *rawValues) String() string { return strings.Join(r.values, ",") }

func (r *rawValues) Set(v string) error {
	if !r.list {
		r.values = r.values[:0]
	}
	r.values = append(r.values, v)
	return nil
}

// Load reads the configuration of `canaryd serve` from its arguments (flags
// only), the environment (getenv) and the file that --config or
// CANARYD_CONFIG names. A flag wins over its environment variable, which
// wins over the file, which wins over the default. Every problem found is
// returned in one *Error. Help (-h) returns flag.ErrHelp after printing the
// flags to output.
func Load(args []string, getenv func(string) string, output io.Writer) (*Config, error) {
	all := settings()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(output)
	raw := make(map[string]*rawValues, len(all))
	for _, s := range all {
		if s.fileOnly {
			continue
		}
		raw[s.name] = &rawValues{list: s.list, boolean: s.boolean}
		fs.Var(raw[s.name], s.name, s.usage+" (default "+s.defaultText()+"); env "+s.env())
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintf(output, "Usage: canaryd serve [flags]\n\nEvery flag can also be set with its environment variable, and in the --config file\nunder its name in camelCase; a flag wins over its variable, which wins over the file\n(docs/configuration.md lists them all).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &Error{Problems: []string{err.Error()}}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, &Error{Problems: []string{fmt.Sprintf("unexpected arguments %q: serve takes flags only", fs.Args())}}
	}

	c := Default()
	var problems []string
	// given names the settings some source set, for the defaults that
	// depend on another setting (storeDefaults).
	given := map[string]bool{}
	file := ""
	if v := raw["config"].values; len(v) > 0 {
		file = v[0]
	} else {
		file = strings.TrimSpace(getenv(EnvName("config")))
	}
	if file != "" {
		problems = append(problems, loadFile(c, file, given)...)
	}

	for _, s := range all {
		if s.fileOnly {
			continue
		}
		source, values := "--"+s.name, raw[s.name].values
		if len(values) == 0 {
			env := getenv(EnvName(s.name))
			if strings.TrimSpace(env) == "" {
				continue
			}
			source, values = EnvName(s.name), splitEnv(env, s.list)
		}
		given[s.name] = true
		if s.list {
			s.reset(c)
		}
		for _, v := range values {
			if err := s.set(c, strings.TrimSpace(v)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", source, err))
			}
		}
	}
	c.File = file
	c.storeDefaults(given)

	problems = append(problems, c.validate()...)
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	return c, nil
}

// splitEnv splits a list variable at commas; a single value is kept whole.
func splitEnv(v string, list bool) []string {
	if !list {
		return []string{v}
	}
	var out []string
	for _, part := range strings.Split(v, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// validate checks the merged configuration, reads the secrets it names and
// returns every problem.
func (c *Config) validate() []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	for _, s := range settings() {
		if p := s.check(c); p != "" {
			problems = append(problems, p)
		}
	}

	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		add("--listen: %q is not host:port (e.g. :8080, 127.0.0.1:0)", c.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		add("--listen: %q: the port must be a number from 0 to 65535", c.Listen)
	}

	if len(c.Datasources) == 0 {
		add("--prometheus-url: at least one Prometheus is needed")
	}
	names := map[string]bool{}
	for i, d := range c.Datasources {
		problems = append(problems, d.validate(fmt.Sprintf("prometheus[%d]", i))...)
		if d.Name != "" {
			if names[d.Name] {
				add("prometheus[%d].name: duplicate name %q", i, d.Name)
			}
			names[d.Name] = true
		}
	}
	for i, u := range c.PrometheusOAuth2TokenURLs {
		if err := checkURL(u); err != nil {
			add("--prometheus-oauth2-token-url[%d]: %v", i, err)
		}
	}
	if u := c.PrometheusExternalURL; u != "" {
		if err := checkURL(u); err != nil {
			add("--prometheus-external-url: %v", err)
		} else if p, _ := url.Parse(u); p.User != nil || p.RawQuery != "" || p.Fragment != "" {
			add("--prometheus-external-url: must have no userinfo, query or fragment: it is shown to every reader of a report")
		}
	}

	if c.Templates != "" {
		if info, err := os.Stat(c.Templates); err != nil {
			add("--templates: %v", pathError(err))
		} else if !info.IsDir() {
			add("--templates: %s is not a directory", c.Templates)
		}
	}
	c.validatePrefixes(add)
	c.WebhookSecret = ""
	if c.WebhookSecretFile != "" {
		// The webhook package's reading, so that the key is the one its
		// receivers' libraries derive from the same file. Its errors
		// never quote the key.
		if err := readable(c.WebhookSecretFile); err != nil {
			add("--webhook-secret-file: %v", err)
		} else if key, err := webhook.ReadSecretFile(c.WebhookSecretFile); err != nil {
			add("--webhook-secret-file: %v", err)
		} else {
			c.WebhookSecret = Secret(key)
		}
	}
	c.AuthTokens = nil
	if c.AuthTokenFile != "" {
		tokens, err := ReadTokens(c.AuthTokenFile)
		switch {
		case err != nil:
			add("--auth-token-file: %v", err)
		case len(tokens) == 0:
			add("--auth-token-file: %s holds no token (one a line; blank lines and lines starting with # are skipped)", c.AuthTokenFile)
		}
		c.AuthTokens = tokens
	}

	problems = append(problems, validateLimits(c.Limits, c.Retention)...)
	problems = append(problems, c.Storage.validate()...)
	return problems
}

// validatePrefixes checks the URL prefixes of the allow-lists
// (--web-allow, --graphite-allow, --webhook-allow), each with the rules of
// what holds it.
func (c *Config) validatePrefixes(add func(format string, a ...any)) {
	for i, u := range c.WebAllow {
		if err := checkURL(u); err != nil {
			add("--web-allow[%d]: %v", i, err)
		} else if _, err := web.New(web.Options{Allow: []string{u}}); err != nil {
			add("--web-allow[%d]: %v", i, err)
		}
	}
	for i, u := range c.GraphiteAllow {
		if err := checkURL(u); err != nil {
			add("--graphite-allow[%d]: %v", i, err)
		} else if _, err := graphite.New(graphite.Options{Allow: []string{u}}); err != nil {
			add("--graphite-allow[%d]: %v", i, err)
		}
	}
	for i, u := range c.WebhookAllow {
		if err := checkURL(u); err != nil {
			add("--webhook-allow[%d]: %v", i, err)
		} else if _, err := webhook.New(webhook.Options{Allow: []string{u}}); err != nil {
			// The webhook package's own rules for a prefix (no query,
			// fragment or credentials), checked with the rest; a Sender
			// without a Registerer or a Logger starts and touches nothing.
			add("--webhook-allow[%d]: %v", i, err)
		}
	}
}

func (d Datasource) validate(path string) []string {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, path+fmt.Sprintf(format, a...)) }
	urlOK := false
	if err := checkURL(d.URL); err != nil {
		add(".url: %v", err)
	} else if u, _ := url.Parse(d.URL); u.RawQuery != "" || u.Fragment != "" {
		add(".url: must not have a query string or fragment")
	} else {
		urlOK = true
	}
	if h := d.HTTP; h != nil {
		files := map[string]string{
			"bearer_token_file":    h.BearerTokenFile,
			"tls_config.ca_file":   h.TLSConfig.CAFile,
			"tls_config.cert_file": h.TLSConfig.CertFile,
			"tls_config.key_file":  h.TLSConfig.KeyFile,
		}
		if a := h.Authorization; a != nil {
			files["authorization.credentials_file"] = a.CredentialsFile
		}
		if b := h.BasicAuth; b != nil {
			files["basic_auth.username_file"] = b.UsernameFile
			files["basic_auth.password_file"] = b.PasswordFile
		}
		if o := h.OAuth2; o != nil {
			files["oauth2.client_secret_file"] = o.ClientSecretFile
		}
		for field, file := range files {
			if file != "" {
				if err := readable(file); err != nil {
					add(".%s: %v", field, err)
				}
			}
		}
	}
	// The rest as the Prometheus provider checks it when it starts: the
	// HTTP client configuration's own rules, no proxy from the
	// environment, SigV4 alone.
	if urlOK {
		if err := prometheus.CheckDatasource(d.provider()); err != nil {
			add(": %v", err)
		}
	}
	slices.Sort(problems) // map order must not decide the message order
	return problems
}

// provider is the datasource as the Prometheus provider takes it.
func (d Datasource) provider() prometheus.Datasource {
	return prometheus.Datasource{Name: d.Name, URL: d.URL, Headers: d.Headers, HTTP: d.HTTP, SigV4: d.SigV4}
}

// ProviderDatasources are the datasources as the Prometheus provider takes
// them.
func (c *Config) ProviderDatasources() []prometheus.Datasource {
	out := make([]prometheus.Datasource, len(c.Datasources))
	for i, d := range c.Datasources {
		out[i] = d.provider()
	}
	return out
}

// checkURL accepts an absolute http or https URL without credentials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an http or https URL", raw)
	}
	return nil
}

func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return pathError(err)
	}
	return f.Close()
}

// pathError drops the operation from an *fs.PathError ("open x: no such
// file" reads better as "x: no such file").
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// maxSecretFile bounds what is read from a token or key file: a mistaken
// path to a large file must not be read into memory.
const maxSecretFile = 1 << 20

// readLimited reads a secret file whole, up to maxSecretFile.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, pathError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, pathError(err)
	}
	if len(data) > maxSecretFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSecretFile)
	}
	return data, nil
}

// MinTokenLength is the shortest bearer token accepted, in bytes: a token
// is a credential to guess, and a short one (a placeholder, a word typed
// by hand) is guessed. `openssl rand -hex 32` makes one of 64.
const MinTokenLength = 16

// ErrShortToken is ReadTokens' error, wrapped with the file and lines, for
// a token shorter than MinTokenLength.
var ErrShortToken = fmt.Errorf("a token must be at least %d bytes long (make one with `openssl rand -hex 32`)", MinTokenLength)

// ReadTokens reads a bearer token file: one token a line, surrounding
// white space trimmed, blank lines and lines starting with # skipped. A
// token shorter than MinTokenLength is an error naming the file and its
// line, never the token; then no token is returned.
func ReadTokens(path string) ([]Secret, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	var tokens []Secret
	var short []string
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) < MinTokenLength {
			short = append(short, strconv.Itoa(n+1))
			continue
		}
		tokens = append(tokens, Secret(line))
	}
	if len(short) > 0 {
		lines := "line " + short[0]
		if len(short) > 1 {
			lines = "lines " + strings.Join(short, ", ")
		}
		return nil, fmt.Errorf("%s: %s: %w", path, lines, ErrShortToken)
	}
	return tokens, nil
}

// relativeTo resolves a path from the configuration file against the
// file's directory, as Prometheus does, so a configuration and its secrets
// can move together.
func relativeTo(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
