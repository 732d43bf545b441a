package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/clock"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/config"
	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/report"
	"github.com/canaryd/canaryd/internal/spec"
)

// defaultPrometheusURL is queried by metrics that name no address.
const defaultPrometheusURL = config.DefaultPrometheusURL

// argFlags collects repeated --arg NAME=VALUE flags.
type argFlags map[string]string

func (a argFlags) String() string { return "" }

func (a argFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	a[name] = value
	return nil
}

// fileFlags collects repeated -f flags.
type fileFlags []string

func (f *fileFlags) String() string { return strings.Join(*f, ",") }

func (f *fileFlags) Set(s string) error {
	if s == "" {
		return errors.New("want a file, a directory or -")
	}
	*f = append(*f, s)
	return nil
}

// durationFlag is a duration in Go's form or Prometheus' (1d12h, 1w), as
// the service's settings take it.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return "" // no default shown
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := config.ParseDuration(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "invalid duration "))
	}
	*f.d = d
	return nil
}

// specFlags are the flags shared by run, validate and backtest.
type specFlags struct {
	files           fileFlags
	args            argFlags
	prometheusURL   string
	maxResultValues int
	// credentialsDir, webAllow and graphiteAllow are the service's
	// settings of the same names (see cliProviders).
	credentialsDir string
	webAllow       prefixFlags
	graphiteAllow  prefixFlags
}

// sources are the command line's providers as the flags configure them.
func (f *specFlags) sources() *cliSources {
	return &cliSources{
		override: f.prometheusURL, maxValues: f.maxResultValues, providers: map[string]*prometheus.Provider{},
		credentialsDir: f.credentialsDir, webAllow: f.webAllow, graphiteAllow: f.graphiteAllow,
	}
}

// prefixFlags are the URL prefixes of a repeatable allow flag.
type prefixFlags []string

func (f *prefixFlags) String() string { return strings.Join(*f, ",") }

// Set checks the prefix with the rules of serve's allow-lists.
func (f *prefixFlags) Set(s string) error {
	if _, err := outbound.ParseAllowList([]string{s}); err != nil || s == "" {
		if err == nil {
			err = errors.New("want a URL prefix, such as https://status.example.com/")
		}
		return err
	}
	*f = append(*f, s)
	return nil
}

// file is the one -f of run and backtest; "" after saying what is wrong.
func (e *environment) file(command string, f *specFlags) string {
	if f.maxResultValues < 1 {
		e.printf(e.stderr, "canaryd %s: --max-result-values must be at least 1\n", command)
		return ""
	}
	switch len(f.files) {
	case 0:
		e.printf(e.stderr, "canaryd %s: -f FILE is required (- for standard input)\n", command)
		return ""
	case 1:
		return f.files[0]
	}
	e.printf(e.stderr, "canaryd %s: -f is given %d times; %s takes one file (validate takes several)\n", command, len(f.files), command)
	return ""
}

func (e *environment) newSpecFlagSet(name string) (*flag.FlagSet, *specFlags) {
	f := &specFlags{args: argFlags{}}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if name == "validate" {
		fs.Var(&f.files, "f", "a `PATH` to check (repeatable): a file of one or more documents (YAML, or JSON), a directory read as serve --templates reads it, or - for standard input")
	} else {
		fs.Var(&f.files, "f", "the AnalysisTemplate, ClusterAnalysisTemplate, AnalysisRun or bare spec to use, a `FILE` of YAML or JSON (- for standard input)")
	}
	fs.Var(f.args, "arg", "an argument value, `NAME=VALUE` (repeatable); overrides the template's value")
	env := config.EnvName("prometheus-url")
	fs.StringVar(&f.prometheusURL, "prometheus-url", e.getenv(env),
		"query the Prometheus at `URL` for every metric, whatever address the template names (e.g. a port-forward); env "+env)
	if name != "validate" {
		fs.IntVar(&f.maxResultValues, "max-result-values", prometheus.DefaultMaxResultValues,
			"most values one measurement's query result may have; a larger result is an Error measurement")
	}
	credentials := config.EnvName("credentials-dir")
	fs.StringVar(&f.credentialsDir, "credentials-dir", e.getenv(credentials),
		"the `DIR` of the providers' credentials, laid out as Kubernetes mounts Argo Rollouts' Secrets (DIR/datadog/api-key); validate, given one, checks that the files a metric needs are there; env "+credentials)
	fs.Var(&f.webAllow, "web-allow", "a URL `PREFIX` a web metric's url must start with (repeatable; serve's rules); with none, run and backtest allow any http or https URL, and validate checks none")
	fs.Var(&f.graphiteAllow, "graphite-allow", "a URL `PREFIX` a Graphite metric's address must start with (repeatable; serve's rules); with none, run and backtest allow any http or https address, and validate checks none")
	return fs, f
}

