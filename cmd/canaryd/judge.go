package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/canaryd/canaryd/internal/judge"
	"github.com/canaryd/canaryd/internal/judge/countjson"
)

// judgeSynopsis is the first line of judge's usage.
const judgeSynopsis = "judge [FILE] [--alpha 0.05] [--tolerance 1] [--direction increase] [--max-looks N] [--all]\n\n" +
	"Runs the judge's sequential count test on looks read from FILE, or from\n" +
	"standard input without one (or with -), one JSON object a line:\n" +
	"{\"canary\":{\"bad\":N,\"total\":N},\"baseline\":{\"bad\":N,\"total\":N}}, counts\n" +
	"cumulative. Writes a line a look, {\"look\",\"eValue\",\"pValue\",\"ratio\",\n" +
	"\"decision\"}, and stops at the first decision (Failed, Successful) unless\n" +
	"--all; when the input ends undecided, the last line carries the last look's\n" +
	"rule: Successful, or Inconclusive. Numbers that are not finite are null. Bad\n" +
	"input ends the command at its line. Exit code: 0 Successful, 1 Failed,\n" +
	"2 Inconclusive, 3 Error (input or output failed), 64 bad input or flags."

// defaultMaxLooks is --max-looks' default: a look a second for eleven days.
// The test's memory does not grow with the looks; the bound stops a
// runaway input.
const defaultMaxLooks = 1_000_000

// maxLookLine bounds one line of the input: a look is some 80 bytes.
const maxLookLine = 1 << 20

func (e *environment) judgeCommand(args []string) int {
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {} // printed below: to stdout when asked for
	cfg := judge.CountConfig{Direction: judge.DirectionIncrease}
	fs.Float64Var(&cfg.Alpha, "alpha", judge.DefaultCountAlpha,
		"the test's level: the chance of a false Failed (or a false early Successful) at any number of looks, in (0, 0.5]")
	fs.Float64Var(&cfg.Tolerance, "tolerance", judge.DefaultCountTolerance,
		"the rate ratio canary/baseline still fine: 1 fails any rise the evidence shows, 1.2 tolerates 20% more; > 0")
	fs.Func("direction", `which change fails: increase (bad events) or decrease (good events, such as checkouts) (default "increase")`, func(s string) error {
		cfg.Direction = judge.Direction(s)
		return nil
	})
	maxLooks := fs.Int("max-looks", defaultMaxLooks, "most looks read; one more is bad input")
	all := fs.Bool("all", false, "go on to the end of the input after a decision (which stays)")

	// The flag package stops at the first argument that is not a flag;
	// the file may come before the flags, so parsing goes on after it.
	var files []string
	for rest := args; ; {
		err := fs.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			e.commandUsage(e.stdout, fs, judgeSynopsis)
			return 0
		}
		if err != nil {
			// The flag package has printed the problem.
			e.printf(e.stderr, "\n")
			e.commandUsage(e.stderr, fs, judgeSynopsis)
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) > 1 {
		e.printf(e.stderr, "canaryd judge: %d files given (%q, %q); judge reads one, or standard input\n", len(files), files[0], files[1])
		return exitUsage
	}
	if err := cfg.Validate(); err != nil {
		e.printf(e.stderr, "canaryd judge: --%v\n", err)
		return exitUsage
	}
	if *maxLooks < 1 {
		e.printf(e.stderr, "canaryd judge: --max-looks: must be at least 1, got %d\n", *maxLooks)
		return exitUsage
	}
	in := e.stdin
	if len(files) == 1 && files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			e.printf(e.stderr, "canaryd judge: %s: %s\n", files[0], pathProblem(err))
			return exitUsage
		}
		defer f.Close()
		in = f
	}

	type outcome struct {
		decision string
		err      error
	}
	done := make(chan outcome, 1)
	// Ends at the end of the input, at bad input, or when writing fails;
	// a signal ends the command without it (a read of a terminal cannot
	// be interrupted), and the process' exit ends it.
	go func() {
		decision, err := judgeLooks(in, e.stdout, cfg, *maxLooks, *all)
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
	case o := <-done:
		var bad *badLook
		switch {
		case errors.As(o.err, &bad):
			e.printf(e.stderr, "canaryd judge: %v\n", bad)
			return exitUsage
		case o.err != nil:
			e.printf(e.stderr, "canaryd judge: %v\n", o.err)
			return exitError
		}
		switch o.decision {
		case judge.DecisionSuccessful:
			return exitSuccessful
		case judge.DecisionFailed:
			return exitFailed
		}
		return exitInconclusive
	}
}

// badLook is bad input at a line of the looks: exit code 64.
type badLook struct {
	line    int
	field   string // "" for the line as a whole
	message string
}

func (b *badLook) Error() string {
	if b.line == 0 {
		return b.message
	}
	if b.field == "" {
		return fmt.Sprintf("line %d: %s", b.line, b.message)
	}
	return fmt.Sprintf("line %d: %s: %s", b.line, b.field, b.message)
}

func lineProblem(line int, err error) error {
	var fe *judge.FieldError
	if errors.As(err, &fe) {
		return &badLook{line: line, field: fe.Field, message: fe.Message}
	}
	return &badLook{line: line, message: err.Error()}
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
