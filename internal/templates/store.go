package templates

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/spec"
)

// DefaultPollInterval is how often Run looks for changes when
// Options.PollInterval is not set. An update of a mounted ConfigMap takes
// the kubelet up to a minute or so to land, so a few seconds more do not
// matter, and reading a handful of small files that often costs nothing.
const DefaultPollInterval = 5 * time.Second

// Options configure a Store.
type Options struct {
	// Dir is the templates directory (--templates). Only its top level is
	// read: *.yaml, *.yml and *.json files (or symbolic links to them),
	// dot-entries skipped.
	Dir string
	// Check validates a parsed template further than the store does on its
	// own (parse, compile.Compile without providers, the name). The server
	// passes a func that runs compile.Compile(doc, nil, providers) with its
	// providers, so that a provider it does not run, or an address outside
	// an allow-list, is reported at load. The document Check is given carries a placeholder
	// value for every argument that callers supply per request; problems
	// on fields that use one are dropped afterwards (see the package
	// documentation), so Check needs no special care. Check must not
	// modify the document. nil: no further checks.
	Check func(doc *spec.Document) []api.FieldError
	// Providers are the service's providers (its one registry, assembled
	// in cmd/canaryd): each template's provider configurations are
	// decoded and checked by their providers, and their query fields
	// read in the languages the providers declare. A provider name they
	// do not know is left to Check. Required.
	Providers compile.Providers
	// Logger receives a line for every change: files loaded, broken,
	// removed, documents skipped. nil: no logs.
	Logger *zap.Logger
	// Registerer registers the store's metrics: canaryd_templates_loaded
	// (gauge), canaryd_template_files_broken (gauge),
	// canaryd_template_load_errors_total{file} and
	// canaryd_templates_reloads_total. nil: not registered.
	Registerer prometheus.Registerer
	// PollInterval is how often Run looks for changes;
	// DefaultPollInterval when zero or negative.
	PollInterval time.Duration
}

// Store holds the named templates of a directory and keeps them current.
// Its methods are safe for concurrent use: Get and List read an immutable
// snapshot that a reload replaces whole, so they never wait for a reload
// and never see half of one.
type Store struct {
	dir       string
	check     func(*spec.Document) []api.FieldError
	providers compile.Providers
	log       *zap.Logger
	poll      time.Duration
	m         *metrics
	// args are values that stand in for placeholders (CheckFile's
	// Options.Args); nil for a store that Load made.
	args map[string]string

	// mu serialises reloads and guards the fields below it.
	mu     sync.Mutex
	files  map[string]*fileState
	dirErr string // the last directory error logged, so that each is logged once

	state atomic.Pointer[snapshot]
}

// snapshot is what Get and List read. It is never modified once published.
type snapshot struct {
	byName map[string]*Template
	infos  []Info
	// conflicts holds file+"\x00"+name for each template refused because
	// an earlier file has its name, so that each is logged and counted
	// once.
	conflicts map[string]bool
}

// fileState is what the store knows of one file.
type fileState struct {
	key     string   // the current content's key (see fileContent)
	current *version // the current content, loaded
	good    *version // the last version without problems; nil if none
}

// version is one content of a file, loaded.
type version struct {
	loadedAt  time.Time
	docs      int // documents in the file, skipped ones included
	templates []*Template
	broken    []brokenDoc
	skipped   []brokenDoc // documents of other kinds: index, line and kind
}

// brokenDoc is a document that did not load.
type brokenDoc struct {
	index, line int // 0 for a file that cannot be read
	name, kind  string
	errors      []api.FieldError
}

// Load reads the templates directory and returns a store serving its
// templates. A file that does not load is not an error here: it is logged,
// counted and shown by List, and the store serves the others. A missing or
// unreadable directory is an error, and so is a registerer that already
// holds the store's metrics.
//
// Load does not watch the directory: call Run to poll it and Reload on
// SIGHUP.
func Load(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, errors.New("templates: no directory given")
	}
	if o.Providers == nil {
		return nil, errors.New("templates: no providers given")
	}
	fi, err := os.Stat(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("templates: %s is not a directory", o.Dir)
	}
	s := &Store{
		dir:       o.Dir,
		check:     o.Check,
		providers: o.Providers,
		log:       o.Logger,
		poll:      o.PollInterval,
		m:         newMetrics(),
		files:     map[string]*fileState{},
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	// Registered once loaded, so that a failed Load leaves the registerer
	// as it was.
	if err := s.m.register(o.Registerer); err != nil {
		return nil, err
	}
	return s, nil
}

