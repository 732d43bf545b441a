package templates

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/spec"
)

// Checked is one document as CheckFile or CheckDir found it: a template
// that Load would serve, a document that would not load (Errors), or one
// of another kind that Load would skip.
type Checked struct {
	// File is the file's name: as given to CheckFile, or its name in the
	// directory for CheckDir.
	File string
	// Line is the line of File on which the document starts; 0 when the
	// whole file is at fault (it cannot be read).
	Line int
	// Kind and Name are the document's, as far as they can be told.
	Kind, Name string
	// Template is the template as Load would serve it; nil when the
	// document does not load or is skipped.
	Template *Template
	// Skipped is set for a document of another kind (an AnalysisRun, a
	// Rollout), which Load skips.
	Skipped bool
	// Errors are the problems of a document that does not load, with
	// their fields relative to the document's spec, as List gives them,
	// and each with the line of File its field is on (Line, 0 when not
	// told).
	Errors []api.FieldError
}

// CheckOptions configure CheckFile and CheckDir.
type CheckOptions struct {
	// Check is Options.Check: the further checks of a template.
	Check func(doc *spec.Document) []api.FieldError
	// Providers is Options.Providers. Required: CheckFile panics without.
	Providers compile.Providers
	// Args are argument values, as a request would give them: an argument
	// that a document declares and Args names is checked with this value
	// rather than a placeholder. Names a document does not declare are
	// ignored for it.
	Args map[string]string
}

// CheckFile checks one file's content exactly as Load checks each file of
// its directory (see the package documentation): split into documents,
// each parsed, validated and handed to o.Check, a name given twice in the
// file an error on the later document. name is the file's name; its
// extension tells a JSON file (one document) from YAML. The documents are
// returned in the order of the file. Nothing is logged.
func CheckFile(name string, data []byte, o CheckOptions) []Checked {
	if o.Providers == nil {
		panic("templates: CheckOptions.Providers is required")
	}
	s := &Store{check: o.Check, providers: o.Providers, log: zap.NewNop(), args: o.Args}
	v := &version{loadedAt: time.Now()}
	s.loadDocuments(name, data, v)
	out := checked(name, v)
	// The lines of the problems' fields, from each document's tree of
	// nodes: the file's lines, as the documents are padded to them.
	var docs map[int]rawDoc
	for i := range out {
		if len(out[i].Errors) == 0 {
			continue
		}
		if docs == nil {
			docs = map[int]rawDoc{}
			for _, d := range splitDocuments(name, data) {
				docs[d.line] = d
			}
		}
		d, ok := docs[out[i].Line]
		if !ok {
			continue
		}
		tree := spec.NodeTree(d.data)
		out[i].Errors = slices.Clone(out[i].Errors)
		for j := range out[i].Errors {
			out[i].Errors[j].Line = spec.FieldLine(tree, out[i].Errors[j].Field)
		}
	}
	return out
}

// CheckDir checks the files of dir that Load would read, as Load would:
// CheckFile for each, in name order, and a template whose name an earlier
// file already holds is an error, as List shows it. A file that cannot be
// read is one entry with its error. The error is about dir itself.
func CheckDir(dir string, o CheckOptions) ([]Checked, error) {
	files, err := scan(dir)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	var out []Checked
	held := map[string]*Template{}
	for _, f := range files {
		if f.err != nil {
			out = append(out, Checked{File: f.name, Errors: []api.FieldError{{Field: "body", Message: f.err.Error()}}})
			continue
		}
		for _, c := range CheckFile(f.name, f.data, o) {
			if t := c.Template; t != nil {
				if owner, taken := held[t.Name]; taken {
					c.Template = nil
					c.Errors = []api.FieldError{{Field: "metadata.name", Message: fmt.Sprintf(
						"template %q is already defined in %s (line %d): names must be unique across files, and the file first in name order keeps the name",
						t.Name, owner.File, owner.Line)}}
				} else {
					held[t.Name] = t
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func checked(file string, v *version) []Checked {
	var out []Checked
	for _, t := range v.templates {
		out = append(out, Checked{File: file, Line: t.Line, Kind: t.Kind, Name: t.Name, Template: t})
	}
	for _, b := range v.broken {
		out = append(out, Checked{File: file, Line: b.line, Kind: b.kind, Name: b.name, Errors: b.errors})
	}
	for _, b := range v.skipped {
		out = append(out, Checked{File: file, Line: b.line, Kind: b.kind, Skipped: true})
	}
	slices.SortStableFunc(out, func(a, b Checked) int { return a.Line - b.Line })
	return out
}

// withValues returns doc with the arguments that args names given those
// values (and no valueFrom), as a request's values would be; doc itself
// when args names none of them. The copy shares all but its arguments
// with doc.
func withValues(doc *spec.Document, args map[string]string) *spec.Document {
	if len(args) == 0 || !slices.ContainsFunc(doc.Spec.Args, func(a spec.Argument) bool { _, ok := args[a.Name]; return ok }) {
		return doc
	}
	out := *doc
	out.Spec.Args = make([]spec.Argument, len(doc.Spec.Args))
	for i, a := range doc.Spec.Args {
		if v, ok := args[a.Name]; ok {
			a.Value, a.ValueFrom = &v, nil
		}
		out.Spec.Args[i] = a
	}
	return &out
}
