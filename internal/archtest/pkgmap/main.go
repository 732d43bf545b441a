// Command pkgmap writes the package map of docs/developing.md from the doc
// comment of each package of canaryd (archtest.PackageMap); go test
// ./internal/archtest fails while the two differ. Run it from anywhere in
// the module: go run ./internal/archtest/pkgmap.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/canaryd/canaryd/internal/archtest"
)

func main() {
	m, err := archtest.Load(".")
	if err == nil {
		err = archtest.WriteMap(m, filepath.Join(m.Dir, "docs", "developing.md"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkgmap:", err)
		os.Exit(1)
	}
}
