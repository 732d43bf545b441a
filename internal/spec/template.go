package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
)

// Template delimiters, as in Argo Rollouts (valyala/fasttemplate).
const (
	openTag  = "{{"
	closeTag = "}}"
	argsTag  = "args."
)

// Resolve returns a copy of the spec with its arguments substituted into
// every string field of every metric, as Argo Rollouts does: `{{args.NAME}}`
// and `{{ args.NAME }}` are the same tag, names may contain dashes, and a
// value may hold quotes and newlines. Counts and limits given as strings
// ("{{args.count}}") are substituted too; Validate checks that they are then
// integers. The copy's Args carry the values used.
//
// overrides (from --arg NAME=VALUE, arg.NAME query parameters or a request
// body's args) replace the spec's values. It is an error to
//   - override an argument the spec does not declare ("args.NAME"): a typo
//     must not be silently ignored;
//   - leave an argument without a value: `argument "NAME" was not supplied`;
//   - rely on valueFrom (secretKeyRef, fieldRef), which only a controller
//     inside Kubernetes can read, unless an override supplies the value;
//   - use any tag other than a declared argument: `failed to resolve {{tag}}`.
//
// Every problem is reported, each on the field it is in
// ("metrics[0].provider.prometheus.query"). On error the spec is nil.
func (s *Spec) Resolve(overrides map[string]string) (*Spec, []api.FieldError) {
	args, values, errs := s.mergeArgs(overrides)

	lookup := func(tag string) (string, bool) {
		name, ok := strings.CutPrefix(tag, argsTag)
		if !ok {
			return "", false
		}
		if v, ok := values[name]; ok {
			if v == nil {
				// Declared without a value: already reported once.
				return "", true
			}
			return *v, true
		}
		return "", false
	}

	out := &Spec{
		Args:                 args,
		DryRun:               slices.Clone(s.DryRun),
		MeasurementRetention: slices.Clone(s.MeasurementRetention),
		Scoring:              s.Scoring.clone(),
	}
	if s.Metrics != nil {
		out.Metrics = make([]Metric, len(s.Metrics))
	}
	for i := range s.Metrics {
		m, merrs := resolveMetric(&s.Metrics[i], indexPath("metrics", i), lookup)
		errs = append(errs, merrs...)
		if m != nil {
			out.Metrics[i] = *m
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// notUTF8 says why an argument's value is refused: it is substituted into
// a JSON document (as Argo does), where invalid bytes would silently become
// U+FFFD and the query would ask for something the caller did not send.
const notUTF8 = "the value is not valid UTF-8; send text (percent-encode it in a query string)"

// mergeArgs merges the spec's arguments with the overrides. values maps
// every declared name to its value, nil when it has none. args is a copy of
// s.Args carrying those values.
func (s *Spec) mergeArgs(overrides map[string]string) (args []Argument, values map[string]*string, errs []api.FieldError) {
	values = make(map[string]*string, len(s.Args))
	for _, a := range s.Args {
		values[a.Name] = nil
	}

	var undeclared []string
	for name := range overrides {
		if _, ok := values[name]; !ok {
			undeclared = append(undeclared, name)
		}
	}
	slices.Sort(undeclared)
	for _, name := range undeclared {
		errs = append(errs, api.FieldError{Field: "args." + name, Message: fmt.Sprintf(
			"argument %q is not declared by the spec (%s)", name, declaredList(s.Args))})
	}

	// The value of each argument, in order. A name declared twice is fine
	// if the values agree, and a later value fills a missing one, as in
	// Argo's flattenArgs.
	args = make([]Argument, len(s.Args))
	refused := map[string]bool{} // values refused, already reported
	for i, a := range s.Args {
		args[i] = copyArgument(a)
		var v *string
		if o, ok := overrides[a.Name]; ok {
			v = &o
			if !utf8.ValidString(o) {
				errs = append(errs, api.FieldError{Field: "args." + a.Name, Message: notUTF8})
				v, refused[a.Name] = nil, true
			}
		} else if a.ValueFrom == nil {
			v = a.Value
			if v != nil && !utf8.ValidString(*v) {
				errs = append(errs, api.FieldError{Field: indexPath("args", i) + ".value", Message: notUTF8})
				v, refused[a.Name] = nil, true
			}
		}
		switch prev := values[a.Name]; {
		case v == nil:
		case prev == nil:
			values[a.Name] = v
		case *prev != *v:
			errs = append(errs, api.FieldError{Field: indexPath("args", i) + ".value", Message: fmt.Sprintf(
				"Argument `%s` specified multiple times with different values: '%s', '%s'", a.Name, *prev, *v)})
		}
	}

	// Arguments left without a value, each reported once: on its valueFrom
	// if it has one, else where it is first declared.
	reported := refused
	for i, a := range s.Args {
		if values[a.Name] != nil || reported[a.Name] {
			continue
		}
		reported[a.Name] = true
		if j := slices.IndexFunc(s.Args, func(b Argument) bool { return b.Name == a.Name && b.ValueFrom != nil }); j >= 0 {
			errs = append(errs, api.FieldError{Field: indexPath("args", j) + ".valueFrom", Message: valueFromMessage(s.Args[j])})
			continue
		}
		errs = append(errs, api.FieldError{Field: indexPath("args", i) + ".value", Message: fmt.Sprintf(
			"argument %q was not supplied", a.Name)})
	}

	for i := range args {
		if v := values[args[i].Name]; v != nil {
			val := *v
			args[i].Value = &val
		}
	}
	return args, values, errs
}

// valueFromMessage explains why a's valueFrom cannot give it a value.
func valueFromMessage(a Argument) string {
	supply := fmt.Sprintf("supply the value with --arg %[1]s=VALUE, the query parameter arg.%[1]s=VALUE or the request body's args", a.Name)
	switch {
	case a.ValueFrom == nil:
		return ""
	case a.ValueFrom.SecretKeyRef != nil:
		return fmt.Sprintf("argument %q: valueFrom.secretKeyRef (Secret %q, key %q) is Kubernetes-only and canaryd runs outside the cluster; %s",
			a.Name, a.ValueFrom.SecretKeyRef.Name, a.ValueFrom.SecretKeyRef.Key, supply)
	case a.ValueFrom.FieldRef != nil:
		return fmt.Sprintf("argument %q: valueFrom.fieldRef (%q) reads a Rollout, which is Kubernetes-only and canaryd runs outside the cluster; %s",
			a.Name, a.ValueFrom.FieldRef.FieldPath, supply)
	}
	return fmt.Sprintf("argument %q was not supplied: its valueFrom names no source; %s", a.Name, supply)
}

func declaredList(args []Argument) string {
	if len(args) == 0 {
		return "it declares no arguments"
	}
	var names []string
	for _, a := range args {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return "declared: " + strings.Join(names, ", ")
}

func copyArgument(a Argument) Argument {
	if a.Value != nil {
		v := *a.Value
		a.Value = &v
	}
	if a.ValueFrom != nil {
		vf := *a.ValueFrom
		if vf.SecretKeyRef != nil {
			r := *vf.SecretKeyRef
			vf.SecretKeyRef = &r
		}
		if vf.FieldRef != nil {
			r := *vf.FieldRef
			vf.FieldRef = &r
		}
		a.ValueFrom = &vf
	}
	return a
}

// resolveMetric substitutes into every string of the metric. Like Argo, it
// goes through the metric's JSON form, so that no field can be missed; unlike
// Argo, it substitutes into the decoded strings rather than the JSON text,
// which gives every error its field and makes any value safe without
// escaping.
func resolveMetric(m *Metric, path string, lookup func(string) (string, bool)) (*Metric, []api.FieldError) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, []api.FieldError{{Field: path, Message: err.Error()}}
	}
	if !bytes.Contains(raw, []byte(openTag)) {
		// Nothing to substitute: encoding/json never escapes a brace, and
		// outside strings JSON has no "{{", so no string holds a tag. The
		// copy is decoded straight from raw, without the tree (a metric is
		// resolved on every request that runs a spec).
		var out Metric
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, []api.FieldError{{Field: path, Message: err.Error()}}
		}
		return &out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, []api.FieldError{{Field: path, Message: err.Error()}}
	}

	var errs []api.FieldError
	tree = substituteTree(tree, path, lookup, &errs)
	if len(errs) > 0 {
		return nil, errs
	}

	raw, err = json.Marshal(tree)
	if err != nil {
		return nil, []api.FieldError{{Field: path, Message: err.Error()}}
	}
	var out Metric
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, []api.FieldError{{Field: path, Message: err.Error()}}
	}
	return &out, nil
}

