package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/judge/countjson"
)

// judgeSynopsis is the first line of judge's usage.
const judgeSynopsis = "judge [FILE] [--history FILE] [--alpha 0.05] [--tolerance 1] [--direction increase] [--max-looks N] [--all]\n\n" +
	"Runs the judge's sequential count test on looks read from FILE, or from\n" +
	"standard input without one (or with -), one JSON object a line:\n" +
	"{\"canary\":{\"bad\":N,\"total\":N},\"baseline\":{\"bad\":N,\"total\":N}}, counts\n" +
	"cumulative. Writes a line a look, {\"look\",\"eValue\",\"pValue\",\"ratio\",\n" +
	"\"decision\"}, and stops at the first decision (Failed, Successful) unless\n" +
	"--all; when the input ends undecided, the last line carries the last look's\n" +
	"rule: Successful, or Inconclusive. Numbers that are not finite are null. Bad\n" +
	"input ends the command at its line. --history reads the baseline's\n" +
	"cumulative counts before the analysis, {\"bad\":N,\"total\":N} an interval a\n" +
	"line, oldest first: how bursty its errors are sets the dispersion the\n" +
	"looks are judged at from the first. Exit code: 0 Successful, 1 Failed,\n" +
	"2 Inconclusive, 3 Error (input or output failed), 64 bad input or flags."

// defaultMaxLooks is --max-looks' default: a look a second for eleven days.
// The test's memory does not grow with the looks; the bound stops a
// runaway input. It bounds --history's intervals too, which are held (16
// bytes each) until the looks begin.
const defaultMaxLooks = 1_000_000

// maxLookLine bounds one line of the input, and of --history: a look is
// some 80 bytes.
const maxLookLine = 1 << 20

// historySource names --history in the problems of its lines.
const historySource = "--history"

// judgeOptions are canaryd judge's flags and arguments.
type judgeOptions struct {
	cfg      judge.CountConfig
	maxLooks int
	all      bool
	// history is --history's file, "-" for standard input; given says
	// whether the flag was.
	history string
	given   bool
	files   []string
}

func (e *environment) judgeCommand(args []string) int {
	o, code, ok := e.judgeArgs(args)
	if !ok {
		return code
	}
	in, history, closeFiles, code := e.judgeInputs(o)
	if closeFiles == nil {
		return code
	}
	defer closeFiles()

	type outcome struct {
		decision string
		err      error
	}
	done := make(chan outcome, 1)
	// Ends at the end of the input, at bad input, or when writing fails;
	// a signal ends the command without it (a read of a terminal cannot
	// be interrupted), and the process' exit ends it.
	go func() {
		cfg := o.cfg
		var err error
		if history != nil {
			cfg.History, err = readHistory(history, o.maxLooks)
		}
		var decision string
		if err == nil {
			decision, err = judgeLooks(in, e.stdout, cfg, o.maxLooks, o.all)
		}
		done <- outcome{decision, err}
	}()
	select {
	case <-e.ctx.Done():
		code, sig := interruptedExit(e.ctx)
		if sig == nil {
			return exitError
		}
		e.printf(e.stderr, "canaryd judge: %v\n", sig)
		return code
	case out := <-done:
		var bad *badLook
		switch {
		case errors.As(out.err, &bad):
			e.printf(e.stderr, "canaryd judge: %v\n", bad)
			return exitUsage
		case out.err != nil:
			e.printf(e.stderr, "canaryd judge: %v\n", out.err)
			return exitError
		}
		switch out.decision {
		case judge.DecisionSuccessful:
			return exitSuccessful
		case judge.DecisionFailed:
			return exitFailed
		}
		return exitInconclusive
	}
}