// parseFlags parses a command's flags. Help (-h, --help) prints the usage
// to standard output and ends the command with 0; a flag that is not
// defined, a bad value or a stray argument prints the problem and the
// usage to standard error and ends it with exitUsage. ok is false when the
// command must end with code.
func (e *environment) parseFlags(fs *flag.FlagSet, synopsis string, args []string) (code int, ok bool) {
	usage := func(w io.Writer) { e.commandUsage(w, fs, synopsis) }
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // printed below: to stdout when asked for
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(e.stdout)
		return 0, false
	case err != nil:
		// The flag package has printed the problem.
		e.printf(e.stderr, "\n")
		usage(e.stderr)
		return exitUsage, false
	case fs.NArg() > 0:
		e.printf(e.stderr, "canaryd %s: unexpected argument %q", fs.Name(), fs.Arg(0))
		if hasFlag(fs, "f") {
			e.printf(e.stderr, " (give a file with -f)")
		}
		e.printf(e.stderr, "\n\n")
		usage(e.stderr)
		return exitUsage, false
	}
	return 0, true
}

// commandUsage prints a command's usage: its synopsis and its flags.
func (e *environment) commandUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	e.printf(w, "Usage:\n  canaryd %s\n", synopsis)
	if hasFlags(fs) {
		e.printf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(e.stderr)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func hasFlag(fs *flag.FlagSet, name string) bool { return fs.Lookup(name) != nil }

// maxInput bounds what is read of one file or of standard input.
const maxInput = 16 << 20

// readInput reads a file named by -f, or standard input for -.
func (e *environment) readInput(file string) ([]byte, error) {
	r := e.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%s: larger than %d MiB", displayName(file), maxInput>>20)
	}
	return data, nil
}

// registry is the command's providers (cliSources.registry); ok is false,
// after saying why, when the flags cannot give them (a --credentials-dir
// that is not a directory).
func (e *environment) registry(command string, sources *cliSources, checkOnly bool) (*provider.Registry, bool) {
	r, err := sources.registry(checkOnly)
	if err != nil {
		e.printf(e.stderr, "canaryd %s: %v\n", command, err)
		return nil, false
	}
	return r, true
}

// compile reads, parses and compiles the spec of run or backtest (with
// opts: compile.ForBacktest), and names it (analysisName). It prints every
// problem and returns nil when there is any.
func (e *environment) compile(file string, f *specFlags, providers compile.Providers, opts ...compile.Option) (*compile.Compiled, string) {
	data, err := e.readInput(file)
	if err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return nil, ""
	}
	doc, compiled, problems := compile.ParseAndCompile(data, f.args, providers, opts...)
	if len(problems) == 0 {
		return compiled, analysisName(doc, file)
	}
	e.printf(e.stderr, "%s: %d problem(s):\n", displayName(file), len(problems))
	for _, p := range problems {
		msg := p.Message + argHint(p)
		if p.Field == "" {
			e.printf(e.stderr, "  %s\n", msg)
			continue
		}
		e.printf(e.stderr, "  %s: %s\n", p.Field, msg)
	}
	return nil, ""
}

