package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/instant"
	"github.com/canaryd/canaryd/internal/report"
)

// backtestSynopsis is the first line of backtest's usage.
const backtestSynopsis = "backtest -f FILE --start T [--end T] [--every D] [--arg NAME=VALUE]... [--prometheus-url URL] [--credentials-dir DIR] [--web-allow PREFIX]... [--graphite-allow PREFIX]... [--max-result-values N] [--report FILE]\n\n" +
	"Runs a template against history, at once: each measurement is queried as of its\n" +
	"own past instant. Prints a table of verdicts to standard error and the result as\n" +
	"JSON to standard output (--report also writes it as an HTML file, with --every a\n" +
	"strip of the verdicts over time); exits as run does, by the worst verdict."

// backtestCommand runs a template against history: in virtual time, each
// measurement queried as of its own past instant.
func (e *environment) backtestCommand(args []string) int {
	fs, f := e.newSpecFlagSet("backtest")
	startFlag := fs.String("start", "", "when the (first) analysis starts, a `time`: RFC 3339, Unix seconds, or a duration before now (-24h); required")
	endFlag := fs.String("end", "", "the horizon, a `time` as --start: analyses still running then are terminated, and --every starts stop before it (default now)")
	var every time.Duration
	fs.Var(durationFlag{&every}, "every", "start an analysis every `duration` (1h, 1d) from --start to --end and report each verdict")
	reportFile := fs.String("report", "", reportFlagUsage)
	if code, ok := e.parseFlags(fs, backtestSynopsis, args); !ok {
		return code
	}
	file := e.file("backtest", f)
	if file == "" {
		return exitUsage
	}
	now := time.Now()
	start, err := instant.Parse(*startFlag, now)
	if err != nil {
		e.printf(e.stderr, "canaryd: --start: %v\n", err)
		return exitUsage
	}
	end := now
	if *endFlag != "" {
		if end, err = instant.Parse(*endFlag, now); err != nil {
			e.printf(e.stderr, "canaryd: --end: %v\n", err)
			return exitUsage
		}
	}
	if !end.After(start) {
		e.printf(e.stderr, "canaryd: --end (%s) must be after --start (%s)\n", end.Format(time.RFC3339), start.Format(time.RFC3339))
		return exitUsage
	}
	if every < 0 {
		e.printf(e.stderr, "canaryd: --every must be positive\n")
		return exitUsage
	}
	sources := f.sources()
	providers, ok := e.registry("backtest", sources, false)
	if !ok {
		return exitUsage
	}
	// A metric that cannot be measured in the past is said to be so first
	// (compile.ForBacktest), before what else it lacks: a backtest of it
	// would measure the present.
	compiled, name := e.compile(file, f, providers, compile.ForBacktest())
	if compiled == nil {
		return exitUsage
	}
	htmlReport, ok := e.openReport("backtest", *reportFile)
	if !ok {
		return exitUsage
	}
	opts := analysis.Options{ID: "backtest", Args: compiled.Args}
	var results []analysis.BacktestResult
	if every > 0 {
		results = analysis.BacktestSeries(e.ctx, compiled.Plan, start, end, every, opts)
	} else {
		results = []analysis.BacktestResult{{Start: start, Analysis: analysis.Backtest(e.ctx, compiled.Plan, start, end, opts)}}
	}

	worst := e.printBacktests(results)

	var out []byte
	if every > 0 {
		out, err = api.MarshalIndent(struct {
			Start   time.Time                 `json:"start"`
			End     time.Time                 `json:"end"`
			Every   string                    `json:"every"`
			Results []analysis.BacktestResult `json:"results"`
		}{start, end, every.String(), results}, "", "  ")
	} else {
		out, err = api.MarshalIndent(results[0].Analysis, "", "  ")
	}
	if err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return exitError
	}
	e.printf(e.stdout, "%s\n", out)
	explained := report.NewSeries(results, compiled.Plan.Metrics)
	if every == 0 {
		explained = report.New(results[0].Analysis, compiled.Plan.Metrics)
	}
	// Named by its template and arguments, as run's is, not by the id
	// "backtest".
	explained.Analysis.ID = ""
	explained.Analysis.Template = name
	explained.Sources = report.SourcesOf(compiled.Spec, compiled.Args, providers, sources.datasource)
	if !e.writeReport("backtest", htmlReport, explained) {
		return exitError
	}
	if code, sig := interruptedExit(e.ctx); sig != nil {
		e.printf(e.stderr, "canaryd backtest: %v before the backtest completed; exit code %d\n", sig, code)
		return code
	}
	return exitCode(worst)
}

// printBacktests lists the backtests' verdicts on stderr, one line each,
// and returns the worst of their phases, which the exit code tells.
func (e *environment) printBacktests(results []analysis.BacktestResult) api.Phase {
	tw := tabwriter.NewWriter(e.stderr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tPHASE\tMEASUREMENTS\tMESSAGE")
	worst := api.PhaseSuccessful
	for _, r := range results {
		n := 0
		for _, m := range r.Analysis.MetricResults {
			n += int(m.Count + m.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Start.UTC().Format(time.RFC3339), r.Analysis.Phase, n, r.Analysis.Message)
		if exitCode(r.Analysis.Phase) > exitCode(worst) {
			worst = r.Analysis.Phase
		}
	}
	_ = tw.Flush()
	return worst
}
