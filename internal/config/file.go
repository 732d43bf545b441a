package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// fileConfig is the --config file. Scalars are read as text and go through
// the same parsing as flags and variables, so "1h" means the same in all
// three. Unknown keys are errors: a misspelt key must not be ignored.
type fileConfig struct {
	Listen                   *string      `yaml:"listen"`
	LogLevel                 *string      `yaml:"logLevel"`
	Prometheus               []Datasource `yaml:"prometheus"`
	PrometheusURL            []string     `yaml:"prometheusUrl"`
	PrometheusOAuth2TokenURL []string     `yaml:"prometheusOauth2TokenUrl"`
	Templates                *string      `yaml:"templates"`
	TemplatesPollInterval    *string      `yaml:"templatesPollInterval"`
	EvaluateTimeout          *string      `yaml:"evaluateTimeout"`
	WebhookAllow             []string     `yaml:"webhookAllow"`
	WebhookSecretFile        *string      `yaml:"webhookSecretFile"`
	WebhookMaxElapsed        *string      `yaml:"webhookMaxElapsed"`
	WebhookTimeout           *string      `yaml:"webhookTimeout"`
	MaxWebhookBacklog        *string      `yaml:"maxWebhookBacklog"`
	AuthTokenFile            *string      `yaml:"authTokenFile"`
	MaxAnalyses              *string      `yaml:"maxAnalyses"`
	MaxFinished              *string      `yaml:"maxFinished"`
	Retention                *string      `yaml:"retention"`
	ShutdownGrace            *string      `yaml:"shutdownGrace"`
	ErrorRetry               *string      `yaml:"errorRetry"`
	MaxAnalysisDuration      *string      `yaml:"maxAnalysisDuration"`
	Limits                   fileLimits   `yaml:",inline"`
	Replicas                 fileReplicas `yaml:",inline"`
}

// loadFile applies the configuration file at path to c and returns every
// problem, each naming the file and key.
func loadFile(c *Config, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("--config: %v", pathError(err))}
	}
	var f fileConfig
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			out := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				out[i] = fmt.Sprintf("%s: %s", path, yamlWords.Replace(e))
			}
			return out
		}
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}

	dir := filepath.Dir(path)
	relative := func(p *string) *string {
		if p == nil {
			return nil
		}
		r := relativeTo(dir, *p)
		return &r
	}
	scalars := map[string]*string{
		"listen":                  f.Listen,
		"log-level":               f.LogLevel,
		"templates":               relative(f.Templates),
		"templates-poll-interval": f.TemplatesPollInterval,
		"evaluate-timeout":        f.EvaluateTimeout,
		"webhook-secret-file":     relative(f.WebhookSecretFile),
		"webhook-max-elapsed":     f.WebhookMaxElapsed,
		"webhook-timeout":         f.WebhookTimeout,
		"max-webhook-backlog":     f.MaxWebhookBacklog,
		"auth-token-file":         relative(f.AuthTokenFile),
		"max-analyses":            f.MaxAnalyses,
		"max-finished":            f.MaxFinished,
		"retention":               f.Retention,
		"shutdown-grace":          f.ShutdownGrace,
		"error-retry":             f.ErrorRetry,
		"max-analysis-duration":   f.MaxAnalysisDuration,
	}
	maps.Copy(scalars, f.Limits.scalars())
	maps.Copy(scalars, f.Replicas.scalars())
	lists := map[string][]string{
		"prometheus-url":              f.PrometheusURL,
		"prometheus-oauth2-token-url": f.PrometheusOAuth2TokenURL,
		"webhook-allow":               f.WebhookAllow,
	}
	maps.Copy(lists, f.Replicas.lists())

	var problems []string
	for _, s := range settings() {
		key := camelCase(s.name)
		if v := scalars[s.name]; v != nil {
			if err := s.set(c, strings.TrimSpace(*v)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", path, key, err))
			}
		}
		if values := lists[s.name]; values != nil {
			s.reset(c)
			for _, v := range values {
				if err := s.set(c, strings.TrimSpace(v)); err != nil {
					problems = append(problems, fmt.Sprintf("%s: %s: %v", path, key, err))
				}
			}
		}
	}

	if f.Prometheus != nil {
		if f.PrometheusURL != nil {
			problems = append(problems, fmt.Sprintf("%s: give prometheus (datasources) or prometheusUrl (plain URLs), not both", path))
		}
		c.Datasources = make([]Datasource, len(f.Prometheus))
		for i, d := range f.Prometheus {
			d.BearerTokenFile = relativeTo(dir, d.BearerTokenFile)
			if d.BasicAuth != nil {
				b := *d.BasicAuth
				b.PasswordFile = relativeTo(dir, b.PasswordFile)
				d.BasicAuth = &b
			}
			d.TLS.CAFile = relativeTo(dir, d.TLS.CAFile)
			d.TLS.CertFile = relativeTo(dir, d.TLS.CertFile)
			d.TLS.KeyFile = relativeTo(dir, d.TLS.KeyFile)
			c.Datasources[i] = d
		}
	}
	return problems
}

// yamlWords puts the YAML decoder's messages into the words of the file;
// the line number it gives says which key.
var yamlWords = strings.NewReplacer(
	"field ", "unknown key ",
	" not found in type config.fileConfig", "",
	" not found in type config.Datasource", " (in a datasource)",
	" not found in type config.BasicAuth", " (in basicAuth)",
	" not found in type config.TLS", " (in tls)",
	"cannot unmarshal !!map into string", "a mapping cannot be a string",
	"cannot unmarshal !!seq into string", "a list cannot be a string",
	"cannot unmarshal !!map into", "a mapping cannot be",
	"cannot unmarshal !!seq into", "a list cannot be",
	"cannot unmarshal !!str", "a string",
	"cannot unmarshal !!int", "a number",
	"cannot unmarshal !!bool", "a boolean",
	"into []config.Datasource", "a list of datasources",
	"[]config.Datasource", "a list of datasources",
	"[]string", "a list of strings",
	"map[string]string", "a mapping of strings",
	"config.Datasource", "a datasource",
	"*config.BasicAuth", "basicAuth",
	"config.TLS", "tls",
)

// camelCase turns a flag name into its file key: max-analyses → maxAnalyses.
func camelCase(flagName string) string {
	parts := strings.Split(flagName, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