// analysisName is what the reports call an analysis of the command line,
// whose id ("cli") names nothing a reader can look up: the document's
// name (a template's, an AnalysisRun's), else the file's for a bare spec;
// "" for a bare spec on standard input.
func analysisName(doc *spec.Document, file string) string {
	if doc != nil && doc.Metadata.Name != "" {
		return doc.Metadata.Name
	}
	if file == "-" {
		return ""
	}
	return filepath.Base(file)
}

// argHint says how the command line supplies an argument that a problem
// says was not supplied: internal/spec words it for every caller (the
// service takes arg.NAME and a body's args), the command line knows its
// flag.
func argHint(p api.FieldError) string {
	rest, ok := strings.CutPrefix(p.Message, "argument ")
	if !ok || !strings.HasPrefix(p.Field, "args[") || !strings.HasSuffix(rest, " was not supplied") {
		return ""
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return ""
	}
	name, err := strconv.Unquote(quoted)
	if err != nil || rest != quoted+" was not supplied" {
		return ""
	}
	return fmt.Sprintf(": give it with --arg %s=…", name)
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}

// cliSources gives the command line its Prometheus: the one --prometheus-url
// names for every metric, or else each metric's own address (the operator
// who runs the command chose the file), or else localhost:9090.
type cliSources struct {
	override  string
	maxValues int
	// credentialsDir, webAllow and graphiteAllow are the flags of those
	// names, for the providers that are not Prometheus (registry).
	credentialsDir string
	webAllow       []string
	graphiteAllow  []string
	mu             sync.Mutex
	providers      map[string]*prometheus.Provider
	// addresses are the Prometheus addresses the metrics query, in the
	// order first met.
	addresses []string
}

// whence says where an address the metrics query comes from, for a person
// wondering why canaryd asks that Prometheus.
func (c *cliSources) whence(address string) string {
	switch {
	case c.override != "":
		return "--prometheus-url"
	case address == defaultPrometheusURL:
		return "the default; set --prometheus-url"
	}
	return "the template's address; --prometheus-url overrides it"
}

// queried lists the Prometheus addresses the metrics query, each with
// where it comes from: "http://localhost:9090 (the default; set
// --prometheus-url)"; "" when no metric queries a Prometheus.
func (c *cliSources) queried() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := make([]string, 0, len(c.addresses))
	for _, a := range c.addresses {
		parts = append(parts, fmt.Sprintf("%s (%s)", a, c.whence(a)))
	}
	return strings.Join(parts, ", ")
}

// refused names the address a measurement's error says refused the
// connection: the one the error quotes, or the only one there is.
func (c *cliSources) refused(message string) (string, bool) {
	if !strings.Contains(message, "connection refused") {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.addresses {
		if strings.Contains(message, strings.TrimSuffix(a, "/")) {
			return a, true
		}
	}
	if len(c.addresses) == 1 {
		return c.addresses[0], true
	}
	return "", false
}

func (c *cliSources) source(m *prometheus.Metric) (analysis.Source, map[string]string, []api.FieldError) {
	address := m.Address
	if c.override != "" {
		address = c.override
	}
	if address == "" {
		address = defaultPrometheusURL
	}
	c.mu.Lock()
	p, ok := c.providers[address]
	if !ok {
		var err error
		p, err = prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "cli", URL: address}}, MaxResultValues: c.maxValues})
		if err != nil {
			c.mu.Unlock()
			// The provider names the datasource it was building; here that
			// is the metric's own address, so say only what is wrong.
			msg := err.Error()
			if i := strings.LastIndex(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
			return nil, nil, []api.FieldError{{Field: "provider.prometheus.address", Message: fmt.Sprintf("%q: %s", address, msg)}}
		}
		c.providers[address] = p
		c.addresses = append(c.addresses, address)
	}
	c.mu.Unlock()
	copied := *m
	copied.Address = address
	return p.Source(&copied)
}

