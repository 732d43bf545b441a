package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/sigv4"
	yaml "go.yaml.in/yaml/v3"
)

// loadFile applies the configuration file at path to c and returns every
// problem, each naming the file, line and key. Its keys are those of the
// settings (camelCase of the flags); scalars are read as text and go
// through the same parsing as flags and variables, so "1h" means the same
// in all three. Unknown keys are errors: a misspelt key must not be
// ignored. The settings it sets a value of are marked in given.
func loadFile(c *Config, path string, given map[string]bool) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("--config: %v", pathError(err))}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return []string{fmt.Sprintf("%s: %s", path, yamlWords.Replace(strings.TrimPrefix(err.Error(), "yaml: ")))}
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return []string{fmt.Sprintf("%s: line %d: the file must be a mapping of keys to values", path, top.Line)}
	}

	byKey := map[string]setting{}
	for _, s := range settings() {
		if k := s.key(); k != "" {
			byKey[k] = s
		}
	}
	dir := filepath.Dir(path)
	var problems []string
	add := func(line int, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("%s: line %d: ", path, line)+fmt.Sprintf(format, a...))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		s, ok := byKey[k.Value]
		switch {
		case !ok:
			add(k.Line, "unknown key %s", k.Value)
			continue
		case seen[k.Value]:
			add(k.Line, "%s: given twice", k.Value)
			continue
		}
		seen[k.Value] = true
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // a key without a value sets nothing
		}
		given[s.name] = true
		if s.decode != nil {
			for _, p := range s.decode(c, data, dir) {
				problems = append(problems, fmt.Sprintf("%s: %s", path, p))
			}
			continue
		}
		values, err := scalars(v, s.list)
		if err != nil {
			add(v.Line, "%v (%s)", err, k.Value)
			continue
		}
		if s.list {
			s.reset(c)
		}
		for _, value := range values {
			value = strings.TrimSpace(value)
			if s.path {
				value = relativeTo(dir, value)
			}
			if err := s.set(c, value); err != nil {
				add(v.Line, "%s: %v", k.Value, err)
			}
		}
	}
	if seen["prometheus"] && seen["prometheusUrl"] {
		problems = append(problems, fmt.Sprintf("%s: give prometheus (datasources) or prometheusUrl (plain URLs), not both", path))
	}
	return problems
}

// scalars returns the text of a value: one scalar, or for a list setting
// a list of them.
func scalars(v *yaml.Node, list bool) ([]string, error) {
	switch {
	case v.Kind == yaml.ScalarNode && !list:
		return []string{v.Value}, nil
	case v.Kind == yaml.SequenceNode && list:
		out := make([]string, len(v.Content))
		for i, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("item %d: %s cannot be a string", i, kindWords(e))
			}
			out[i] = e.Value
		}
		return out, nil
	case list:
		return nil, fmt.Errorf("%s cannot be a list of strings", kindWords(v))
	default:
		return nil, fmt.Errorf("%s cannot be a string", kindWords(v))
	}
}

