package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// setting is one row of the one table of settings: from it come the flag,
// its CANARYD_* environment variable, its key in the --config file, its
// line in -h and its row in the configuration reference (docs).
type setting struct {
	// name is the flag's name; the variable is EnvName(name) and the file
	// key camelCase(name).
	name string
	// group names the reference's section the setting is listed under.
	group string
	usage string
	// list settings are repeatable flags, comma-separated variables and
	// YAML lists; a source that gives any value replaces the lower
	// sources' values.
	list bool
	// boolean settings are flags that may be given without a value
	// (--verbatim-args for --verbatim-args=true).
	boolean bool
	// path settings name a file or directory; in the --config file a
	// relative path is relative to the file, as in Prometheus'.
	path bool
	// bytes settings are sizes in bytes.
	bytes bool
	// fileOnly settings have a file key but no flag nor variable: what
	// flags express badly (several datasources, each with credentials).
	fileOnly bool
	// noFile settings have a flag and a variable but no file key.
	noFile bool
	// set applies one value (one element, for a list).
	set func(c *Config, v string) error
	// reset empties a list before a source replaces it.
	reset func(c *Config)
	// get shows the setting's value in a configuration, so that its
	// default is shown from Default(); "" for none.
	get func(c *Config) string
	// none says what no value means, when it means something ("the host
	// name", "unsigned"); "" shows as "none".
	none string
	// storeDefault shows the default when --store is a postgres URL, ""
	// when it is the same (storeDefaults applies it).
	storeDefault string
	// value is the setting's value in a configuration, typed (int,
	// int64, bool, string, time.Duration, []string), for the line logged
	// at start; nil for settings not logged so (datasources, whose URLs
	// are logged redacted; token URLs; removed settings).
	value func(c *Config) any
	// num reads a number setting's value in a configuration, for bound
	// to check; nil for the others.
	num func(c *Config) int64
	// bound is the values a number setting refuses (none when zero).
	bound bound
	// decode reads the file key of a fileOnly setting from the file's
	// data, its relative paths resolved against dir, and returns its
	// problems.
	decode func(c *Config, data []byte, dir string) []string
	// removed, for a setting canaryd no longer has, says what to do
	// instead; giving it is a problem (see removed in replicas.go).
	removed string
}

// bound is the least value a number setting accepts.
type bound struct {
	// atLeast is the least value; with positive false and atLeast 0 no
	// value is refused but negative ones, when nonNegative is set.
	atLeast     int64
	positive    bool
	nonNegative bool
	// note says why, or what the edge means: "0 checks only on SIGHUP".
	note string
}

// atLeast bounds a number setting from below.
func atLeast(s setting, n int64, note string) setting {
	s.bound = bound{atLeast: n, note: note}
	return s
}

// positive refuses 0 and below.
func positive(s setting) setting {
	s.bound = bound{positive: true}
	return s
}

// nonNegative refuses below 0, note saying what 0 means.
func nonNegative(s setting, note string) setting {
	s.bound = bound{nonNegative: true, note: note}
	return s
}

// check returns the problem of the setting's value in c, "" for none.
func (s setting) check(c *Config) string {
	if s.num == nil || s.bound == (bound{}) {
		return ""
	}
	v, b := s.num(c), s.bound
	note := ""
	if b.note != "" {
		note = " (" + b.note + ")"
	}
	switch {
	case b.positive && v <= 0:
		return fmt.Sprintf("--%s: must be positive%s, got %s", s.name, note, time.Duration(v))
	case b.nonNegative && v < 0:
		return fmt.Sprintf("--%s: must not be negative%s, got %s", s.name, note, time.Duration(v))
	case b.atLeast != 0 && v < b.atLeast && s.bytes:
		return fmt.Sprintf("--%s: must be at least %s%s, got %d bytes", s.name, formatBytes(b.atLeast), note, v)
	case b.atLeast != 0 && v < b.atLeast:
		return fmt.Sprintf("--%s: must be at least %d%s, got %d", s.name, b.atLeast, note, v)
	}
	return ""
}

// boundText says in words what a setting accepts, for the reference.
func (s setting) boundText() string {
	switch b := s.bound; {
	case b.positive:
		return "more than 0"
	case b.nonNegative:
		return "0 or more"
	case b.atLeast != 0 && s.bytes:
		return "at least " + formatBytes(b.atLeast)
	case b.atLeast != 0:
		return fmt.Sprintf("at least %d", b.atLeast)
	}
	return ""
}