// judgeArgs reads judge's flags and arguments and checks them. It returns
// ok false with the exit code when the command ends here: -h, or bad
// flags (their problem printed).
func (e *environment) judgeArgs(args []string) (o judgeOptions, code int, ok bool) {
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // printed below: to stdout when asked for
	o.cfg = judge.CountConfig{Direction: judge.DirectionIncrease}
	fs.Float64Var(&o.cfg.Alpha, "alpha", judge.DefaultCountAlpha,
		"the test's level: the chance of a false Failed (or a false early Successful) at any number of looks, in (0, 0.5]")
	fs.Float64Var(&o.cfg.Tolerance, "tolerance", judge.DefaultCountTolerance,
		"the rate ratio canary/baseline still fine: 1 fails any rise the evidence shows, 1.2 tolerates 20% more; > 0")
	fs.Func("direction", `which change fails: increase (bad events) or decrease (good events, such as checkouts) (default "increase")`, func(s string) error {
		o.cfg.Direction = judge.Direction(s)
		return nil
	})
	fs.Func("history", "`FILE` of the baseline's cumulative counts at the end of each interval before the analysis, {\"bad\":N,\"total\":N} a line, oldest first (a day of five-minute intervals is 288), or - for standard input when the looks come from FILE; at most --max-looks lines", func(s string) error {
		o.history, o.given = s, true
		return nil
	})
	fs.IntVar(&o.maxLooks, "max-looks", defaultMaxLooks, "most looks read, and most lines of --history; one more is bad input")
	fs.BoolVar(&o.all, "all", false, "go on to the end of the input after a decision (which stays)")

	// The flag package stops at the first argument that is not a flag;
	// the file may come before the flags, so parsing goes on after it.
	for rest := args; ; {
		err := fs.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			e.commandUsage(e.stdout, fs, judgeSynopsis)
			return o, 0, false
		}
		if err != nil {
			// The flag package has printed the problem.
			e.printf(e.stderr, "\n")
			e.commandUsage(e.stderr, fs, judgeSynopsis)
			return o, exitUsage, false
		}
		if fs.NArg() == 0 {
			break
		}
		o.files = append(o.files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	problem := ""
	invalid := o.cfg.Validate()
	switch stdinLooks := len(o.files) == 0 || o.files[0] == "-"; {
	case len(o.files) > 1:
		problem = fmt.Sprintf("%d files given (%q, %q); judge reads one, or standard input", len(o.files), o.files[0], o.files[1])
	case invalid != nil:
		problem = fmt.Sprintf("--%v", invalid)
	case o.maxLooks < 1:
		problem = fmt.Sprintf("--max-looks: must be at least 1, got %d", o.maxLooks)
	case o.given && o.history == "":
		problem = "--history: must name a file, or - for standard input"
	case o.given && o.history == "-" && stdinLooks:
		problem = "--history -: standard input holds the looks; give the looks' FILE to read the history from standard input"
	}
	if problem != "" {
		e.printf(e.stderr, "canaryd judge: %s\n", problem)
		return o, exitUsage, false
	}
	return o, 0, true
}

// judgeInputs opens the looks' input and --history's, nil without it.
// closeFiles closes what it opened; it is nil, with the exit code, when a
// file cannot be opened (the problem printed).
func (e *environment) judgeInputs(o judgeOptions) (in, history io.Reader, closeFiles func(), code int) {
	var opened []*os.File
	closeFiles = func() {
		for _, f := range opened {
			_ = f.Close()
		}
	}
	open := func(name, what string) io.Reader {
		if name == "-" {
			return e.stdin
		}
		f, err := os.Open(name)
		if err != nil {
			e.printf(e.stderr, "canaryd judge: %s%s: %s\n", what, name, pathProblem(err))
			return nil
		}
		opened = append(opened, f)
		return f
	}
	in = e.stdin
	if len(o.files) == 1 {
		in = open(o.files[0], "")
	}
	if in != nil && o.given {
		history = open(o.history, historySource+" ")
	}
	if in == nil || (o.given && history == nil) {
		closeFiles()
		return nil, nil, nil, exitUsage
	}
	return in, history, closeFiles, 0
}

// badLook is bad input at a line of the looks, or of --history (source):
// exit code 64.
type badLook struct {
	source  string // "" for the looks, historySource
	line    int
	field   string // "" for the line as a whole
	message string
}

func (b *badLook) Error() string {
	prefix := ""
	if b.source != "" {
		prefix = b.source + " "
	}
	switch {
	case b.line == 0 && b.source != "":
		return b.source + ": " + b.message
	case b.line == 0:
		return b.message
	case b.field == "":
		return fmt.Sprintf("%sline %d: %s", prefix, b.line, b.message)
	}
	return fmt.Sprintf("%sline %d: %s: %s", prefix, b.line, b.field, b.message)
}

func lineProblem(line int, err error) error {
	var fe *judge.FieldError
	if errors.As(err, &fe) {
		return &badLook{line: line, field: fe.Field, message: fe.Message}
	}
	return &badLook{line: line, message: err.Error()}
}

// readHistory reads the baseline's history, --history's lines: one
// interval's cumulative counts a line, {"bad":N,"total":N}, oldest first,
// blank lines skipped, at most maxLooks of them. It returns them, or a
// *badLook at the first bad line, naming its interval's field
// (history[2].bad): its shape (countjson.ParseCounts), or its counts as
// the test checks them (negative, decreasing, more bad than total), or
// one line more than maxLooks. An empty history is none: it tells
// nothing, and the default prior of the dispersion stays.
func readHistory(in io.Reader, maxLooks int) ([]judge.Counts, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLookLine)
	var (
		history []judge.Counts
		line    int
	)
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if len(history) == maxLooks {
			return nil, &badLook{source: historySource, line: line, message: fmt.Sprintf("more intervals than --max-looks (%d)", maxLooks)}
		}
		c, err := countjson.ParseCounts(b)
		if err == nil {
			err = checkInterval(history, c)
		}
		if err != nil {
			return nil, historyProblem(line, len(history), err)
		}
		history = append(history, c)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &badLook{source: historySource, line: line + 1, message: fmt.Sprintf("longer than %d bytes", maxLookLine)}
		}
		return nil, fmt.Errorf("reading %s: %w", historySource, err)
	}
	return history, nil
}

