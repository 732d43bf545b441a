package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/condition"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/spec"
)

// checkDocument validates a template as far as it can be without the
// arguments that callers supply per request, as the package documentation
// describes ("Validation at load"): placeholders for those arguments
// (spec.Placeholder, substituted as they are), and only the problems that
// the placeholders cannot have caused. A PromQL field is parsed with each
// placeholder as a name and as a number (lang.IsParseProblem), so a query
// that does not parse is refused whatever it uses. check, when set, runs
// after compile.Compile on the same placeholder-filled document.
func checkDocument(doc *spec.Document, providers compile.Providers, check func(*spec.Document) []api.FieldError) []api.FieldError {
	filled, placeholders := withPlaceholders(doc)
	// Compile resolves the arguments and goes on past the problems of
	// resolution, so that they are listed with the others.
	_, errs := compile.Compile(filled, nil, checkProviders{providers})
	if check != nil {
		errs = append(errs, check(filled)...)
	}
	if len(placeholders) == 0 {
		return dedupe(errs)
	}
	// The problems of resolution are no placeholder's doing; Compile may
	// have said more of them (which fields wait), so they are known by
	// their field and the start of their message.
	_, resolution := filled.Spec.Resolve(nil, spec.ResolveOptions{SecretArg: compile.IsSecretArg, Conditions: condition.Expr, Continue: true})
	resolved := func(e api.FieldError) bool {
		return slices.ContainsFunc(resolution, func(r api.FieldError) bool {
			return r.Field == e.Field && strings.HasPrefix(e.Message, strings.SplitN(r.Message, "; ", 2)[0])
		})
	}
	deps := dependentFields(&doc.Spec, placeholders)
	var out []api.FieldError
	for _, e := range dedupe(errs) {
		if !relatedToAny(e.Field, deps) || lang.IsParseProblem(e.Message) || resolved(e) {
			out = append(out, e)
		}
	}
	return out
}

// checkProviders are the service's providers as the check sees them: each
// checks its own configurations (their shape, their rules) and declares
// which of their fields are queries, and a provider name they do not know
// is accepted, building nothing. Whether this canaryd runs a provider is
// the Check callback's business.
type checkProviders struct {
	compile.Providers
}

func (c checkProviders) Lookup(name string) (provider.Provider, bool) {
	if p, ok := c.Providers.Lookup(name); ok {
		return p, true
	}
	return provider.Func(func(json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) { return nil, nil, nil }), true
}

// withPlaceholders returns a copy of doc whose arguments without a value of
// their own carry a placeholder, substituted as it is, and the names of
// those arguments. The copy shares everything but its arguments with doc.
func withPlaceholders(doc *spec.Document) (*spec.Document, map[string]bool) {
	valued := map[string]bool{}
	for _, a := range doc.Spec.Args {
		if a.Value != nil && a.ValueFrom == nil {
			valued[a.Name] = true
		}
	}
	filled := *doc
	filled.Spec.Args = make([]spec.Argument, len(doc.Spec.Args))
	placeholders := map[string]bool{}
	for i, a := range doc.Spec.Args {
		if !valued[a.Name] {
			v := spec.Placeholder(a.Name)
			// Substituted as it is (freeText), so that the placeholder
			// makes the fields that use it invalid rather than being
			// refused itself where a caller's value will be checked.
			a.Value, a.ValueFrom, a.FreeText = &v, nil, true
			placeholders[a.Name] = true
		}
		filled.Spec.Args[i] = a
	}
	return &filled, placeholders
}

// dependentFields lists the paths (as spec errors spell them:
// "metrics[0].provider.prometheus.query") of the fields whose text uses one
// of the named arguments.
func dependentFields(s *spec.Spec, args map[string]bool) []string {
	var deps []string
	names := false
	for i := range s.Metrics {
		path := fmt.Sprintf("metrics[%d]", i)
		tree, err := jsonTree(&s.Metrics[i])
		if err != nil {
			deps = append(deps, path) // cannot happen; be safe: the whole metric
			continue
		}
		walkStrings(tree, path, func(p, text string) {
			if usesArg(text, args) {
				deps = append(deps, p)
				if p == path+".name" {
					names = true
				}
			}
		})
	}
	if names {
		deps = append(deps, "dryRun", "measurementRetention")
	}
	return deps
}

func jsonTree(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	err = dec.Decode(&tree)
	return tree, err
}

func walkStrings(v any, path string, visit func(path, text string)) {
	switch x := v.(type) {
	case string:
		visit(path, x)
	case map[string]any:
		for k, e := range x {
			walkStrings(e, path+"."+k, visit)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), visit)
		}
	}
}

// usesArg reports whether text has a tag {{args.NAME}} (spaces allowed
// inside the braces, as spec.Resolve reads it) for one of the names.
func usesArg(text string, names map[string]bool) bool {
	for {
		_, rest, ok := strings.Cut(text, "{{")
		if !ok {
			return false
		}
		tag, after, ok := strings.Cut(rest, "}}")
		if !ok {
			return false
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(tag), "args."); ok && names[name] {
			return true
		}
		text = after
	}
}

// relatedToAny reports whether field is one of paths, or contains or is
// contained in one of them.
func relatedToAny(field string, paths []string) bool {
	for _, p := range paths {
		if field == p || within(field, p) || within(p, field) {
			return true
		}
	}
	return false
}

// within reports whether path is a part of parent: "metrics[0].count" is
// within "metrics[0]" and "metrics", not within "metrics[0].co".
func within(path, parent string) bool {
	if parent == "" {
		return true
	}
	if len(path) <= len(parent) || !strings.HasPrefix(path, parent) {
		return false
	}
	c := path[len(parent)]
	return c == '.' || c == '['
}

func dedupe(errs []api.FieldError) []api.FieldError {
	seen := make(map[api.FieldError]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// templateName is a Kubernetes object name (a DNS-1123 subdomain), which
// every AnalysisTemplate has and which is safe in a URL path.
var templateName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// checkName returns the problem with a template's name, if any.
func checkName(name string) *api.FieldError {
	switch {
	case name == "":
		return &api.FieldError{Field: "metadata.name", Message: "metadata.name must be specified: a named template is served by its name"}
	case len(name) > 253 || !templateName.MatchString(name):
		return &api.FieldError{Field: "metadata.name", Message: fmt.Sprintf(
			"metadata.name %q is not a Kubernetes object name (lower-case letters, digits, '-' and '.', at most 253 characters)", name)}
	}
	return nil
}
