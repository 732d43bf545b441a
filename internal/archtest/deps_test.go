package archtest_test

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// A rule says what the packages From (patterns relative to the module,
// "dir/..." for dir and those under it) may not import: the packages
// Forbid (patterns relative to the module, or standard-library paths),
// except Allow. A Transitive rule forbids them anywhere among the packages'
// dependencies, the others among their own imports. Test files are not
// held to the rules.
type rule struct {
	name       string
	from       []string
	forbid     []string
	allow      []string
	transitive bool
}

// concreteProviders are the packages of the metric providers, each under
// internal/provider; providertest is the suite they pass, not one of them.
var (
	concreteProviders = []string{"internal/provider/*/..."}
	notProviders      = []string{"internal/provider/providertest/..."}
)

var rules = []rule{
	{name: "the engine imports no HTTP, webhook or provider", from: []string{"internal/analysis/..."},
		forbid: []string{"net/http/...", "internal/webhook/...", "internal/provider/..."}, transitive: true},
	{name: "server imports neither store nor webhook", from: []string{"internal/server/..."},
		forbid: []string{"internal/store/...", "internal/webhook/..."}},
	{name: "spec, compile, report, templates and server import no concrete provider",
		from:   []string{"internal/spec/...", "internal/compile/...", "internal/report/...", "internal/templates/...", "internal/server/..."},
		forbid: concreteProviders, allow: notProviders},
	{name: "config does not import server", from: []string{"internal/config/..."},
		forbid: []string{"internal/server/..."}, transitive: true},
	{name: "analyses imports no net/http", from: []string{"internal/analyses/..."},
		forbid: []string{"net/http"}},
}

// knownViolations are the imports that break a rule today, "RULE: FROM
// imports TO" with FROM and TO relative to the module. The list may only
// shrink: an import listed that is no longer there fails the test too.
var knownViolations = []string{}

// TestDependencies holds the packages to the rules of what they import.
func TestDependencies(t *testing.T) {
	m := load(t)
	var found []string
	for _, r := range rules {
		for _, p := range m.Packages {
			from := m.Rel(p.ImportPath)
			if !matchAny(r.from, from) {
				continue
			}
			imports := p.Imports
			if r.transitive {
				imports = p.Deps
			}
			for _, imp := range imports {
				to := m.Rel(imp)
				if matchAny(r.forbid, to) && !matchAny(r.allow, to) {
					found = append(found, r.name+": "+from+" imports "+to)
				}
			}
		}
	}
	checkKnown(t, "dependencies", found, knownViolations, "not allowed")
}

// TestMatch checks the patterns of the rules.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"net/http", "net/http", true},
		{"net/http", "net/http/httptest", false},
		{"net/http/...", "net/http/httptest", true},
		{"net/http/...", "net/httpx", false},
		{"internal/provider/...", "internal/provider", true},
		{"internal/provider/*/...", "internal/provider", false},
		{"internal/provider/*/...", "internal/provider/web", true},
		{"internal/provider/*/...", "internal/provider/prometheus/promql", true},
		{"internal/server/...", "internal/serverless", false},
	} {
		if got := match(tc.pattern, tc.path); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

// matchAny says whether p matches one of patterns.
func matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pattern string) bool { return match(pattern, p) })
}

// match says whether the package p matches pattern: element by element,
// each as path.Match does, with a final "/..." matching nothing or any
// elements more.
func match(pattern, p string) bool {
	pattern, tree := strings.CutSuffix(pattern, "/...")
	want, got := strings.Split(pattern, "/"), strings.Split(p, "/")
	if len(got) < len(want) || (!tree && len(got) != len(want)) {
		return false
	}
	for i, w := range want {
		if ok, _ := path.Match(w, got[i]); !ok {
			return false
		}
	}
	return true
}