// checkInterval checks an interval's counts, c, after those of history,
// as the count test does (judge.CountConfig.Validate), and returns the
// problem of its field (bad, total).
func checkInterval(history []judge.Counts, c judge.Counts) error {
	pair := []judge.Counts{c}
	if len(history) > 0 {
		pair = []judge.Counts{history[len(history)-1], c}
	}
	err := judge.CountConfig{Alpha: judge.DefaultCountAlpha, Tolerance: judge.DefaultCountTolerance,
		Direction: judge.DirectionIncrease, History: pair}.Validate()
	var fe *judge.FieldError
	if errors.As(err, &fe) {
		// The problem is the last interval's, history[len(pair)-1].bad.
		field, _ := strings.CutPrefix(fe.Field, fmt.Sprintf("history[%d].", len(pair)-1))
		return &judge.FieldError{Field: field, Message: fe.Message}
	}
	return err
}

// historyProblem is err, a problem of the interval i at line, named by
// its field in the history (history[2].bad).
func historyProblem(line, i int, err error) error {
	b := &badLook{source: historySource, line: line, message: err.Error()}
	var fe *judge.FieldError
	if errors.As(err, &fe) {
		b.message = fe.Message
		if fe.Field != "" {
			b.field = fmt.Sprintf("history[%d].%s", i, fe.Field)
		}
	}
	return b
}

// flushingReader flushes the output before each read of the input, so
// that whoever feeds looks one at a time sees each result before the next
// look is asked of them, while a file or a fast stream is written in
// large blocks.
type flushingReader struct {
	r io.Reader
	w *bufio.Writer
}

func (f flushingReader) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// judgeLooks runs the count test on the looks of in, a JSON object a
// line (blank lines skipped), and writes a line a look to out. It stops
// at the first decision unless all. A look's line is written once the
// next look is read, so that the last look's line can carry the
// conclusion (CountTest.Conclude) when the input ends undecided; a
// decision is written at once. It returns the decision, or a *badLook at
// the first bad line (the lines before it written), or the error of
// reading or writing.
func judgeLooks(in io.Reader, out io.Writer, cfg judge.CountConfig, maxLooks int, all bool) (string, error) {
	test, err := judge.NewCountTest(cfg)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	sc := bufio.NewScanner(flushingReader{in, w})
	sc.Buffer(make([]byte, 64<<10), maxLookLine)
	var (
		pending  []byte // the last look's line, while it may be the last
		results  countjson.Writer
		held     bool
		decision string
		line     int
		looks    int
	)
	finish := func(err error) (string, error) {
		if held {
			_, _ = w.Write(pending)
		}
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = ferr
		}
		return decision, err
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if looks == maxLooks {
			return finish(&badLook{line: line, message: fmt.Sprintf("more looks than --max-looks (%d)", maxLooks)})
		}
		look, err := countjson.ParseLook(b)
		if err != nil {
			return finish(lineProblem(line, err))
		}
		r, err := test.Observe(look)
		if err != nil {
			return finish(lineProblem(line, err))
		}
		looks++
		if held {
			if _, err := w.Write(pending); err != nil {
				return decision, err
			}
		}
		pending = append(results.Append(pending[:0], r), '\n')
		held = r.Decision == judge.DecisionContinue
		if held {
			continue
		}
		if _, err := w.Write(pending); err != nil {
			return decision, err
		}
		if decision == "" {
			decision = r.Decision
		}
		if !all {
			return finish(nil)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return finish(&badLook{line: line + 1, message: fmt.Sprintf("longer than %d bytes", maxLookLine)})
		}
		return finish(fmt.Errorf("reading the looks: %w", err))
	}
	if looks == 0 {
		return finish(&badLook{message: "no looks: the input has none"})
	}
	if held {
		r := test.Conclude()
		pending = append(results.Append(pending[:0], r), '\n')
		decision = r.Decision
	}
	return finish(nil)
}