// runSynopsis is the first line of run's usage.
const runSynopsis = "run -f FILE [--arg NAME=VALUE]... [--prometheus-url URL] [--credentials-dir DIR] [--web-allow PREFIX]... [--graphite-allow PREFIX]... [--error-retry D] [--max-result-values N] [-o FORMAT] [--report FILE] [-q]\n\n" +
	"Runs one analysis here and now, printing each measurement to standard error and\n" +
	"the finished analysis to standard output: -o text (the default on a terminal:\n" +
	"the verdict, the reason and a table of the metrics), json (the default\n" +
	"otherwise: the analysis as the API returns it), markdown (for a GitHub job\n" +
	"summary or a pull-request comment) or junit (JUnit XML, a test case per\n" +
	"metric, for GitLab's and Jenkins' test reports); --report also writes it as\n" +
	"one self-contained HTML file, with a chart per metric. Exit code: 0 Successful,\n" +
	"1 Failed, 2 Inconclusive, 3 Error, 64 bad input, 130 interrupted (SIGINT),\n" +
	"143 terminated (SIGTERM)."

func (e *environment) runCommand(args []string) int {
	fs, f := e.newSpecFlagSet("run")
	errorRetry := analysis.DefaultErrorRetryInterval
	fs.Var(durationFlag{&errorRetry}, "error-retry", "how long to wait after an Error measurement before measuring again: a `duration` (10s, 1m)")
	quiet := fs.Bool("q", false, "print no progress lines, only the result")
	format := fs.String("o", "", "the `FORMAT` of the result on standard output: "+strings.Join(report.Formats, ", ")+" (default: text on a terminal, json otherwise)")
	reportFile := fs.String("report", "", reportFlagUsage)
	if code, ok := e.parseFlags(fs, runSynopsis, args); !ok {
		return code
	}
	if *format == "" {
		*format = "json"
		if isTerminal(e.stdout) {
			*format = "text"
		}
	}
	if !slices.Contains(report.Formats, *format) {
		e.printf(e.stderr, "canaryd run: -o %q: give one of %s\n", *format, strings.Join(report.Formats, ", "))
		return exitUsage
	}
	file := e.file("run", f)
	if file == "" {
		return exitUsage
	}
	sources := f.sources()
	providers, ok := e.registry("run", sources, false)
	if !ok {
		return exitUsage
	}
	compiled, name := e.compile(file, f, providers)
	if compiled == nil {
		return exitUsage
	}
	htmlReport, ok := e.openReport("run", *reportFile)
	if !ok {
		return exitUsage
	}
	plan := compiled.Plan
	if !*quiet {
		if q := sources.queried(); q != "" {
			e.printf(e.stderr, "querying Prometheus at %s\n", q)
		}
		e.printf(e.stderr, "analysis started: %s\n", describePlan(plan))
	}
	result := e.runWithProgress(plan, compiled.Args, sources, errorRetry, *quiet)
	// The markdown, JUnit and HTML name the analysis by its template and
	// arguments rather than by the id "cli"; the JSON is the analysis as
	// the API returns it.
	explained := report.New(result, plan.Metrics)
	explained.Analysis.ID = ""
	explained.Analysis.Template = name
	explained.Sources = report.SourcesOf(compiled.Spec, compiled.Args, providers, sources.datasource)
	// The HTML report is written first, so that the markdown links it
	// only when it was.
	wrote := e.writeReport("run", htmlReport, explained)
	if wrote && htmlReport != nil {
		explained.HTMLReport = *reportFile
	}
	out := explained
	if *format == "json" {
		out = report.New(result, plan.Metrics)
	}
	if err := out.Write(e.stdout, *format); err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return exitError
	}
	if !wrote {
		return exitError
	}
	if !*quiet {
		if result.Message != "" {
			e.printf(e.stderr, "analysis %s: %s\n", result.Phase, result.Message)
		} else {
			e.printf(e.stderr, "analysis %s\n", result.Phase)
		}
	}
	// A check that was stopped did not pass, whatever Argo's terminate
	// semantics make of its phase: a pipeline must not read it as a
	// verdict.
	if code, sig := interruptedExit(e.ctx); sig != nil {
		e.printf(e.stderr, "canaryd run: %v before the analysis completed; exit code %d\n", sig, code)
		return code
	}
	return exitCode(result.Phase)
}

