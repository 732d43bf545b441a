package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/config"
)

// documentedCommands are the commands whose synopsis the documentation
// shows; serve's flags are docs/configuration.md's, generated.
var documentedCommands = []string{"run", "validate", "backtest", "judge", "migrate", "version"}

// commandFlag is a flag as a command's -h prints it.
type commandFlag struct {
	name     string
	defValue string // "" when none is printed
}

var (
	usageFlagRE    = regexp.MustCompile(`^  -([A-Za-z][\w-]*)`)
	usageDefaultRE = regexp.MustCompile(`\(default (.*)\)$`)
)

// commandFlags runs `canaryd COMMAND -h` with getenv and returns the
// first line of its synopsis and its flags.
func commandFlags(t *testing.T, command string, getenv func(string) string) (synopsis string, flags map[string]commandFlag) {
	t.Helper()
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{command, "-h"}, getenv, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("canaryd %s -h: exit code %d\n%s", command, code, stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	if len(lines) < 2 || lines[0] != "Usage:" {
		t.Fatalf("canaryd %s -h printed no usage:\n%s", command, stdout.String())
	}
	synopsis = strings.TrimSpace(lines[1])
	flags = map[string]commandFlag{}
	var last string
	usage := map[string][]string{}
	for _, l := range lines[2:] {
		if m := usageFlagRE.FindStringSubmatch(l); m != nil {
			last = m[1]
			flags[last] = commandFlag{name: last}
			continue
		}
		if last != "" {
			usage[last] = append(usage[last], strings.TrimSpace(l))
		}
	}
	for name, text := range usage {
		m := usageDefaultRE.FindStringSubmatch(strings.TrimSpace(strings.Join(text, " ")))
		if m == nil {
			continue
		}
		v := m[1]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		flags[name] = commandFlag{name: name, defValue: v}
	}
	return synopsis, flags
}

// synopsisLine is a command's synopsis as a page shows it.
type synopsisLine struct {
	where string // page:line
	text  string
}

// documentedSynopses finds the synopses of the commands in README.md and
// the Markdown files under docs/: the lines of text blocks that are not a transcript's `$ `
// commands and read `canaryd COMMAND …`.
func documentedSynopses(t *testing.T) map[string][]synopsisLine {
	t.Helper()
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]synopsisLine{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		inFence, inText := false, false
		for i, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
				inText = inFence && strings.TrimSpace(strings.TrimPrefix(l, "```")) == "text"
				continue
			}
			if !inText {
				continue
			}
			fields := strings.Fields(l)
			if len(fields) < 2 || fields[0] != "canaryd" || !slices.Contains(documentedCommands, fields[1]) {
				continue
			}
			out[fields[1]] = append(out[fields[1]], synopsisLine{where: filepath.ToSlash(rel) + ":" + strconv.Itoa(i+1), text: l})
		}
	}
	return out
}

// synopsisFlagRE finds a flag in a synopsis, with the word after it.
var synopsisFlagRE = regexp.MustCompile(`(?:^|[\s\[|])--?([A-Za-z][\w-]*)(?:[ =]([^\s\]|]+))?`)

// placeholderRE is a value a synopsis names rather than shows: FILE,
// NAME=VALUE, T, D.
var placeholderRE = regexp.MustCompile(`^[A-Z][A-Z_=]*$`)

// synopsisFlags returns the flags a synopsis line names, each with the
// value shown after it ("" for a placeholder or none).
func synopsisFlags(line string) map[string]string {
	out := map[string]string{}
	_, rest, _ := strings.Cut(line, "canaryd ")
	for _, m := range synopsisFlagRE.FindAllStringSubmatch(rest, -1) {
		v := m[2]
		if placeholderRE.MatchString(v) || strings.HasPrefix(v, "-") || strings.HasPrefix(v, "[") {
			v = ""
		}
		if _, seen := out[m[1]]; !seen || v != "" {
			out[m[1]] = v
		}
	}
	return out
}

// sameDefault says whether a value a synopsis shows is the flag's
// default: the same text, or the same duration (2m and 2m0s).
func sameDefault(shown, def string) bool {
	if shown == def {
		return true
	}
	a, errA := config.ParseDuration(shown)
	b, errB := config.ParseDuration(def)
	return errA == nil && errB == nil && a == b
}

