// Command canaryd is a stateless canary-analysis service. It runs Argo
// Rollouts AnalysisTemplate metrics against Prometheus (and canaryd's
// judge metrics, which compare a canary with its baseline) and answers
// with the verdict: `canaryd serve` over HTTP, `canaryd run` in a
// pipeline, `canaryd backtest` over a window of the past, `canaryd
// validate` as a linter, `canaryd judge` on counts from anywhere,
// `canaryd migrate` for a PostgreSQL store's schema,
// and `canaryd version`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signalContext(context.Background())
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes of canaryd's commands.
const (
	exitSuccessful   = 0
	exitFailed       = 1
	exitInconclusive = 2
	exitError        = 3
	exitUsage        = 64 // EX_USAGE: bad flags or bad input
	// A run or backtest stopped by a signal exits 128 + the signal's
	// number, as a shell reports a process killed by it: 130 for SIGINT,
	// 143 for SIGTERM.
	exitSignalBase = 128
)

// interrupted is the cause of the context's end when a signal ended it.
type interrupted struct{ signal syscall.Signal }

func (i *interrupted) Error() string {
	return fmt.Sprintf("interrupted by %s", signalName(i.signal))
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalContext returns a context that the first SIGINT or SIGTERM
// cancels, with an *interrupted cause that names it. Later signals are
// caught too, and ignored, until stop is called: the command is already
// winding down and still has its result to print.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	// Ends at the first signal, or when stop is called.
	go func() {
		select {
		case s := <-signals:
			if sig, ok := s.(syscall.Signal); ok {
				cancel(&interrupted{signal: sig})
			} else {
				cancel(nil)
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel(nil)
	}
}

// interruptedExit returns the exit code of a command that ctx's signal
// stopped, 128 + the signal's number, and the signal; nil when no signal
// stopped it.
func interruptedExit(ctx context.Context) (code int, sig *interrupted) {
	if errors.As(context.Cause(ctx), &sig) {
		return exitSignalBase + int(sig.signal), sig
	}
	return 0, nil
}

// run dispatches to a command and returns the process' exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	env := &environment{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "serve":
		return env.serveCommand(args[1:])
	case "run":
		return env.runCommand(args[1:])
	case "validate":
		return env.validateCommand(args[1:])
	case "backtest":
		return env.backtestCommand(args[1:])
	case "judge":
		return env.judgeCommand(args[1:])
	case "migrate":
		return env.migrateCommand(args[1:])
	case "version":
		return env.versionCommand(args[1:])
	case "--version", "-version":
		return env.versionCommand(nil)
	case "help":
		return env.helpCommand(args[1:])
	case "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	}
	env.printf(stderr, "canaryd: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return exitUsage
}

// environment is what every command gets from the process.
type environment struct {
	ctx    context.Context
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (e *environment) printf(w io.Writer, format string, a ...any) {
	// A broken stdout or stderr leaves nothing useful to report to.
	_, _ = io.WriteString(w, sprintf(format, a...))
}

// helpCommand prints the usage, or a command's: `canaryd help run` is
// `canaryd run -h`.
func (e *environment) helpCommand(args []string) int {
	switch {
	case len(args) == 0, len(args) == 1 && isHelpFlag(args[0]):
		printUsage(e.stdout)
		return 0
	case len(args) == 1 && commands[args[0]]:
		return run(e.ctx, []string{args[0], "-h"}, e.getenv, e.stdin, e.stdout, e.stderr)
	case strings.HasPrefix(args[0], "-"):
		e.printf(e.stderr, "canaryd help: flag provided but not defined: %s\n\n", args[0])
	default:
		e.printf(e.stderr, "canaryd help: unknown command %q\n\n", strings.Join(args, " "))
	}
	printUsage(e.stderr)
	return exitUsage
}

// commands are the commands that `canaryd help COMMAND` knows.
var commands = map[string]bool{"serve": true, "run": true, "validate": true, "backtest": true, "judge": true, "migrate": true, "version": true}

func isHelpFlag(a string) bool {
	switch a {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

func printUsage(w io.Writer) {
	_, _ = io.WriteString(w, `canaryd runs Argo Rollouts analysis templates against Prometheus and answers with a verdict.

Usage:
  canaryd serve [flags]                                   the HTTP service (canaryd serve -h for its flags)
  canaryd run -f FILE [--arg NAME=VALUE]... [--prometheus-url URL]
                                                          run one analysis here and now
  canaryd validate -f PATH [-f PATH]... [--arg NAME=VALUE]...
                                                          check templates (files, directories) without running them
  canaryd backtest -f FILE --start T [--end T] [--every D] [--arg NAME=VALUE]... [--prometheus-url URL]
                                                          run a template against history, at once
  canaryd judge [FILE] [--history FILE] [--alpha 0.05] [--tolerance 1] [--direction increase] [--max-looks N] [--all]
                                                          the sequential count test on looks (NDJSON) of counts
  canaryd migrate --store URL                             migrate a postgres:// store's schema
  canaryd version                                         print the version
  canaryd help [COMMAND]                                  this, or a command's flags

FILE is YAML or JSON, or - for standard input.
Exit codes of run, backtest and judge: 0 Successful, 1 Failed, 2 Inconclusive, 3 Error,
64 bad input, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
Run 'canaryd COMMAND -h' for a command's flags.
`)
}