func substituteTree(v any, path string, lookup func(string) (string, bool), errs *[]api.FieldError) any {
	switch x := v.(type) {
	case string:
		out, unknown, unclosed := expand(x, lookup)
		if unclosed {
			*errs = append(*errs, api.FieldError{Field: path, Message: fmt.Sprintf(
				"failed to resolve: %q without a closing %q", openTag, closeTag)})
			return x
		}
		for _, tag := range unknown {
			*errs = append(*errs, api.FieldError{Field: path, Message: "failed to resolve " + openTag + tag + closeTag})
		}
		return out
	case map[string]any:
		for _, k := range sortedKeys(x) {
			x[k] = substituteTree(x[k], joinPath(path, k), lookup, errs)
		}
	case []any:
		for i := range x {
			x[i] = substituteTree(x[i], indexPath(path, i), lookup, errs)
		}
	}
	return v
}

// expand replaces every {{tag}} of s the way fasttemplate does: tags do not
// nest, the text between "{{" and the next "}}" is the tag, and lookup is
// given it with surrounding space trimmed. It returns the raw text of the
// tags lookup does not know, each once, and whether a "{{" is never closed
// (fasttemplate then refuses the whole template).
func expand(s string, lookup func(string) (string, bool)) (out string, unknown []string, unclosed bool) {
	if !strings.Contains(s, openTag) {
		return s, nil, false
	}
	var b strings.Builder
	for {
		before, rest, found := strings.Cut(s, openTag)
		b.WriteString(before)
		if !found {
			return b.String(), unknown, false
		}
		tag, after, found := strings.Cut(rest, closeTag)
		if !found {
			return "", nil, true
		}
		if v, ok := lookup(strings.TrimSpace(tag)); ok {
			b.WriteString(v)
		} else if !slices.Contains(unknown, tag) {
			unknown = append(unknown, tag)
		}
		s = after
	}
}
