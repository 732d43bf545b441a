package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/templates"
)

// validateSynopsis is the first line of validate's usage.
const validateSynopsis = "validate -f PATH [-f PATH]... [--arg NAME=VALUE]... [--prometheus-url URL] [--credentials-dir DIR] [--web-allow PREFIX]... [--graphite-allow PREFIX]...\n\n" +
	"Checks templates without running them. PATH is a file (YAML, several documents\n" +
	"allowed, or JSON), a directory (its *.yaml, *.yml and *.json files, as\n" +
	"serve --templates reads it) or - for standard input. Each problem is printed\n" +
	"as FILE:LINE: FIELD: MESSAGE. Exit code: 0 all valid, 64 any problem."

// validateCommand checks every document of the files and directories it is
// given: templates exactly as `serve --templates` loads them (the
// templates package's own check, with the service's default limits), and
// a bare spec or an AnalysisRun alone in its file as `run -f` takes it.
func (e *environment) validateCommand(args []string) int {
	fs, f := e.newSpecFlagSet("validate")
	if code, ok := e.parseFlags(fs, validateSynopsis, args); !ok {
		return code
	}
	if len(f.files) == 0 {
		e.printf(e.stderr, "canaryd validate: -f PATH is required (a file, a directory, or - for standard input)\n")
		return exitUsage
	}
	stdin := 0
	for _, path := range f.files {
		if path == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		e.printf(e.stderr, "canaryd validate: -f - is given more than once; standard input can be read once\n")
		return exitUsage
	}
	providers, ok := e.registry("validate", f.sources(), true)
	if !ok {
		return exitUsage
	}
	v := &validation{env: e, flags: f, providers: providers}
	for _, path := range f.files {
		v.path(path)
	}
	v.checkArgs()
	if v.problems == 0 {
		if v.documents == 0 {
			e.printf(e.stderr, "canaryd validate: no documents found\n")
		}
		return 0
	}
	e.printf(e.stderr, "canaryd validate: %d problem(s) in %d of %d document(s)\n", v.problems, v.bad, v.documents)
	return exitUsage
}

// validation is the state of one validate command.
type validation struct {
	env   *environment
	flags *specFlags
	// providers are the command line's (cliSources.registry).
	providers compile.Providers
	// documents checked, bad ones among them, and problems printed.
	documents, bad, problems int
	// declared are the argument names the documents checked declare.
	declared map[string]bool
}

// path checks a file, a directory or standard input.
func (v *validation) path(path string) {
	if path != "-" {
		info, err := os.Stat(path)
		if err != nil {
			v.fail(path, 0, "", pathProblem(err))
			return
		}
		if info.IsDir() {
			v.dir(path)
			return
		}
	}
	data, err := v.env.readInput(path)
	if err != nil {
		v.fail(path, 0, "", pathProblem(err))
		return
	}
	v.file(path, data)
}

// dir checks a directory as serve --templates loads it.
func (v *validation) dir(dir string) {
	found, err := templates.CheckDir(dir, v.options())
	if err != nil {
		v.fail(dir, 0, "", strings.TrimPrefix(err.Error(), "templates: "))
		return
	}
	if len(found) == 0 {
		v.env.printf(v.env.stderr, "%s: no template files (*.yaml, *.yml, *.json)\n", dir)
	}
	for _, c := range found {
		v.report(filepath.Join(dir, c.File), c)
	}
}

// file checks one file. A file holding one bare spec or AnalysisRun is
// checked as run takes it: its arguments need values. Anything else is
// checked as a template file of serve --templates.
func (v *validation) file(path string, data []byte) {
	doc, in, parseProblems := spec.ParseInput(data)
	if doc != nil && (doc.Kind == "" || doc.Kind == spec.KindAnalysisRun) {
		v.documents++
		v.declare(doc.Spec.Args)
		compiled, problems := compile.Compile(doc, v.argsFor(doc.Spec.Args), v.providers)
		problems = append(parseProblems, problems...)
		if len(problems) > 0 {
			v.bad++
			for _, p := range problems {
				v.problem(path, in.Line(p.Field), p)
			}
			return
		}
		v.env.printf(v.env.stdout, "%s: valid: %s\n", displayName(path), describePlan(compiled.Plan))
		return
	}
	for _, c := range templates.CheckFile(displayName(path), data, v.options()) {
		v.report(displayName(path), c)
	}
}

