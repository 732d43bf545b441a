package config

import (
	"bytes"
	"fmt"
	"reflect"
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

	all := settings()
	for _, g := range groups {
		p("\n## %s\n\n", g)
		p("| Flag | Environment variable | Config key | Default | Meaning |\n")
		p("|---|---|---|---|---|\n")
		for _, s := range all {
			if s.group != g {
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
	p("servers, each with these keys (files relative to the configuration file):\n\n")
	p("| Key | Meaning |\n|---|---|\n")
	fields(&b, "", reflect.TypeFor[Datasource]())
	p("\nExamples, each loaded by the tests: [testdata/config](../testdata/config/).\n")
	return b.Bytes()
}

// fields writes a row for each key of a struct read from the file, from
// its yaml and doc tags; the keys of a nested struct are prefixed with its
// own.
func fields(b *bytes.Buffer, prefix string, t reflect.Type) {
	for f := range t.Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		fmt.Fprintf(b, "| %s | %s |\n", code(prefix+key), cell(f.Tag.Get("doc")))
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			fields(b, prefix+key+".", ft)
		}
	}
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
			return code(v)
		}
	}
	return cell(s.defaultText())
}
