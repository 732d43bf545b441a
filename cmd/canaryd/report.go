package main

import (
	"os"

	"github.com/canaryd/canaryd/internal/report"
)

// reportFlagUsage is the help of run's and backtest's --report.
const reportFlagUsage = "also write the result as one self-contained HTML `FILE` (the verdict and its reason, a chart per metric with its query's series beneath, the queries): a CI artifact that opens from disk"

// openReport creates the file --report names before anything runs, so
// that a path that cannot be written is refused at once rather than after
// the analysis. Nil, having said why, when it cannot be created.
func (e *environment) openReport(command, path string) (*os.File, bool) {
	if path == "" {
		return nil, true
	}
	f, err := os.Create(path)
	if err != nil {
		e.printf(e.stderr, "canaryd %s: --report: %v\n", command, err)
		return nil, false
	}
	return f, true
}

// writeReport writes r to the file openReport created, as HTML, and closes
// it; false, having said why, when it could not. Each Prometheus metric's
// query is first run over the analysis' window, through the metric's own
// source, for the chart beneath its measurements (report.FetchSeries): a
// query that fails is a note in the report.
func (e *environment) writeReport(command string, f *os.File, r *report.Report) bool {
	if f == nil {
		return true
	}
	r.FetchSeries(e.ctx)
	err := r.HTML(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		e.printf(e.stderr, "canaryd %s: --report: %v\n", command, err)
		return false
	}
	return true
}

// datasource is the Prometheus a metric with this address is queried at
// from the command line (see source): what the report links to.
func (c *cliSources) datasource(address string) string {
	switch {
	case c.override != "":
		return c.override
	case address != "":
		return address
	}
	return defaultPrometheusURL
}
