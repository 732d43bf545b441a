package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// loadFile applies the configuration file at path to c and returns every
// problem, each naming the file, line and key. Its keys are those of the
// settings (camelCase of the flags); scalars are read as text and go
// through the same parsing as flags and variables, so "1h" means the same
// in all three. Unknown keys are errors: a misspelt key must not be
// ignored.
func loadFile(c *Config, path string) []string {
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
		Prometheus []Datasource `yaml:"prometheus"`
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
		return []string{fmt.Sprintf("prometheus: %v", err)}
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
	return nil
}

// yamlWords puts the YAML decoder's messages into the words of the file;
// the line number it gives says which key.
var yamlWords = strings.NewReplacer(
	"field ", "unknown key ",
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
	"map[string]string", "a mapping of strings",
	"config.Datasource", "a datasource",
	"*config.BasicAuth", "basicAuth",
	"config.TLS", "tls",
)
