package templates

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxFileSize bounds what is read of one file. A ConfigMap holds at most
// 1 MiB in all; a bigger file is a mistake, not a template.
const maxFileSize = 4 << 20

// dataLink is the entry of a Kubernetes ConfigMap or Secret volume that
// points at the directory holding the current version of every key. The
// kubelet writes a new directory and swaps the link atomically.
const dataLink = "..data"

// isTemplateFile reports whether a directory entry is read as templates.
// Dot-entries are skipped: they are the volume's ..data and timestamped
// directories, editors' swap files and the like.
func isTemplateFile(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// fileContent is one template file as a scan found it.
type fileContent struct {
	name string
	// key identifies the content: its SHA-256, or the read error. A file is
	// loaded again only when its key changes.
	key  string
	data []byte
	err  error
}

// scan reads every template file of dir. When dir is a Kubernetes volume
// (it has a ..data link), the files are read from the directory the link
// points to, so that one scan sees one version of the whole ConfigMap; if
// that version is removed during the scan (a newer one was swapped in), the
// scan starts again. The error is about dir itself; a file that cannot be
// read is returned with its error.
func scan(dir string) ([]fileContent, error) {
	for attempt := 1; ; attempt++ {
		files, err := scanOnce(dir)
		if errors.Is(err, errSwapped) && attempt < 5 {
			continue
		}
		return files, err
	}
}

// errSwapped is scanOnce's error when the volume's version changed under
// it.
var errSwapped = errors.New("the directory's ..data version was replaced during the scan")

func scanOnce(dir string) ([]fileContent, error) {
	base, volume := dir, false
	if target, err := filepath.EvalSymlinks(filepath.Join(dir, dataLink)); err == nil {
		if fi, err := os.Stat(target); err == nil && fi.IsDir() {
			base, volume = target, true
		}
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		if volume && errors.Is(err, fs.ErrNotExist) {
			return nil, errSwapped
		}
		return nil, err
	}
	var files []fileContent
	for _, e := range entries { // sorted by name
		name := e.Name()
		if !isTemplateFile(name) {
			continue
		}
		path := filepath.Join(base, name)
		data, err := readFile(path)
		switch {
		case err == nil:
			sum := sha256.Sum256(data)
			files = append(files, fileContent{name: name, key: hex.EncodeToString(sum[:]), data: data})
		case errors.Is(err, errNotRegular):
			// A directory or a device named like a template: not ours.
		case errors.Is(err, fs.ErrNotExist) && volume:
			return nil, errSwapped
		case errors.Is(err, fs.ErrNotExist) && !exists(path):
			// Deleted since the listing.
		default:
			files = append(files, fileContent{name: name, key: "error: " + err.Error(), err: err})
		}
	}
	return files, nil
}

var errNotRegular = errors.New("not a regular file")

// readFile reads a regular file, following symlinks. Anything else (a
// directory, a FIFO that would block the open) is errNotRegular. Errors do
// not name the path: they are shown beside the file's name.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && exists(path) {
			return nil, errors.New("cannot read the file: it is a symbolic link to nothing")
		}
		return nil, readError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, readError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, readError(err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("the file is larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}

// readError drops the path from err, keeping what went wrong, and keeps
// fs.ErrNotExist recognisable.
func readError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot read the file: %w", err)
}

// exists reports whether path names a directory entry, be it a symbolic
// link to nothing.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// rawDoc is one document of a file.
type rawDoc struct {
	// index counts the file's non-empty documents from 1.
	index int
	// line is the line of the file on which the document's content starts.
	line int
	// data is the document, preceded by as many newlines as there are
	// lines before it in the file, so that the line numbers in parse
	// errors are the file's.
	data []byte
}

// splitDocuments splits a file into its documents. A YAML file may hold
// several, kubectl-style: a line that starts with "---" followed by nothing
// but spaces or a comment separates them. Documents with nothing but
// comments and blank lines are dropped. A JSON file is one document.
func splitDocuments(name string, data []byte) []rawDoc {
	data = bytes.TrimPrefix(data, utf8BOM)
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if line := contentLine(data); line > 0 {
			return []rawDoc{{index: 1, line: line, data: data}}
		}
		return nil
	}

	var docs []rawDoc
	start, startLine := 0, 1 // the current document's first byte and line
	add := func(end int) {
		chunk := data[start:end]
		if line := contentLine(chunk); line > 0 {
			padded := make([]byte, 0, startLine-1+len(chunk))
			padded = append(padded, bytes.Repeat([]byte("\n"), startLine-1)...)
			padded = append(padded, chunk...)
			docs = append(docs, rawDoc{index: len(docs) + 1, line: startLine + line - 1, data: padded})
		}
	}
	for off, line := 0, 1; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if isSeparator(data[off:next]) {
			add(off)
			start, startLine = next, line+1
		}
		off = next
	}
	add(len(data))
	return docs
}

// isSeparator reports whether a line is a document separator as kubectl
// reads one: "---", then only spaces or a comment.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// contentLine returns the 1-based line of data's first line that is not
// blank, a comment or a YAML directive; 0 when there is none.
func contentLine(data []byte) int {
	for n, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && t[0] != '%' {
			return n + 1
		}
	}
	return 0
}

var (
	yamlKind     = regexp.MustCompile(`(?m)^kind:[ \t]*["']?([^"'\s#]+)`)
	jsonKind     = regexp.MustCompile(`"kind"\s*:\s*"([^"]*)"`)
	yamlMetadata = regexp.MustCompile(`(?m)^metadata:[ \t]*(\{[^}\n]*\})?[ \t]*(#.*)?$`)
	flowName     = regexp.MustCompile(`[{,]\s*name\s*:\s*["']?([^"',}\s]+)`)
	jsonName     = regexp.MustCompile(`"metadata"\s*:\s*\{[^{}]*?"name"\s*:\s*"([^"]*)"`)
)

// peek guesses a document's kind and metadata.name from its text, for
// naming a document that does not parse in logs and in List. It reads the
// usual layouts (kubectl's block YAML, a flow mapping `metadata: {name: x}`,
// JSON) and gives up on others with "".
func peek(data []byte) (kind, name string) {
	if m := yamlKind.FindSubmatch(data); m != nil {
		kind = string(m[1])
	} else if m := jsonKind.FindSubmatch(data); m != nil {
		kind = string(m[1])
	}
	if m := jsonName.FindSubmatch(data); m != nil {
		return kind, string(m[1])
	}
	loc := yamlMetadata.FindSubmatchIndex(data)
	if loc == nil {
		return kind, ""
	}
	if loc[2] >= 0 { // metadata: {name: x, ...}
		if m := flowName.FindSubmatch(data[loc[2]:loc[3]]); m != nil {
			return kind, string(m[1])
		}
		return kind, ""
	}
	// Block style: name is a child of metadata at the children's indent.
	indent := -1
	for _, line := range strings.Split(string(data[loc[1]:]), "\n")[1:] {
		t := strings.TrimLeft(line, " ")
		if t == "" || t[0] == '#' {
			continue
		}
		n := len(line) - len(t)
		if n == 0 {
			break
		}
		if indent < 0 {
			indent = n
		}
		if n != indent {
			continue
		}
		if v, ok := strings.CutPrefix(t, "name:"); ok {
			v, _, _ = strings.Cut(v, " #")
			return kind, strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return kind, ""
}