// key is the setting's key in the --config file, "" for none.
func (s setting) key() string {
	if s.noFile {
		return ""
	}
	return camelCase(s.name)
}

// env is the setting's environment variable, "" for none.
func (s setting) env() string {
	if s.fileOnly {
		return ""
	}
	return EnvName(s.name)
}

// defaultText shows the setting's default.
func (s setting) defaultText() string {
	if s.get != nil {
		if v := s.get(Default()); v != "" {
			if s.storeDefault != "" {
				v += "; " + s.storeDefault + " with a postgres --store"
			}
			return v
		}
	}
	if s.none != "" {
		return s.none
	}
	return "none"
}

// EnvName returns the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// camelCase turns a flag name into its file key: max-analyses → maxAnalyses.
func camelCase(flagName string) string {
	parts := strings.Split(flagName, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func durationSetting(group, name, usage string, field func(*Config) *time.Duration) setting {
	return setting{name: name, group: group, usage: usage,
		set: func(c *Config, v string) error {
			d, err := ParseDuration(v)
			if err != nil {
				return err
			}
			*field(c) = d
			return nil
		},
		get:   func(c *Config) string { return formatDuration(*field(c)) },
		value: func(c *Config) any { return *field(c) },
		num:   func(c *Config) int64 { return int64(*field(c)) }}
}

// formatDuration shows a duration as an operator writes it: 1h, 2m, 744h.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func intSetting(group, name, usage string, field func(*Config) *int) setting {
	return setting{name: name, group: group, usage: usage,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid integer %q", v)
			}
			*field(c) = n
			return nil
		},
		get:   func(c *Config) string { return strconv.Itoa(*field(c)) },
		value: func(c *Config) any { return *field(c) },
		num:   func(c *Config) int64 { return int64(*field(c)) }}
}

func stringSetting(group, name, usage string, field func(*Config) *string) setting {
	return setting{name: name, group: group, usage: usage,
		set: func(c *Config, v string) error {
			*field(c) = v
			return nil
		},
		get:   func(c *Config) string { return *field(c) },
		value: func(c *Config) any { return *field(c) }}
}

// pathSetting is a stringSetting naming a file or directory.
func pathSetting(group, name, usage string, field func(*Config) *string) setting {
	s := stringSetting(group, name, usage, field)
	s.path = true
	return s
}

func listSetting(group, name, usage string, field func(*Config) *[]string) setting {
	return setting{name: name, group: group, usage: usage, list: true,
		set:   func(c *Config, v string) error { *field(c) = append(*field(c), v); return nil },
		reset: func(c *Config) { *field(c) = nil },
		get:   func(c *Config) string { return strings.Join(*field(c), ", ") },
		value: func(c *Config) any { return *field(c) }}
}

// boolSetting reads true or false (1, 0, t, f, …, as strconv.ParseBool);
// its flag alone means true.
func boolSetting(group, name, usage string, field func(*Config) *bool) setting {
	return setting{name: name, group: group, usage: usage, boolean: true,
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("invalid boolean %q (want true or false)", v)
			}
			*field(c) = b
			return nil
		},
		get:   func(c *Config) string { return strconv.FormatBool(*field(c)) },
		value: func(c *Config) any { return *field(c) }}
}

// bytesSetting reads a size in bytes: a number, optionally followed by
// KiB, MiB or GiB (or KB, MB, GB in powers of ten).
func bytesSetting(group, name, usage string, field func(*Config) *int64) setting {
	return setting{name: name, group: group, usage: usage, bytes: true,
		set: func(c *Config, v string) error {
			n, err := parseBytes(v)
			if err != nil {
				return err
			}
			*field(c) = n
			return nil
		},
		get:   func(c *Config) string { return formatBytes(*field(c)) },
		value: func(c *Config) any { return *field(c) },
		num:   func(c *Config) int64 { return *field(c) }}
}

// formatBytes shows a size in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// The groups of settings, in the order the reference lists them.
const (
	groupServer     = "Server"
	groupPrometheus = "Prometheus"
	groupWeb        = "Web"
	groupProviders  = "Providers"
	groupTemplates  = "Templates"
	groupAnalyses   = "Analyses"
	groupWebhooks   = "Webhooks"
	groupLimits     = "Limits"
	groupReplicas   = "Replicas"
	groupStore      = "Store"
)

var groups = []string{groupServer, groupPrometheus, groupWeb, groupProviders, groupTemplates, groupAnalyses, groupWebhooks, groupLimits, groupStore, groupReplicas}