// Get returns the template served under name: the current version of its
// file, or the last good one when the file has since broken (see List for
// which). The Template must not be modified.
func (s *Store) Get(name string) (*Template, bool) {
	t, ok := s.state.Load().byName[name]
	return t, ok
}

// List returns every template served and every document that does not load,
// sorted by name, then file and line. The slice is the caller's.
func (s *Store) List() []Info {
	infos := s.state.Load().infos
	out := make([]Info, len(infos))
	for i, in := range infos {
		in.Errors = slices.Clone(in.Errors)
		in.Args = cloneArgs(in.Args)
		out[i] = in
	}
	return out
}

// Reload scans the directory now and loads every file whose content has
// changed since the last scan (by SHA-256 of the content: in a ConfigMap
// volume neither the links' names nor their mtimes change). The server's
// SIGHUP handler calls it; Run calls it on every tick. Calls are
// serialised.
//
// The error is about the directory itself (gone, unreadable); the templates
// then stay as they were. Problems with files are not errors of Reload:
// they are logged, counted and shown by List.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()

	found, err := scan(s.dir)
	if err != nil {
		err = fmt.Errorf("templates: %w", err)
		if msg := err.Error(); msg != s.dirErr {
			s.log.Error("cannot read the templates directory; the templates loaded before are still served", zap.String("dir", s.dir), zap.Error(err))
			s.dirErr = msg
		}
		return err
	}
	if s.dirErr != "" {
		s.log.Info("the templates directory can be read again", zap.String("dir", s.dir))
		s.dirErr = ""
	}

	now := time.Now()
	changed := s.state.Load() == nil
	next := make(map[string]*fileState, len(found))
	for _, f := range found {
		prev := s.files[f.name]
		if prev != nil && prev.key == f.key {
			next[f.name] = prev
			continue
		}
		changed = true
		next[f.name] = s.loadFile(f, prev, now)
	}
	for name, prev := range s.files {
		if _, ok := next[name]; !ok {
			changed = true
			var served []string
			if prev.good != nil {
				served = templateNames(prev.good.templates)
			}
			s.log.Info("template file removed", zap.String("file", name), zap.Strings("templates", served))
		}
	}
	if !changed {
		return nil
	}
	s.files = next
	s.publish()
	s.m.reloads.Inc()
	return nil
}

// Run polls the directory every PollInterval, reloading what changed,
// until ctx is done; then it returns. The caller's context, the server's
// lifetime, is what ends it. A poll that cannot read the directory keeps
// the templates as they were and is logged once per distinct error.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.Reload() // logged by Reload
		}
	}
}

// loadFile loads one file's new content. prev is what the store knew of the
// file before, nil for a new file.
func (s *Store) loadFile(f fileContent, prev *fileState, now time.Time) *fileState {
	v := &version{loadedAt: now}
	if f.err != nil {
		v.broken = []brokenDoc{{errors: []api.FieldError{{Field: "body", Message: f.err.Error()}}}}
	} else {
		s.loadDocuments(f.name, f.data, v)
	}
	st := &fileState{key: f.key, current: v}
	log := s.log.With(zap.String("file", f.name))
	// The series exists from 0, so that increase() sees the first error.
	errs := s.m.loadErrors.WithLabelValues(f.name)
	if len(v.broken) == 0 {
		st.good = v
		log.Info("templates loaded", zap.Strings("templates", templateNames(v.templates)))
		return st
	}

	errs.Inc()
	if prev != nil {
		st.good = prev.good
	}
	problems := zap.Strings("errors", formatErrors(fileErrors(v)))
	if st.good != nil && len(st.good.templates) > 0 {
		log.Warn("template file does not load; its last good version is still served",
			problems, zap.Strings("templates", templateNames(st.good.templates)), zap.Time("lastGoodLoadedAt", st.good.loadedAt))
	} else {
		log.Warn("template file does not load", problems, zap.Strings("templatesLoaded", templateNames(v.templates)))
	}
	return st
}

