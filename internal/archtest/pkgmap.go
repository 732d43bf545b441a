package archtest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// The package map's place in docs/developing.md: the lines between these
// two are PackageMap's.
const (
	MapStart = "<!-- package map: written by `make docs` (go run ./internal/archtest/pkgmap) from each package's doc comment; edit those -->"
	MapEnd   = "<!-- end of package map -->"
)

// PackageMap is the package map of m: a list item for each package, its
// directory and the first sentence of its doc comment, without the
// comment's "Package name" or "Command name".
func PackageMap(m *Module) string {
	var b strings.Builder
	for _, p := range m.Packages {
		fmt.Fprintf(&b, "- `%s` %s\n", m.Rel(p.ImportPath), Summary(p))
	}
	return b.String()
}

// Summary is the first sentence of p's doc comment without its "Package
// name" or "Command name" (or "Package name is"), so that it reads after
// the package's directory.
func Summary(p Package) string {
	s := p.Doc
	for _, lead := range []string{"Package " + p.Name + " ", "Command " + dirName(p.Dir) + " "} {
		if rest, ok := strings.CutPrefix(s, lead); ok {
			return rest
		}
	}
	return s
}

// dirName is the last element of dir, a command's name.
func dirName(dir string) string {
	return dir[strings.LastIndexAny(dir, `/\`)+1:]
}

// ReplaceMap returns doc with the text between MapStart and MapEnd
// replaced by packageMap, or an error when doc has no such place.
func ReplaceMap(doc []byte, packageMap string) ([]byte, error) {
	start := bytes.Index(doc, []byte(MapStart+"\n"))
	end := bytes.Index(doc, []byte(MapEnd))
	if start < 0 || end < start {
		return nil, fmt.Errorf("no package map: the lines %q and %q", MapStart, MapEnd)
	}
	start += len(MapStart) + 1
	var b bytes.Buffer
	b.Write(doc[:start])
	b.WriteString("\n" + packageMap + "\n")
	b.Write(doc[end:])
	return b.Bytes(), nil
}

// WriteMap writes the package map of m into the file at path.
func WriteMap(m *Module, path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := ReplaceMap(doc, PackageMap(m))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}
