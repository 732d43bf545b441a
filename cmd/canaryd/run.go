package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
	"github.com/canaryd/canaryd/internal/spec"
)

// defaultPrometheusURL is queried by metrics that name no address.
const defaultPrometheusURL = "http://localhost:9090"

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

// specFlags are the flags shared by run and validate.
type specFlags struct {
	file          string
	args          argFlags
	prometheusURL string
}

func (e *environment) newSpecFlagSet(name string) (*flag.FlagSet, *specFlags) {
	f := &specFlags{args: argFlags{}}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&f.file, "f", "", "the AnalysisTemplate, ClusterAnalysisTemplate, AnalysisRun or bare spec to use (YAML or JSON; - for standard input)")
	fs.Var(f.args, "arg", "an argument value, NAME=VALUE (repeatable); overrides the template's value")
	fs.StringVar(&f.prometheusURL, "prometheus-url", e.getenv("CANARYD_PROMETHEUS_URL"),
		"query this Prometheus for every metric, whatever address the template names (e.g. a port-forward); env CANARYD_PROMETHEUS_URL")
	return fs, f
}

// compile reads, parses and compiles the spec a command was given. It
// prints every problem and returns nil when there is any.
func (e *environment) compile(f *specFlags, sources spec.PrometheusSources) *spec.Compiled {
	if f.file == "" {
		e.printf(e.stderr, "canaryd: -f FILE is required (- for standard input)\n")
		return nil
	}
	var data []byte
	var err error
	if f.file == "-" {
		data, err = io.ReadAll(io.LimitReader(e.stdin, 16<<20))
	} else {
		data, err = os.ReadFile(f.file)
	}
	if err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return nil
	}
	_, compiled, problems := spec.ParseAndCompile(data, f.args, sources)
	if len(problems) == 0 {
		return compiled
	}
	e.printf(e.stderr, "%s: %d problem(s):\n", displayName(f.file), len(problems))
	for _, p := range problems {
		if p.Field == "" {
			e.printf(e.stderr, "  %s\n", p.Message)
			continue
		}
		e.printf(e.stderr, "  %s: %s\n", p.Field, p.Message)
	}
	return nil
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
	mu        sync.Mutex
	providers map[string]*prometheus.Provider
}

func (c *cliSources) source(m *spec.PrometheusMetric) (analysis.Source, map[string]string, []api.FieldError) {
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
		p, err = prometheus.New(prometheus.Options{Datasources: []prometheus.Datasource{{Name: "cli", URL: address}}})
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
	}
	c.mu.Unlock()
	copied := *m
	copied.Address = address
	return p.Source(&copied)
}

func (e *environment) runCommand(args []string) int {
	fs, f := e.newSpecFlagSet("run")
	errorRetry := fs.Duration("error-retry", analysis.DefaultErrorRetryInterval, "wait after an Error measurement before measuring again")
	quiet := fs.Bool("q", false, "print no progress lines, only the result")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	sources := &cliSources{override: f.prometheusURL, providers: map[string]*prometheus.Provider{}}
	compiled := e.compile(f, sources.source)
	if compiled == nil {
		return exitUsage
	}
	plan := compiled.Plan
	if !*quiet {
		e.printf(e.stderr, "analysis started: %s\n", describePlan(plan))
	}
	var progress sync.Mutex
	run := analysis.Start(e.ctx, plan, analysis.Options{
		ID:                 "cli",
		ErrorRetryInterval: *errorRetry,
		Args:               compiled.Args,
		Observer: func(ev api.Event) {
			if *quiet || ev.Type != api.EventMeasurement {
				return
			}
			progress.Lock()
			defer progress.Unlock()
			e.printf(e.stderr, "%s\n", progressLine(ev))
		},
	})
	<-run.Done()
	result := run.Snapshot()
	out, err := api.MarshalIndent(result, "", "  ")
	if err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return exitError
	}
	e.printf(e.stdout, "%s\n", out)
	if !*quiet {
		if result.Message != "" {
			e.printf(e.stderr, "analysis %s: %s\n", result.Phase, result.Message)
		} else {
			e.printf(e.stderr, "analysis %s\n", result.Phase)
		}
	}
	return exitCode(result.Phase)
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
// phase, and the message when there is one.
func progressLine(ev api.Event) string {
	m := ev.Measurement
	at := time.Now().UTC()
	if m.FinishedAt != nil {
		at = m.FinishedAt.UTC()
	}
	line := fmt.Sprintf("%s %s value=%s phase=%s metric-phase=%s", at.Format(time.RFC3339), ev.Metric, orDash(m.Value), m.Phase, ev.MetricPhase)
	if m.Message != "" {
		line += fmt.Sprintf(" message=%q", m.Message)
	}
	return line
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

func (e *environment) validateCommand(args []string) int {
	fs, f := e.newSpecFlagSet("validate")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	sources := &cliSources{override: f.prometheusURL, providers: map[string]*prometheus.Provider{}}
	compiled := e.compile(f, sources.source)
	if compiled == nil {
		return exitUsage
	}
	e.printf(e.stdout, "%s: valid: %s\n", displayName(f.file), describePlan(compiled.Plan))
	return 0
}
