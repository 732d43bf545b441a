package limits_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports checks that the limits' home imports nothing of canaryd and
// that internal/config, which offers the limits as flags, finds them here
// rather than in the packages that enforce them (internal/server).
func TestImports(t *testing.T) {
	for dir, refused := range map[string][]string{
		".":         {"github.com/canaryd/canaryd"},
		"../config": {"github.com/canaryd/canaryd/internal/server"},
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v %v", dir, files, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, r := range refused {
					if strings.HasPrefix(path, r) {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