// runWithProgress runs plan to its end and returns the analysis: a line on
// stderr after each measurement unless quiet, and at once for a
// Prometheus that refuses the connection.
func (e *environment) runWithProgress(plan *analysis.Plan, args map[string]string, sources *cliSources, errorRetry time.Duration, quiet bool) api.Analysis {
	limits := make(map[string]*analysis.Metric, len(plan.Metrics))
	for i := range plan.Metrics {
		limits[plan.Metrics[i].Name] = &plan.Metrics[i]
	}
	var (
		progress sync.Mutex
		run      *analysis.Run
		started  = make(chan struct{}) // closed once run is set
		refused  = map[string]bool{}
	)
	run = analysis.Start(e.ctx, plan, analysis.Options{
		ID: "cli",
		// A scheduler of its own, a worker per metric: one analysis.
		Scheduler:          analysis.NewScheduler(clock.Real{}, len(plan.Metrics)),
		ErrorRetryInterval: errorRetry,
		Args:               args,
		// Called from the scheduler's goroutines after each measurement,
		// one event at a time, with the run's lock released: the snapshot
		// holds this measurement's counters and no later one's.
		Observer: func(ev api.Event) {
			if ev.Type != api.EventMeasurement {
				return
			}
			<-started
			progress.Lock()
			defer progress.Unlock()
			if !quiet {
				e.printf(e.stderr, "%s\n", progressLine(ev, metricResult(run.Snapshot(), ev.Metric), limits[ev.Metric]))
			}
			// A refused connection is said at once, not after the
			// retries Argo's consecutiveErrorLimit allows: the verdict
			// waits for them, the person reading need not.
			if ev.Measurement.Phase == api.PhaseError {
				if address, ok := sources.refused(ev.Measurement.Message); ok && !refused[address] {
					refused[address] = true
					e.printf(e.stderr, "%s\n", sources.refusedLine(address, errorRetry))
				}
			}
		},
	})
	close(started)
	<-run.Done()
	return run.Snapshot()
}

// isTerminal reports whether w is a terminal (a character device), where a
// person rather than a program reads the result.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func exitCode(p api.Phase) int {
	switch p {
	case api.PhaseSuccessful:
		return exitSuccessful
	case api.PhaseFailed:
		return exitFailed
	case api.PhaseInconclusive:
		return exitInconclusive
	}
	return exitError
}

// progressLine is one measurement for a pipeline log: time, metric, value,
// the measurement's phase and the metric's after it, why the metric has
// that phase, and the message when there is one:
//
//	2026-11-22T12:14:40Z non-5xx-rate value=[0.95] measurement=Failed metric=Running (1 of 3 measured; failed 1 <= failureLimit 1)
//
// Two phases are shown because Argo keeps two: a Failed measurement leaves
// its metric Running until the counter exceeds the limit, and the
// parenthesis says so in the words of Argo's own message ("failed (2) >
// failureLimit (1)") and of the template's fields. res and m may be nil.
func progressLine(ev api.Event, res *api.MetricResult, m *analysis.Metric) string {
	ms := ev.Measurement
	at := time.Now().UTC()
	if ms.FinishedAt != nil {
		at = ms.FinishedAt.UTC()
	}
	line := fmt.Sprintf("%s %s value=%s measurement=%s metric=%s", at.Format(time.RFC3339), ev.Metric, orDash(ms.Value), ms.Phase, ev.MetricPhase)
	if why := progressWhy(ms.Phase, res, m); why != "" {
		line += " (" + why + ")"
	}
	if ms.Message != "" {
		line += fmt.Sprintf(" message=%q", ms.Message)
	}
	return line
}

