package main

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time with
// -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = ""
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// buildCommit returns the commit the binary was built from: the linker's
// value, or the one Go records from the checkout.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func (e *environment) versionCommand(args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, ok := e.parseFlags(fs, "version\n\nPrints the version, the commit and the Go release canaryd was built with.", args); !ok {
		return code
	}
	e.printf(e.stdout, "canaryd %s\ncommit: %s\ngo: %s %s/%s\n", version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
