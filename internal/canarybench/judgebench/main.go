// Command judgebench runs canaryd's open canary benchmark: it makes the
// labelled cases (internal/canarybench) and prints, for every method, a
// table of its false alarms, detections and time to a verdict. `make
// judge-bench` runs it at the scale docs/judge.md reports; `-write FILE`
// writes the cases instead, one JSON object a line, as
// testdata/benchmark/cases.ndjson holds them at scale 1; `-dispersion F`
// scores the count judge alone with its dispersion fixed at F, to measure
// what estimating it costs and protects; `-history=false` scores the count
// judge alone without the cases' history of the baseline, to measure what
// the history buys.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/canaryd/canaryd/internal/canarybench"
	"github.com/canaryd/canaryd/internal/judge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "judgebench:", err)
		os.Exit(1)
	}
}

// printLooks writes the looks of the case named id, one a line.
func printLooks(w io.Writer, cases []canarybench.Case, id string) error {
	for _, c := range cases {
		if c.ID != id {
			continue
		}
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		for _, l := range c.Looks {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	return fmt.Errorf("no case %q at this seed and scale", id)
}

func run(args []string) error {
	fs := flag.NewFlagSet("judgebench", flag.ContinueOnError)
	seed := fs.Uint64("seed", canarybench.Seed, "the generator's seed")
	scale := fs.Int("scale", 12, "copies of every cell's cases (1 is the published set)")
	write := fs.String("write", "", "write the cases to this file, one JSON object a line, instead of scoring them")
	looks := fs.String("looks", "", "print the looks of the case with this id, one JSON object a line, as canaryd judge reads them")
	dispersion := fs.Float64("dispersion", 0, "score the count judge alone, its dispersion fixed at this value (at least 1) instead of estimated")
	history := fs.Bool("history", true, "give the count judge each case's history of the baseline; -history=false scores the count judge alone without it")
	historySteps := fs.Int("history-steps", canarybench.HistorySteps, "the intervals of each case's history of the baseline")
	historyStep := fs.Duration("history-step", canarybench.HistoryStepSeconds*time.Second, "the length of an interval of the history, whole seconds")
	if err := fs.Parse(args); err != nil {
		return err
	}

	if *scale < 1 {
		return fmt.Errorf("-scale must be at least 1")
	}
	if err := (judge.CountConfig{Dispersion: *dispersion}).WithDefaults().Validate(); err != nil {
		return fmt.Errorf("-%v", err)
	}
	if *historySteps < 0 || *historyStep < time.Second || *historyStep%time.Second != 0 {
		return fmt.Errorf("-history-steps must be at least 0 and -history-step whole seconds, at least 1 s")
	}
	cases := canarybench.GenerateWith(*seed, *scale, canarybench.HistoryShape{Steps: *historySteps, StepSeconds: int(*historyStep / time.Second)})
	if *looks != "" {
		return printLooks(os.Stdout, cases, *looks)
	}
	if *write != "" {
		f, err := os.Create(*write)
		if err != nil {
			return err
		}
		if err := canarybench.WriteCases(f, cases); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	start := time.Now()
	methods := canarybench.Methods()
	if *dispersion != 0 || !*history {
		methods = canarybench.CountMethods(*dispersion, *history)
	}

	res := canarybench.Run(cases, methods)
	w := bufio.NewWriter(os.Stdout)
	aa := 0
	for _, c := range cases {
		if !c.Labels.Regression {
			aa++
		}
	}
	fmt.Fprintf(w, "%d cases (%d A/A), seed %d, scale %d, alpha %g; scored in %s\n\n", len(cases), aa, *seed, *scale, canarybench.Alpha, time.Since(start).Round(time.Second))
	canarybench.WriteTables(w, methods, res)
	return w.Flush()
}