// settings are the settings of `canaryd serve`, in the order -h lists them.
func settings() []setting {
	config := pathSetting(groupServer, "config", "YAML configuration file, for what flags express badly (several Prometheus datasources with headers, credentials, TLS); flags and environment variables override it",
		func(c *Config) *string { return &c.File })
	config.noFile = true
	config.value = nil // logged as config_file
	tokenURLs := listSetting(groupPrometheus, "prometheus-oauth2-token-url", "an OAuth2 token endpoint that a metric's authentication.oauth2.tokenUrl may name (repeatable; a trailing / allows every URL under it); none refuses OAuth2",
		func(c *Config) *[]string { return &c.PrometheusOAuth2TokenURLs })
	tokenURLs.value = nil
	return append([]setting{
		config,
		stringSetting(groupServer, "listen", "address to listen on, host:port", func(c *Config) *string { return &c.Listen }),
		{name: "log-level", group: groupServer, usage: "least severe level logged: debug, info, warn or error",
			set: func(c *Config, v string) error {
				l, err := zapcore.ParseLevel(v)
				if err != nil || l > zapcore.ErrorLevel {
					return fmt.Errorf("invalid log level %q (want debug, info, warn or error)", v)
				}
				c.LogLevel = l
				return nil
			},
			get:   func(c *Config) string { return c.LogLevel.String() },
			value: func(c *Config) any { return c.LogLevel.String() }},
		{name: "prometheus", group: groupPrometheus, fileOnly: true, none: "prometheusUrl's",
			usage:  "Prometheus-compatible datasources (Prometheus, Thanos, Mimir, Cortex), each with its own headers, and credentials, TLS and proxy in Prometheus' HTTP client configuration, or SigV4 (keys below); the first is the default for metrics without an address. Not with prometheusUrl",
			decode: decodeDatasources},
		{name: "prometheus-url", group: groupPrometheus, list: true,
			usage: "a Prometheus that metrics may query (repeatable); the first is the default for metrics without an address",
			set: func(c *Config, v string) error {
				c.Datasources = append(c.Datasources, Datasource{URL: v})
				return nil
			},
			reset: func(c *Config) { c.Datasources = nil },
			get: func(c *Config) string {
				urls := make([]string, len(c.Datasources))
				for i, d := range c.Datasources {
					urls[i] = d.URL
				}
				return strings.Join(urls, ", ")
			}},
		tokenURLs,
		stringSetting(groupPrometheus, "prometheus-external-url", "the default Prometheus (the first datasource) as a person's browser reaches it, e.g. https://prometheus.example.com: the HTML report and the page link each metric that queries it to its graph there, and their curl names it; none means no link for those metrics (the address canaryd queries is never shown)",
			func(c *Config) *string { return &c.PrometheusExternalURL }),
		listSetting(groupWeb, "web-allow", "URL prefix that a web metric's url, and each redirect it follows, may start with (repeatable; the prefix rules of webhook-allow); none means web metrics are refused",
			func(c *Config) *[]string { return &c.WebAllow }),
		withNone(pathSetting(groupProviders, "credentials-dir", "directory of the metric providers' credentials, laid out as Kubernetes mounts Argo Rollouts' Secrets: DIR/datadog/api-key, app-key and address; DIR/influxdb/address, authToken and org; DIR/newrelic/personal-api-key, account-id and region; a metric's secretRef.name (Datadog) or profile (InfluxDB, New Relic) picks the subdirectory. Read when a metric needs them (by each analysis, not when a template of --templates is loaded), so a Secret created or rotated later applies without a restart; a directory that is not there stops serve",
			func(c *Config) *string { return &c.CredentialsDir }), "none: Datadog's keys come from DD_API_KEY, DD_APP_KEY and DD_ADDRESS"),
		listSetting(groupProviders, "graphite-allow", "URL prefix that a Graphite metric's render URL (its address and /render), and each redirect it follows, may start with (repeatable; the prefix rules of web-allow); none means Graphite metrics are refused",
			func(c *Config) *[]string { return &c.GraphiteAllow }),
		pathSetting(groupTemplates, "templates", "directory of AnalysisTemplate / ClusterAnalysisTemplate YAML files served under /v1/templates",
			func(c *Config) *string { return &c.Templates }),
		nonNegative(durationSetting(groupTemplates, "templates-poll-interval", "how often --templates is checked for changes; 0 checks only on SIGHUP",
			func(c *Config) *time.Duration { return &c.TemplatesPollInterval }), "0 checks only on SIGHUP"),
		positive(durationSetting(groupAnalyses, "evaluate-timeout", "how long a round of /v1/evaluate or /v1/templates/{name}/evaluate may take when the caller sets no ?timeout= or Request-Timeout; keep it below the caller's own timeout (Argo's web provider: 10s)",
			func(c *Config) *time.Duration { return &c.EvaluateTimeout })),
		listSetting(groupWebhooks, "webhook-allow", "URL prefix a webhook may be sent to (repeatable); none means webhooks are refused",
			func(c *Config) *[]string { return &c.WebhookAllow }),
		withNone(pathSetting(groupWebhooks, "webhook-secret-file", "file holding the HMAC key that signs webhooks (webhook-signature): whsec_<base64> as Standard Webhooks writes it, or the key's bytes",
			func(c *Config) *string { return &c.WebhookSecretFile }), "unsigned"),
		positive(durationSetting(groupWebhooks, "webhook-max-elapsed", "how long a webhook event's delivery is retried, from its first attempt, before it is given up",
			func(c *Config) *time.Duration { return &c.WebhookMaxElapsed })),
		positive(durationSetting(groupWebhooks, "webhook-timeout", "how long one webhook delivery attempt may take, redirects included",
			func(c *Config) *time.Duration { return &c.WebhookTimeout })),
		atLeast(intSetting(groupWebhooks, "max-webhook-backlog", "analyses with webhook deliveries owed (running with a webhook, or finished with deliveries still being made or retried) before new analyses with a webhook get 429",
			func(c *Config) *int { return &c.MaxWebhookBacklog }), 1, ""),
		withNone(pathSetting(groupServer, "auth-token-file", "file of bearer tokens, one a line; when set, every /v1 call needs Authorization: Bearer <token>",
			func(c *Config) *string { return &c.AuthTokenFile }), "none: the API is open"),
		atLeast(intSetting(groupAnalyses, "max-analyses", "analyses running at once before new ones get 429",
			func(c *Config) *int { return &c.MaxAnalyses }), 1, ""),
		atLeast(intSetting(groupAnalyses, "workers", "measurements the analyses take at once, each a query in flight: 256 queries of 50 ms make 5,000 measurements a second. One due while all are busy waits for a worker and starts late (canaryd_measurement_lateness_seconds, canaryd_measurements_late_total)",
			func(c *Config) *int { return &c.Workers }), 1, ""),
		atLeast(intSetting(groupAnalyses, "max-finished", "finished analyses kept readable; the oldest are dropped first",
			func(c *Config) *int { return &c.MaxFinished }), 1, "a finished analysis must stay readable by its id"),
		withStoreDefault(positive(durationSetting(groupAnalyses, "retention", "how long a finished analysis stays readable",
			func(c *Config) *time.Duration { return &c.Retention })), formatDuration(DefaultStoreRetention)),
		nonNegative(durationSetting(groupAnalyses, "shutdown-grace", "on SIGTERM, how long running analyses get to finish before they end with phase Error",
			func(c *Config) *time.Duration { return &c.ShutdownGrace }), ""),
		positive(durationSetting(groupAnalyses, "error-retry", "wait after an Error measurement before measuring again, as Argo Rollouts",
			func(c *Config) *time.Duration { return &c.ErrorRetry })),
		nonNegative(durationSetting(groupAnalyses, "max-analysis-duration", "longest an analysis may run before it ends with phase Error; 0 for no bound",
			func(c *Config) *time.Duration { return &c.MaxAnalysisDuration }), "0 means no bound"),
	}, append(append(limitSettings(), storeSettings()...), replicaSettings()...)...)
}

// withStoreDefault sets the default shown for a postgres --store.
func withStoreDefault(s setting, d string) setting {
	s.storeDefault = d
	return s
}

// withNone sets what no value of s means.
func withNone(s setting, none string) setting {
	s.none = none
	return s
}

// Value is one setting's value in a configuration.
type Value struct {
	// Name is the setting's flag name: max-analyses.
	Name string
	// Value is typed: int, int64, bool, string, time.Duration or
	// []string.
	Value any
}

// Values returns the settings' values in c, in the order of -h, for the
// line canaryd logs when it starts. The datasources and the OAuth2 token
// URLs are left out, for their URLs to be logged redacted if at all;
// secrets are never values (a file holding one is named, not read).
func (c *Config) Values() []Value {
	var out []Value
	for _, s := range settings() {
		if s.value != nil {
			out = append(out, Value{Name: s.name, Value: s.value(c)})
		}
	}
	return out
}
