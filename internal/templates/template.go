package templates

import (
	"time"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/redact"
	"github.com/canaryd/canaryd/internal/spec"
)

// The statuses of an Info.
const (
	// StatusOK is a template served from the current content of its file.
	StatusOK = "ok"
	// StatusStale is a template served from the last good version of a
	// file whose current content does not load; Errors says why.
	StatusStale = "stale"
	// StatusError is a document that does not load and has no last good
	// version that could stand in for it, or a template whose name an
	// earlier file already holds. Nothing is served for it.
	StatusError = "error"
)

// Template is one named template that the store serves. A Template is
// shared by every caller of Get and must not be modified, its Document
// included.
type Template struct {
	// Name is the document's metadata.name, the name it is served by.
	Name string
	// Kind is AnalysisTemplate or ClusterAnalysisTemplate.
	Kind string
	// File is the name of the file in the templates directory that the
	// template comes from.
	File string
	// Line is the line of File on which the template's document starts.
	Line int
	// Document is the parsed template, its arguments unresolved: run it
	// with compile.Compile(Document, args, providers).
	Document *spec.Document
	// LoadedAt is when this version of the file was read.
	LoadedAt time.Time
	// Args are the template's arguments, in the order they are declared.
	Args []Arg

	// providers are the store's, which declare the credentials View masks.
	providers compile.Providers
}

// Arg describes one argument of a template: what a caller may or must
// supply as {"args": {NAME: VALUE}} or arg.NAME=VALUE.
type Arg struct {
	Name string `json:"name"`
	// Value is the default value, nil when there is none. The values of
	// arguments that hold secrets (see compile.IsSecretArg) read "*****".
	Value *string `json:"value,omitempty"`
	// Required is true when the caller must supply the argument: it has no
	// value, or only a valueFrom, which canaryd cannot read outside
	// Kubernetes.
	Required bool `json:"required"`
}

// Info is one entry of List, the body of GET /v1/templates: a template
// that is served (status ok or stale), or a document that could not be
// loaded (status error).
type Info struct {
	// Name is the template's metadata.name. For a document too broken to
	// parse it is a best guess from the text, or "".
	Name string `json:"name"`
	// Kind is AnalysisTemplate or ClusterAnalysisTemplate ("" when it
	// cannot be told).
	Kind string `json:"kind,omitempty"`
	// File is the file's name in the templates directory.
	File string `json:"file"`
	// Line is the line of File on which the document starts; for a stale
	// template, in the version that is served. 0 when the whole file is at
	// fault (it cannot be read).
	Line int `json:"line,omitempty"`
	// Status is StatusOK, StatusStale or StatusError.
	Status string `json:"status"`
	// Errors lists every problem of the current content: of the document
	// for status error, of the whole file for status stale. Field paths
	// are relative to the document's spec, as in every canaryd error; in a
	// file of several documents each message starts with the document it
	// is about.
	Errors []api.FieldError `json:"errors,omitempty"`
	// LoadedAt is when the served version was read; absent for status
	// error.
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// Args are the served template's arguments.
	Args []Arg `json:"args,omitempty"`
}

// MissingArgs returns the names of the template's required arguments that
// supplied does not give, in declaration order: the arguments a request
// must be refused for (400, naming each).
func (t *Template) MissingArgs(supplied map[string]string) []string {
	var missing []string
	for _, a := range t.Args {
		if _, ok := supplied[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	return missing
}

// templateArgs lists a spec's arguments once each, with Argo's merging of a
// name declared twice (see spec.Resolve): the first declaration that gives a
// value gives it, and a valueFrom gives none.
func templateArgs(s *spec.Spec) []Arg {
	var out []Arg
	index := map[string]int{}
	for _, a := range s.Args {
		i, seen := index[a.Name]
		if !seen {
			i = len(out)
			index[a.Name] = i
			out = append(out, Arg{Name: a.Name, Required: true})
		}
		if a.ValueFrom != nil || a.Value == nil || !out[i].Required {
			continue
		}
		v := *a.Value
		if compile.IsSecretArg(a.Name) {
			v = redact.Mask
		}
		out[i].Value, out[i].Required = &v, false
	}
	return out
}
