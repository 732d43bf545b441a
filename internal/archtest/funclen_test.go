package archtest_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// maxFuncLines is the most lines a function of the module's non-test code
// may have, from its func keyword to its closing brace.
const maxFuncLines = 100

// knownLongFuncs are the functions over maxFuncLines today, "PACKAGE.FUNC"
// or "PACKAGE.RECEIVER.METHOD" with PACKAGE relative to the module. The
// list may only shrink: a function listed that is no longer too long (or
// no longer there) fails the test too.
var knownLongFuncs = []string{}

// TestFunctionLength holds every function of the module's non-test code to
// maxFuncLines.
func TestFunctionLength(t *testing.T) {
	m := load(t)
	var found []string
	fset := token.NewFileSet()
	for _, p := range m.Packages {
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if lines > maxFuncLines {
					found = append(found, m.Rel(p.ImportPath)+"."+funcName(fn))
					t.Logf("%s: %s is %d lines", fset.Position(fn.Pos()), funcName(fn), lines)
				}
			}
		}
	}
	checkKnown(t, "functions", found, knownLongFuncs, fmt.Sprintf("more than %d lines: split it", maxFuncLines))
}

// funcName is fn's name, after its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