func kindWords(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch v.ShortTag() {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a string"
}

// decodeDatasources reads the prometheus key of the file (data): a list of
// datasources, every key of which must be known, their files relative to
// dir.
func decodeDatasources(c *Config, data []byte, dir string) []string {
	var f struct {
		Prometheus []fileDatasource `yaml:"prometheus"`
		// The other keys are the other settings', read from the nodes.
		Others map[string]any `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			out := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				out[i] = yamlWords.Replace(e)
			}
			return out
		}
		return []string{fmt.Sprintf("prometheus: %s", yamlWords.Replace(err.Error()))}
	}
	var problems []string
	c.Datasources = make([]Datasource, len(f.Prometheus))
	for i, d := range f.Prometheus {
		if p := d.mapOldKeys(); p != "" {
			problems = append(problems, fmt.Sprintf("prometheus[%d].%s", i, p))
		}
		http := d.HTTP
		http.SetDirectory(dir)
		c.Datasources[i] = Datasource{Name: d.Name, URL: d.URL, Headers: d.Headers, HTTP: &http, SigV4: d.SigV4}
	}
	return problems
}

// fileDatasource is a datasource as the file writes it: canaryd's keys,
// Prometheus' HTTP client configuration inline, and the keys canaryd took
// before it (basicAuth, bearerTokenFile, tls), which still work.
type fileDatasource struct {
	Name    string                      `yaml:"name"`
	URL     string                      `yaml:"url"`
	Headers map[string]string           `yaml:"headers"`
	HTTP    promconfig.HTTPClientConfig `yaml:",inline"`
	SigV4   *sigv4.SigV4Config          `yaml:"sigv4"`

	OldBearerTokenFile string        `yaml:"bearerTokenFile"`
	OldBasicAuth       *oldBasicAuth `yaml:"basicAuth"`
	OldTLS             *oldTLS       `yaml:"tls"`
}

type oldBasicAuth struct {
	Username     string            `yaml:"username"`
	Password     promconfig.Secret `yaml:"password"`
	PasswordFile string            `yaml:"passwordFile"`
}

type oldTLS struct {
	CAFile             string `yaml:"caFile"`
	CertFile           string `yaml:"certFile"`
	KeyFile            string `yaml:"keyFile"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
	ServerName         string `yaml:"serverName"`
}

// UnmarshalYAML starts from Prometheus' defaults (follow_redirects and
// enable_http2 true), as Prometheus does for a scrape configuration.
func (d *fileDatasource) UnmarshalYAML(unmarshal func(any) error) error {
	type datasourceKeys fileDatasource
	*d = fileDatasource{HTTP: promconfig.DefaultHTTPClientConfig}
	return unmarshal((*datasourceKeys)(d))
}

// mapOldKeys moves the keys canaryd took before onto Prometheus' own,
// and returns the problem when a datasource gives both.
func (d *fileDatasource) mapOldKeys() string {
	h := &d.HTTP
	if d.OldBearerTokenFile != "" {
		if h.BearerTokenFile != "" || h.BearerToken != "" || h.Authorization != nil {
			return "bearerTokenFile: the old spelling of authorization.credentials_file; give only one of them"
		}
		h.Authorization = &promconfig.Authorization{Type: "Bearer", CredentialsFile: d.OldBearerTokenFile}
	}
	if b := d.OldBasicAuth; b != nil {
		if h.BasicAuth != nil {
			return "basicAuth: the old spelling of basic_auth; give only one of them"
		}
		h.BasicAuth = &promconfig.BasicAuth{Username: b.Username, Password: b.Password, PasswordFile: b.PasswordFile}
	}
	if t := d.OldTLS; t != nil {
		if h.TLSConfig != (promconfig.TLSConfig{}) {
			return "tls: the old spelling of tls_config; give only one of them"
		}
		h.TLSConfig = promconfig.TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, InsecureSkipVerify: t.InsecureSkipVerify, ServerName: t.ServerName}
	}
	d.OldBearerTokenFile, d.OldBasicAuth, d.OldTLS = "", nil, nil
	return ""
}

// yamlWords puts the YAML decoder's messages into the words of the file;
// the line number it gives says which key.
var yamlWords = strings.NewReplacer(
	"field ", "unknown key ",
	" not found in type config.datasourceKeys", " (in a datasource)",
	" not found in type config.oldBasicAuth", " (in basicAuth)",
	" not found in type config.oldTLS", " (in tls)",
	" not found in type config.plain", "",
	" not found in type sigv4.plain", " (in sigv4)",
	"cannot unmarshal !!map into string", "a mapping cannot be a string",
	"cannot unmarshal !!seq into string", "a list cannot be a string",
	"cannot unmarshal !!map into", "a mapping cannot be",
	"cannot unmarshal !!seq into", "a list cannot be",
	"cannot unmarshal !!str", "a string",
	"cannot unmarshal !!int", "a number",
	"cannot unmarshal !!bool", "a boolean",
	"into []config.fileDatasource", "a list of datasources",
	"[]config.fileDatasource", "a list of datasources",
	"map[string]string", "a mapping of strings",
	"config.datasourceKeys", "a datasource",
	"*config.oldBasicAuth", "basicAuth",
	"config.oldTLS", "tls",
)
