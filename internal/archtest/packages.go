package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is what `go list -json` says of one package of the module.
type Package struct {
	ImportPath string
	Dir        string
	Name       string
	// Doc is the first sentence of the package's doc comment.
	Doc     string
	GoFiles []string
	// Imports are the packages its non-test files import, Deps every
	// package they depend on, directly or not.
	Imports []string
	Deps    []string
	Error   *struct{ Err string }
}

// Module is the packages of one Go module, in import-path order.
type Module struct {
	// Path is the module's path, Dir its root directory.
	Path string
	Dir  string
	// Packages are the module's own, without those of nested modules.
	Packages []Package
}

// Rel is path relative to the module's (path itself outside it, "." for
// the module's root package).
func (m *Module) Rel(path string) string {
	if path == m.Path {
		return "."
	}
	if rest, ok := strings.CutPrefix(path, m.Path+"/"); ok {
		return rest
	}
	return path
}

// Load lists the module whose directory holds dir (or a parent of it)
// with the go command.
func Load(dir string) (*Module, error) {
	gomod, err := goCommand(dir, "env", "GOMOD")
	if err != nil {
		return nil, err
	}
	file := strings.TrimSpace(string(gomod))
	if file == "" || file == os.DevNull {
		return nil, fmt.Errorf("%s is in no module", dir)
	}
	root := filepath.Dir(file)
	path, err := goCommand(root, "list", "-m")
	if err != nil {
		return nil, err
	}
	out, err := goCommand(root, "list", "-e", "-json=ImportPath,Dir,Name,Doc,GoFiles,Imports,Deps,Error", "./...")
	if err != nil {
		return nil, err
	}
	m := &Module{Path: strings.TrimSpace(string(path)), Dir: root}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		m.Packages = append(m.Packages, p)
	}
	return m, nil
}

// goCommand runs the go command in dir and returns its output.
func goCommand(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