// progressWhy counts a metric's measurements against its count, and the
// counter that the measurement's phase moved against its limit.
func progressWhy(phase api.Phase, res *api.MetricResult, m *analysis.Metric) string {
	if res == nil || m == nil {
		return ""
	}
	// Count, as the metric's count, is of the measurements that are not
	// Error.
	measured := res.Count
	parts := []string{fmt.Sprintf("%d measured", measured)}
	if m.Count != nil {
		parts[0] = fmt.Sprintf("%d of %d measured", measured, *m.Count)
	}
	against := func(counter string, n int32, limit string, l int32) string {
		op := "<="
		if n > l {
			op = ">"
		}
		return fmt.Sprintf("%s %d %s %s %d", counter, n, op, limit, l)
	}
	switch phase {
	case api.PhaseFailed:
		if m.FailureLimit < 0 {
			parts = append(parts, fmt.Sprintf("failed %d, no failureLimit", res.Failed))
		} else {
			parts = append(parts, against("failed", res.Failed, "failureLimit", m.FailureLimit))
		}
	case api.PhaseInconclusive:
		parts = append(parts, against("inconclusive", res.Inconclusive, "inconclusiveLimit", m.InconclusiveLimit))
	case api.PhaseError:
		parts = append(parts, against("consecutive errors", res.ConsecutiveError, "consecutiveErrorLimit", m.ConsecutiveErrorLimit))
	}
	if m.DryRun {
		parts = append(parts, "dry-run: not counted in the verdict")
	}
	return strings.Join(parts, "; ")
}

// metricResult is the named metric's result in a, or nil.
func metricResult(a api.Analysis, name string) *api.MetricResult {
	for i := range a.MetricResults {
		if a.MetricResults[i].Name == name {
			return &a.MetricResults[i]
		}
	}
	return nil
}

// refusedLine says that the Prometheus at address refused a connection,
// where the address came from, and what happens next.
func (c *cliSources) refusedLine(address string, retry time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "canaryd run: the Prometheus at %s refused the connection: ", address)
	switch {
	case c.override != "":
		b.WriteString("check --prometheus-url")
	case address == defaultPrometheusURL:
		b.WriteString("nothing listens at the default address, which is queried because neither --prometheus-url nor the template names one; give --prometheus-url URL (or " + config.EnvName("prometheus-url") + ")")
	default:
		b.WriteString("it is the template's address; give --prometheus-url URL to query another (a port-forward, say)")
	}
	fmt.Fprintf(&b, ". Measuring goes on as Argo does: again after %s (--error-retry), Error once consecutiveErrorLimit is exceeded.", retry)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describePlan says in one line what will be measured and when.
func describePlan(p *analysis.Plan) string {
	parts := make([]string, 0, len(p.Metrics))
	for _, m := range p.Metrics {
		var b strings.Builder
		b.WriteString(m.Name)
		switch {
		case m.Count == nil:
			fmt.Fprintf(&b, " (every %s until terminated", m.Interval)
		case *m.Count == 1:
			b.WriteString(" (once")
		default:
			fmt.Fprintf(&b, " (%d times, %s apart", *m.Count, m.Interval)
		}
		if m.InitialDelay > 0 {
			fmt.Fprintf(&b, ", after %s", m.InitialDelay)
		}
		if m.DryRun {
			b.WriteString(", dry-run")
		}
		b.WriteString(")")
		parts = append(parts, b.String())
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d metric(s): %s", len(p.Metrics), strings.Join(parts, ", "))
}