// loadDocuments loads each document of a file into v. Documents of other
// kinds are skipped; a name defined twice in the file is an error on the
// second document.
func (s *Store) loadDocuments(file string, data []byte, v *version) {
	docs := splitDocuments(file, data)
	v.docs = len(docs)
	if len(docs) == 0 {
		s.log.Info("template file holds no documents", zap.String("file", file))
	}
	lines := map[string]int{}
	for _, d := range docs {
		t, bad, skipped := s.loadDocument(file, d, v.loadedAt)
		switch {
		case skipped != "":
			v.skipped = append(v.skipped, brokenDoc{index: d.index, line: d.line, kind: skipped})
			s.log.Info("skipping a document that is not an AnalysisTemplate or ClusterAnalysisTemplate",
				zap.String("file", file), zap.Int("line", d.line), zap.String("kind", skipped))
		case bad != nil:
			v.broken = append(v.broken, *bad)
		default:
			if line, dup := lines[t.Name]; dup {
				v.broken = append(v.broken, brokenDoc{index: d.index, line: d.line, name: t.Name, kind: t.Kind, errors: []api.FieldError{{
					Field:   "metadata.name",
					Message: fmt.Sprintf("template %q is already defined on line %d of this file", t.Name, line),
				}}})
				continue
			}
			lines[t.Name] = t.Line
			v.templates = append(v.templates, t)
		}
	}
}