// options are the templates package's: the service's check of a template
// (compile.Compile with its default limits) against this command's
// Prometheus, and the --arg values.
func (v *validation) options() templates.CheckOptions {
	cfg := config.Default()
	limits := compile.WithLimits(cfg.Limits.SpecLimits(cfg.MaxAnalysisDuration))
	return templates.CheckOptions{
		Check: func(doc *spec.Document) []api.FieldError {
			_, errs := compile.Compile(doc, nil, v.providers, limits)
			return errs
		},
		Providers: v.providers,
		Args:      v.flags.args,
	}
}

// report prints what the templates package found of one document.
func (v *validation) report(file string, c templates.Checked) {
	switch {
	case c.Skipped:
		v.env.printf(v.env.stdout, "%s:%d: skipped: kind %s (serve --templates reads AnalysisTemplate and ClusterAnalysisTemplate documents only)\n", file, c.Line, c.Kind)
		return
	case c.Template == nil:
		v.documents++
		v.bad++
		if len(c.Errors) == 0 {
			v.fail(file, c.Line, "", "does not load")
		}
		for _, p := range c.Errors {
			// On the line of its field; the document's when not told.
			v.problem(file, cmp.Or(p.Line, c.Line), p)
		}
		return
	}
	v.documents++
	t := c.Template
	for _, a := range t.Args {
		v.declared = addName(v.declared, a.Name)
	}
	what := fmt.Sprintf("%s:%d: valid: %s %s", file, c.Line, t.Kind, t.Name)
	if missing := t.MissingArgs(v.flags.args); len(missing) > 0 {
		v.env.printf(v.env.stdout, "%s (arguments a request must give: %s)\n", what, strings.Join(missing, ", "))
		return
	}
	if compiled, errs := compile.Compile(t.Document, v.argsFor(t.Document.Spec.Args), v.providers); len(errs) == 0 {
		what += ": " + describePlan(compiled.Plan)
	}
	v.env.printf(v.env.stdout, "%s\n", what)
}

// problem prints one problem of a document: FILE[:LINE]: FIELD: MESSAGE.
func (v *validation) problem(file string, line int, p api.FieldError) {
	v.fail(file, line, p.Field, p.Message+argHint(p))
}

func (v *validation) fail(file string, line int, field, message string) {
	v.problems++
	where := displayName(file)
	if line > 0 {
		where = fmt.Sprintf("%s:%d", where, line)
	}
	if field != "" {
		message = field + ": " + message
	}
	v.env.printf(v.env.stderr, "%s: %s\n", where, message)
}

// declare records the argument names a document declares.
func (v *validation) declare(args []spec.Argument) {
	for _, a := range args {
		v.declared = addName(v.declared, a.Name)
	}
}

func addName(m map[string]bool, name string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[name] = true
	return m
}

// argsFor returns the --arg values of the arguments a document declares:
// with several documents, each takes the values meant for it.
func (v *validation) argsFor(declared []spec.Argument) map[string]string {
	out := map[string]string{}
	for _, a := range declared {
		if value, ok := v.flags.args[a.Name]; ok {
			out[a.Name] = value
		}
	}
	return out
}

// checkArgs reports an --arg that no document declares, a typo that would
// otherwise pass unnoticed. When documents failed to load, what they
// declare is not known, and nothing is said.
func (v *validation) checkArgs() {
	if v.bad > 0 {
		return
	}
	var names []string
	for name := range v.flags.args {
		if !v.declared[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v.problems++
		v.env.printf(v.env.stderr, "--arg %s: no document declares an argument %q\n", name, name)
	}
}

// pathProblem is an error about a file without the operation ("open").
func pathProblem(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