// TestDocumentedFlags holds the synopses of the commands in the
// documentation to their flags, as `canaryd COMMAND -h` prints them: every
// synopsis of a command names each of its flags and no other, and a value
// it shows in place of a placeholder is the flag's default
// (`[--error-retry 10s]`). The synopsis -h prints names every flag the
// command has and no other.
func TestDocumentedFlags(t *testing.T) {
	documented := documentedSynopses(t)
	noEnv := func(string) string { return "" }
	for _, command := range documentedCommands {
		synopsis, flags := commandFlags(t, command, noEnv)
		printed := synopsisFlags("canaryd " + synopsis)
		for name := range printed {
			if _, ok := flags[name]; !ok {
				t.Errorf("canaryd %s -h: its synopsis %q names -%s, which the command does not have", command, synopsis, name)
			}
		}
		for name := range flags {
			if _, ok := printed[name]; !ok {
				t.Errorf("canaryd %s -h: its synopsis %q lacks its flag -%s", command, synopsis, name)
			}
		}
		lines := documented[command]
		if len(lines) == 0 {
			t.Errorf("no page of the documentation shows the synopsis of canaryd %s (a text block's line `canaryd %s …`)", command, command)
		}
		for _, l := range lines {
			shown := synopsisFlags(l.text)
			for name, f := range flags {
				if _, ok := shown[name]; !ok {
					t.Errorf("%s: the synopsis of canaryd %s lacks its flag -%s:\n\t%s", l.where, command, name, l.text)
					continue
				}
				if v := shown[name]; v != "" && !sameDefault(v, f.defValue) {
					t.Errorf("%s: the synopsis of canaryd %s shows -%s %s, but its default is %q:\n\t%s", l.where, command, name, v, f.defValue, l.text)
				}
			}
			for name := range shown {
				if _, ok := flags[name]; !ok {
					t.Errorf("%s: the synopsis of canaryd %s names -%s, which the command does not have:\n\t%s", l.where, command, name, l.text)
				}
			}
		}
	}
}

// TestCommandSettingsShared: where a command's flag is a setting of
// canaryd serve, it takes the setting's environment variable and default
// from the table of settings, not from a copy: --prometheus-url reads
// serve's variable, --max-result-values defaults to serve's default, a
// metric without an address queries serve's default Prometheus, and
// migrate's --store reads serve's $CANARYD_STORE.
func TestCommandSettingsShared(t *testing.T) {
	const url = "http://prometheus.example:9090"
	promEnv := config.EnvName("prometheus-url")
	getenv := func(k string) string {
		if k == promEnv {
			return url
		}
		return ""
	}
	wantValues := strconv.Itoa(config.Default().MaxResultValues)
	for _, command := range []string{"run", "validate", "backtest"} {
		_, flags := commandFlags(t, command, getenv)
		if got := flags["prometheus-url"].defValue; got != url {
			t.Errorf("canaryd %s: with %s=%s, --prometheus-url defaults to %q", command, promEnv, url, got)
		}
		if command == "validate" {
			continue
		}
		if got := flags["max-result-values"].defValue; got != wantValues {
			t.Errorf("canaryd %s: --max-result-values defaults to %q; serve's --max-result-values to %s", command, got, wantValues)
		}
	}

	// A metric that names no address queries serve's default Prometheus.
	if defaultPrometheusURL != config.DefaultPrometheusURL {
		t.Errorf("a metric without an address queries %s from the command line, %s from serve", defaultPrometheusURL, config.DefaultPrometheusURL)
	}

	// migrate reads the store's variable when --store is not given: a
	// memory: store there is refused as having no schema.
	storeEnv := config.EnvName("store")
	var stderr strings.Builder
	code := run(context.Background(), []string{"migrate", "--timeout", time.Second.String()},
		func(k string) string {
			if k == storeEnv {
				return "memory:"
			}
			return ""
		}, strings.NewReader(""), &stderr, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "no schema to migrate") {
		t.Errorf("canaryd migrate with %s=memory: exit code %d, want %d and a store with no schema:\n%s", storeEnv, code, exitUsage, stderr.String())
	}
}

// TestSynopsisFlags checks the reading of a synopsis line.
func TestSynopsisFlags(t *testing.T) {
	got := synopsisFlags("canaryd run -f FILE [--arg NAME=VALUE]... [--error-retry 10s] [--max-result-values=10000] [-o FORMAT] [-q]")
	want := map[string]string{"f": "", "arg": "", "error-retry": "10s", "max-result-values": "10000", "o": "", "q": ""}
	if len(got) != len(want) {
		t.Errorf("synopsisFlags = %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("synopsisFlags[%q] = %q (%v), want %q", k, g, ok, v)
		}
	}
}
