// Command canaryd is a stateless canary-analysis service. It runs Argo
// Rollouts AnalysisTemplate metrics against Prometheus and answers with the
// verdict: `canaryd serve` over HTTP, `canaryd run` in a pipeline, and
// `canaryd validate` as a linter.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
)

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
	case "version", "--version", "-version":
		return env.versionCommand()
	case "help", "-h", "-help", "--help":
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

func printUsage(w io.Writer) {
	_, _ = io.WriteString(w, `canaryd runs Argo Rollouts analysis templates against Prometheus and answers with a verdict.

Usage:
  canaryd serve [flags]                                   the HTTP service (canaryd serve -h for its flags)
  canaryd run -f FILE [--arg NAME=VALUE]... [--prometheus-url URL]
                                                          run one analysis here and now
  canaryd validate -f FILE [--arg NAME=VALUE]...          check a template without running it
  canaryd backtest -f FILE --start T [--end T] [--every D] [--arg NAME=VALUE]... [--prometheus-url URL]
                                                          run a template against history, at once
  canaryd version                                         print the version

FILE is YAML or JSON, or - for standard input.
Exit codes of run: 0 Successful, 1 Failed, 2 Inconclusive, 3 Error, 64 bad input.
Run 'canaryd COMMAND -h' for a command's flags.
`)
}
