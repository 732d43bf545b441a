// Command gendocs writes the configuration reference of `canaryd serve`
// (config.Reference) to the file its argument names. `make docs` runs it:
//
//	go generate ./internal/config
package main

import (
	"fmt"
	"os"

	"github.com/canaryd/canaryd/internal/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], config.Reference(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
