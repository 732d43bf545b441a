package compile

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the line between reading a document and compiling it:
// compile may import spec but nothing of the service that uses it, and
// spec compiles nothing, builds no source and knows no provider (not even
// the judge's statistics) or engine.
func TestImports(t *testing.T) {
	const mod = "github.com/canaryd/canaryd/"
	for dir, refused := range map[string][]string{
		".":       {"internal/server", "internal/templates", "cmd"},
		"../spec": {"internal/compile", "internal/condition", "internal/provider", "internal/judge", "internal/analysis", "internal/server"},
	} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range pkg.Imports {
			for _, r := range refused {
				if path == mod+r || strings.HasPrefix(path, mod+r+"/") {
					t.Errorf("%s imports %s", pkg.ImportPath, path)
				}
			}
		}
	}
}
