package docs

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A `go test` command of the documentation is not run (the ones it shows
// are slow suites, benchmarks and fuzzing, and make test already runs
// every test once); TestGoTestCommands checks that it still names what
// the repository has.

// goTest is one `go test` command a page shows.
type goTest struct {
	where   string            // page:line
	text    string            // as the page writes it
	dir     string            // the directory it runs in, relative to the root ("cd DIR &&")
	env     []string          // the variables it sets
	flags   map[string]string // -run, -bench, …: their patterns
	pkgs    []string          // its package arguments
	inBlock bool              // a fenced block's line, not a code span of the prose
}

// goTestValueFlags are the flags of go test that take a value as the next
// argument.
var goTestValueFlags = map[string]bool{
	"run": true, "bench": true, "skip": true, "fuzz": true, "count": true, "timeout": true,
	"benchtime": true, "fuzztime": true, "parallel": true, "cpu": true, "p": true, "tags": true,
	"coverprofile": true, "o": true, "exec": true, "list": true, "shuffle": true, "C": true,
}

var (
	envAssignRE = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)=`)
	// goTestSpanRE is a code span holding a go test command.
	goTestSpanRE = regexp.MustCompile("`((?:cd [^`\\s]+ && )?(?:[A-Z_][A-Z0-9_]*=[^`\\s]* )*go test[^`]*)`")
)

// words splits a command as the shell does, for the quoting the
// documentation uses ('…' and "…", no escapes inside).
func words(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// parseGoTest reads a command line; ok is false when it is not a
// `go test` command.
func parseGoTest(where, text string, inBlock bool) (g goTest, ok bool, err error) {
	if !strings.Contains(text, "go test") {
		return g, false, nil
	}
	ws, err := words(strings.ReplaceAll(text, "\\\n", " "))
	if err != nil {
		return g, true, err
	}
	g = goTest{where: where, text: text, dir: ".", flags: map[string]string{}, inBlock: inBlock}
	if len(ws) >= 3 && ws[0] == "cd" && ws[2] == "&&" {
		g.dir, ws = ws[1], ws[3:]
	}
	for len(ws) > 0 && envAssignRE.MatchString(ws[0]) {
		g.env = append(g.env, envAssignRE.FindStringSubmatch(ws[0])[1])
		ws = ws[1:]
	}
	if len(ws) < 2 || ws[0] != "go" || ws[1] != "test" {
		return g, false, nil
	}
	for i := 2; i < len(ws); i++ {
		w := ws[i]
		if !strings.HasPrefix(w, "-") {
			g.pkgs = append(g.pkgs, w)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !hasValue && goTestValueFlags[name] {
			if i+1 == len(ws) {
				return g, true, fmt.Errorf("-%s has no value", name)
			}
			i++
			value = ws[i]
		}
		g.flags[name] = value
	}
	return g, true, nil
}

// goTests finds the `go test` commands of the pages: the lines of fenced
// blocks (continued by a trailing backslash) and the code spans of the
// prose.
func goTests(t *testing.T, ps []*page) []goTest {
	t.Helper()
	var out []goTest
	add := func(where, text string, inBlock bool) {
		g, ok, err := parseGoTest(where, text, inBlock)
		if err != nil {
			t.Errorf("%s: %q: %v", where, text, err)
		}
		if ok {
			out = append(out, g)
		}
	}
	for _, p := range ps {
		for _, b := range p.blocks {
			lines := strings.Split(b.body, "\n")
			for i := 0; i < len(lines); i++ {
				first, l := i, strings.TrimPrefix(lines[i], "$ ")
				for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
					i++
					l += "\n" + lines[i]
				}
				add(fmt.Sprintf("%s:%d", p.path, b.line+1+first), l, true)
			}
		}
		// The prose: the page without its blocks, a code span possibly
		// running over a line's end.
		prose := p.text
		for _, b := range p.blocks {
			prose = strings.Replace(prose, b.body, strings.Repeat("\n", strings.Count(b.body, "\n")), 1)
		}
		for _, m := range goTestSpanRE.FindAllStringSubmatchIndex(prose, -1) {
			line := 1 + strings.Count(prose[:m[0]], "\n")
			add(fmt.Sprintf("%s:%d", p.path, line), prose[m[2]:m[3]], false)
		}
	}
	return out
}

// testFuncs returns the Test, Benchmark, Fuzz and Example functions of the
// _test.go files in dir (and below it, for a pattern ending in /...).
func testFuncs(dir string, recursive bool) (map[string]bool, error) {
	funcs := map[string]bool{}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (!recursive || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
				funcs[fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if files == 0 {
		return nil, errors.New("no _test.go file")
	}
	return funcs, nil
}

// envLiterals returns every string literal of the repository's Go files
// that reads as an environment variable's name (CANARYD_ARTIFACTS).
func envLiterals(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	nameRE := regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && nameRE.MatchString(s) {
					names[s] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// check says what a command names that the repository does not have.
func (g goTest) check(root string, env map[string]bool) []error {
	var errs []error
	if len(g.pkgs) == 0 {
		return []error{errors.New("names no package")}
	}
	for _, v := range g.env {
		if !env[v] {
			errs = append(errs, fmt.Errorf("sets %s, which no Go file of the repository names", v))
		}
	}
	kinds := []struct{ flag, prefix string }{{"run", "Test"}, {"bench", "Benchmark"}, {"fuzz", "Fuzz"}}
	for _, pkg := range g.pkgs {
		rel, recursive := strings.CutSuffix(filepath.ToSlash(filepath.Clean(pkg)), "/...")
		if rel == "..." {
			rel, recursive = ".", true
		}
		if !strings.HasPrefix(pkg, "./") {
			errs = append(errs, fmt.Errorf("package %s: write it as a directory, ./%s", pkg, pkg))
			continue
		}
		dir := filepath.Join(root, g.dir, filepath.FromSlash(rel))
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("package %s: no directory %s", pkg, filepath.Join(g.dir, rel)))
			continue
		}
		funcs, err := testFuncs(dir, recursive)
		if err != nil {
			errs = append(errs, fmt.Errorf("package %s: %v", pkg, err))
			continue
		}
		for _, k := range kinds {
			pattern, ok := g.flags[k.flag]
			if !ok {
				continue
			}
			// go test matches each level of a pattern split by / against
			// that level of a name; the top level is a function's name.
			top := strings.Split(pattern, "/")[0]
			re, err := regexp.Compile(top)
			if err != nil {
				errs = append(errs, fmt.Errorf("-%s %q: %v", k.flag, pattern, err))
				continue
			}
			if re.MatchString("") && top != "" && strings.Trim(top, "^$") == "" {
				continue // -run '^$': no tests, on purpose
			}
			matched := false
			for name := range funcs {
				if strings.HasPrefix(name, k.prefix) && re.MatchString(name) {
					matched = true
					break
				}
			}
			if !matched {
				errs = append(errs, fmt.Errorf("-%s %q matches no %s function of %s", k.flag, pattern, k.prefix, pkg))
			}
		}
	}
	return errs
}

// TestGoTestCommands checks every `go test` command of the documentation's
// pages without running it: each package it names is a directory
// holding tests, its -run, -bench and -fuzz patterns match a test
// function of each of them (go/parser over their _test.go files), and each
// variable it sets is a string literal of the repository's Go code (the
// name a test reads). A command in a code span of the prose with no
// package (`go test -fuzz …`, "every `go test`") is prose, not checked.
func TestGoTestCommands(t *testing.T) {
	root := repoRoot(t)
	env := envLiterals(t, root)
	checked, inBlocks := 0, 0
	for _, g := range goTests(t, pages(t)) {
		if !g.inBlock && (len(g.pkgs) == 0 || strings.Contains(g.text, "…")) {
			continue
		}
		checked++
		if g.inBlock {
			inBlocks++
		}
		for _, err := range g.check(root, env) {
			t.Errorf("%s: `%s`: %v", g.where, g.text, err)
		}
	}
	t.Logf("checked %d go test commands, %d of them in blocks", checked, inBlocks)
	if checked < 8 || inBlocks < 3 {
		t.Errorf("checked %d go test commands, %d of them in blocks; the documentation shows more: is the reading broken?", checked, inBlocks)
	}
}

// TestGoTestCheck: a stale command fails: a renamed test, a moved
// package, a renamed variable.
func TestGoTestCheck(t *testing.T) {
	root := repoRoot(t)
	env := envLiterals(t, root)
	for text, want := range map[string]string{
		"CANARYD_ARTIFACTS=$PWD/a go test -run 'Report' ./cmd/canaryd/ ./internal/report/":                   "",
		"go test -run '^$' -bench 'ConcurrentAnalyses/programs=shared$' -benchtime 1x ./internal/benchmark/": "",
		"cd deploy && go test ./...":                                     "",
		"go test -count=1 -run 'TestNoSuchTest$' ./cmd/canaryd/":         "matches no Test function",
		"go test -run 'TestChaos$' ./cmd/no-such-command/":               "no directory",
		"CANARYD_NO_SUCH_VARIABLE=1 go test -run Chaos ./cmd/canaryd/":   "sets CANARYD_NO_SUCH_VARIABLE",
		"go test -run '^$' -bench NoSuchBenchmark ./internal/benchmark/": "matches no Benchmark function",
		"go test -run Report":                                            "names no package",
	} {
		g, ok, err := parseGoTest("x", text, true)
		if !ok || err != nil {
			t.Fatalf("parseGoTest(%q): ok %v, %v", text, ok, err)
		}
		errs := g.check(root, env)
		switch {
		case want == "" && len(errs) > 0:
			t.Errorf("%q: %v", text, errors.Join(errs...))
		case want != "" && (len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), want)):
			t.Errorf("%q: got %v, want an error containing %q", text, errs, want)
		}
	}
}
