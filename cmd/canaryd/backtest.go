package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/provider/prometheus"
)

// backtestCommand runs a template against history: in virtual time, each
// measurement queried as of its own past instant.
func (e *environment) backtestCommand(args []string) int {
	fs, f := e.newSpecFlagSet("backtest")
	startFlag := fs.String("start", "", "when the (first) analysis starts: RFC 3339, Unix seconds, or a duration before now (-24h); required")
	endFlag := fs.String("end", "", "the horizon: analyses still running then are terminated, and --every starts stop before it (default now)")
	every := fs.Duration("every", 0, "start an analysis every D from --start to --end and report each verdict")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	now := time.Now()
	start, err := parseInstant(*startFlag, now)
	if err != nil || *startFlag == "" {
		e.printf(e.stderr, "canaryd: --start: %s\n", instantProblem(*startFlag, err))
		return exitUsage
	}
	end := now
	if *endFlag != "" {
		if end, err = parseInstant(*endFlag, now); err != nil {
			e.printf(e.stderr, "canaryd: --end: %s\n", instantProblem(*endFlag, err))
			return exitUsage
		}
	}
	if !end.After(start) {
		e.printf(e.stderr, "canaryd: --end (%s) must be after --start (%s)\n", end.Format(time.RFC3339), start.Format(time.RFC3339))
		return exitUsage
	}
	if *every < 0 {
		e.printf(e.stderr, "canaryd: --every must be positive\n")
		return exitUsage
	}
	sources := &cliSources{override: f.prometheusURL, providers: map[string]*prometheus.Provider{}}
	compiled := e.compile(f, sources.source)
	if compiled == nil {
		return exitUsage
	}
	opts := analysis.Options{ID: "backtest", Args: compiled.Args}
	var results []analysis.BacktestResult
	if *every > 0 {
		results = analysis.BacktestSeries(e.ctx, compiled.Plan, start, end, *every, opts)
	} else {
		results = []analysis.BacktestResult{{Start: start, Analysis: analysis.Backtest(e.ctx, compiled.Plan, start, end, opts)}}
	}

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

	var out []byte
	if *every > 0 {
		out, err = json.MarshalIndent(struct {
			Start   time.Time                 `json:"start"`
			End     time.Time                 `json:"end"`
			Every   string                    `json:"every"`
			Results []analysis.BacktestResult `json:"results"`
		}{start, end, every.String(), results}, "", "  ")
	} else {
		out, err = json.MarshalIndent(results[0].Analysis, "", "  ")
	}
	if err != nil {
		e.printf(e.stderr, "canaryd: %v\n", err)
		return exitError
	}
	e.printf(e.stdout, "%s\n", out)
	return exitCode(worst)
}

// parseInstant reads a time as RFC 3339, Unix seconds, or a signed
// duration relative to now ("-24h").
func parseInstant(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("empty")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "hms") {
		return time.Unix(0, int64(secs*float64(time.Second))), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("not a time")
}

func instantProblem(s string, err error) string {
	if s == "" {
		return "required (RFC 3339 like 2026-11-21T09:00:00Z, Unix seconds, or a duration before now like -24h)"
	}
	return fmt.Sprintf("%q is %v: want RFC 3339 (2026-11-21T09:00:00Z), Unix seconds, or a duration relative to now (-24h)", s, err)
}