// loadDocument loads one document: a template, a broken document, or the
// kind of a document that is skipped.
func (s *Store) loadDocument(file string, d rawDoc, now time.Time) (t *Template, bad *brokenDoc, skipped string) {
	broken := func(name, kind string, errs []api.FieldError) (*Template, *brokenDoc, string) {
		return nil, &brokenDoc{index: d.index, line: d.line, name: name, kind: kind, errors: errs}, ""
	}
	// A document whose only problems are unknown fields is still returned,
	// and checked further, so that a typo and a bad condition are listed
	// together (as compile.ParseAndCompile does).
	doc, in, errs := spec.ParseInput(d.data)
	if doc == nil {
		kind, name := peek(d.data)
		if kind == "List" {
			// What `kubectl get analysistemplates -o yaml` prints: the
			// templates are in it, and skipping it would hide them.
			return broken("", kind, []api.FieldError{{Field: "kind", Message: "a kind: List is not read: " +
				"write each of its items as a document of its own, separated by --- lines (kubectl get -o yaml NAME prints one)"}})
		}
		if otherKind(errs) {
			return nil, nil, cmp.Or(kind, "unknown")
		}
		return broken(name, kind, append(errs, compile.ShapeProblems(in, checkProviders{s.providers})...))
	}
	switch doc.Kind {
	case spec.KindAnalysisTemplate, spec.KindClusterAnalysisTemplate:
	case "":
		return broken("", "", append([]api.FieldError{{Field: "kind", Message: "a bare spec cannot be a named template: give it apiVersion " +
			spec.APIVersion + ", kind " + spec.KindAnalysisTemplate + " or " + spec.KindClusterAnalysisTemplate + ", and metadata.name"}}, errs...))
	default: // an AnalysisRun
		// A typo in a provider's configuration is found by compiling
		// (its provider decodes it): it keeps the run from being
		// skipped silently too.
		for _, e := range checkDocument(withValues(doc, s.args), s.providers, nil) {
			if e.Message == "unknown field" {
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 {
			return broken(doc.Metadata.Name, doc.Kind, errs)
		}
		return nil, nil, doc.Kind
	}
	problems := errs
	if e := checkName(doc.Metadata.Name); e != nil {
		problems = append(problems, *e)
	}
	problems = append(problems, checkDocument(withValues(doc, s.args), s.providers, s.check)...)
	if len(problems) > 0 {
		return broken(doc.Metadata.Name, doc.Kind, problems)
	}
	return &Template{
		Name:     doc.Metadata.Name,
		Kind:     doc.Kind,
		File:     file,
		Line:     d.line,
		Document: doc,
		LoadedAt: now,
		Args:     templateArgs(&doc.Spec),

		providers: s.providers,
	}, nil, ""
}

// otherKind reports whether spec.Parse refused a document only for being
// of a kind canaryd does not run (a Rollout, a ConfigMap): its only
// problems are its apiVersion and kind, and the kind is named but not
// accepted.
func otherKind(errs []api.FieldError) bool {
	unsupported := false
	for _, e := range errs {
		switch {
		case e.Field == "kind" && strings.HasPrefix(e.Message, "unsupported kind"):
			unsupported = true
		case e.Field == "apiVersion":
		default:
			return false
		}
	}
	return unsupported
}

// publish builds the snapshot of s.files and makes it the one Get and List
// read. Files are taken in name order, so that when two of them define the
// same name, the first one keeps it, whatever order they were loaded in.
func (s *Store) publish() {
	prev := s.state.Load()
	next := &snapshot{byName: map[string]*Template{}, conflicts: map[string]bool{}}
	files := make([]string, 0, len(s.files))
	for name := range s.files {
		files = append(files, name)
	}
	slices.Sort(files)

	brokenFiles := 0
	for _, file := range files {
		st := s.files[file]
		cur := st.current
		served, status := cur.templates, StatusOK
		var staleErrors []api.FieldError
		errorDocs := cur.broken
		if len(cur.broken) > 0 && st.good != nil && len(st.good.templates) > 0 {
			// The last good version stands in for the whole file. The
			// errors are shown on each of its templates; a broken document
			// gets an entry of its own only under a name of its own.
			served, status, staleErrors = st.good.templates, StatusStale, fileErrors(cur)
			errorDocs = nil
			for _, b := range cur.broken {
				if b.name != "" && !slices.ContainsFunc(served, func(t *Template) bool { return t.Name == b.name }) {
					errorDocs = append(errorDocs, b)
				}
			}
		}
		problem := len(cur.broken) > 0
		for _, t := range served {
			if owner, taken := next.byName[t.Name]; taken {
				problem = true
				msg := fmt.Sprintf("template %q is already defined in %s (line %d): names must be unique across files, and the file first in name order keeps the name",
					t.Name, owner.File, owner.Line)
				key := file + "\x00" + t.Name
				next.conflicts[key] = true
				if prev == nil || !prev.conflicts[key] {
					s.m.loadErrors.WithLabelValues(file).Inc()
					s.log.Warn("template name already taken; this file's template is not served",
						zap.String("file", file), zap.Int("line", t.Line), zap.String("template", t.Name), zap.String("servedFrom", owner.File))
				}
				next.infos = append(next.infos, Info{Name: t.Name, Kind: t.Kind, File: file, Line: t.Line, Status: StatusError,
					Errors: []api.FieldError{{Field: "metadata.name", Message: msg}}})
				continue
			}
			next.byName[t.Name] = t
			next.infos = append(next.infos, Info{Name: t.Name, Kind: t.Kind, File: file, Line: t.Line, Status: status,
				Errors: staleErrors, LoadedAt: t.LoadedAt, Args: t.Args})
		}
		for _, b := range errorDocs {
			next.infos = append(next.infos, Info{Name: b.name, Kind: b.kind, File: file, Line: b.line, Status: StatusError, Errors: b.errors})
		}
		if problem {
			brokenFiles++
		}
	}
	slices.SortFunc(next.infos, func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	s.m.loaded.Set(float64(len(next.byName)))
	s.m.broken.Set(float64(brokenFiles))
	s.state.Store(next)
}

// fileErrors lists the problems of every broken document of v. In a file of
// several documents, each message names its document.
func fileErrors(v *version) []api.FieldError {
	var out []api.FieldError
	for _, b := range v.broken {
		for _, e := range b.errors {
			if v.docs > 1 && b.index > 0 {
				e.Message = fmt.Sprintf("document %d (line %d): %s", b.index, b.line, e.Message)
			}
			out = append(out, e)
		}
	}
	return out
}

func formatErrors(errs []api.FieldError) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Field + ": " + e.Message
	}
	return out
}

func templateNames(ts []*Template) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

func cloneArgs(args []Arg) []Arg {
	if args == nil {
		return nil
	}
	out := make([]Arg, len(args))
	for i, a := range args {
		if a.Value != nil {
			v := *a.Value
			a.Value = &v
		}
		out[i] = a
	}
	return out
}
