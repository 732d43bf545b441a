package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/lang"
	"github.com/canaryd/canaryd/internal/redact"
)

// Template delimiters, as in Argo Rollouts (valyala/fasttemplate).
const (
	openTag  = "{{"
	closeTag = "}}"
	argsTag  = "args."
)

// ResolveOptions configure Resolve. Their zero value bounds nothing and
// holds no argument secret by its name, which is what a spec run by its own
// author needs; a service sets the bounds.
type ResolveOptions struct {
	// SecretArg reports whether the value of the argument of this name
	// must not be shown (internal/compile's IsSecretArg). An argument read
	// from a secretKeyRef is secret whatever it says; nil holds no other
	// argument secret.
	SecretArg func(name string) bool
	// Languages are the providers' fields written in a query or an
	// expression language, by their path relative to the metric
	// ("provider.prometheus.query": promql.Language); every string field of a
	// provider not among them is ValueText. internal/compile gathers them
	// from the providers.
	Languages map[string]Language
	// Conditions is the language of the metrics' conditions
	// (condition.Expr, which internal/compile sets). Without one, an
	// argument is not substituted into a condition: each tag there is a
	// problem.
	Conditions Language
	// MaxQueryLength bounds each query field (of a language whose Noun is
	// "query": provider.prometheus.query, a judge's canary and baseline),
	// MaxConditionLength each condition and
	// MaxFieldLength every other string field, in bytes with the arguments
	// substituted; MaxResolvedSize bounds all of a spec's metrics together
	// (their JSON, the values substituted). Each is checked from the
	// lengths of the values and the number of tags, before anything
	// substituted is built. 0 is no bound.
	MaxQueryLength     int
	MaxConditionLength int
	MaxFieldLength     int
	MaxResolvedSize    int
	// Argo marks an argoproj.io/v1alpha1 document's spec: only its
	// arguments are substituted verbatim, and its messages say how such a
	// document opts in to that.
	Argo bool
	// VerbatimArgs substitutes the arguments of an Argo document as they
	// are, as Argo Rollouts does, without escaping or checking them. It is
	// not a bound but the lifting of one, for an operator whose callers
	// are all trusted with the structure of every query and condition.
	VerbatimArgs bool
	// Continue has Resolve return a Resolution despite its problems, so
	// that what does not depend on them is checked in the same pass (see
	// Resolution.Unresolved). A spec over MaxResolvedSize, or with a field
	// over its limit, is not built all the same.
	Continue bool
}

// verbatim reports whether every value is substituted as it is.
func (o ResolveOptions) verbatim() bool { return o.Argo && o.VerbatimArgs }

// secret reports whether the argument of this name is secret by its name.
func (o ResolveOptions) secret(name string) bool { return o.SecretArg != nil && o.SecretArg(name) }

// Resolution is a resolved spec with what is needed to keep the values of
// secret arguments out of everything shown.
type Resolution struct {
	// Spec is the spec with its arguments substituted.
	Spec *Spec
	// Display is Spec with the value of every secret argument replaced by
	// Masked: the text to show where the resolved text would be shown (a
	// condition in a message, the query in a metric's metadata). Nil when
	// no secret value was substituted.
	Display *Spec
	// Secrets are the values of the secret arguments, to be scrubbed from
	// texts that canaryd does not write itself (an error of Prometheus, of
	// a condition).
	Secrets []string
	// Unresolved lists the fields, by their paths relative to the spec
	// ("metrics[0].provider.prometheus.address"), that hold a tag Resolve
	// could not substitute (ResolveOptions.Continue): in Spec each such
	// tag has a placeholder in its place (see Placeholder), and only the
	// fields' languages can be checked further; ValueText tells which of
	// them are values, whose own checks wait until they resolve.
	Unresolved map[string]Language
}

// PlaceholderPrefix starts the placeholder that stands, in a spec
// resolved with ResolveOptions.Continue, for a value that could not be
// substituted (see Placeholder).
const PlaceholderPrefix = lang.PlaceholderPrefix

// Placeholder is what stands for the value of the argument of this name
// where it could not be substituted (lang.Placeholder): one name, which is
// no number, duration, address or condition, and which needs no escaping
// in a string literal. Outside string literals a language may put
// another (an expression puts 1).
func Placeholder(name string) string { return lang.Placeholder(name) }

// Masked replaces a secret value wherever it would be shown: redact's one
// mask.
const Masked = redact.Mask

// Resolve returns a copy of the spec with its arguments substituted into
// every string field of every metric, as Argo Rollouts does, except that a
// value cannot change the structure of a query or a condition:
// `{{args.NAME}}` and `{{ args.NAME }}` are the same tag, names may contain
// dashes, and counts and limits given as strings ("{{args.count}}") are
// substituted too; Validate checks that they are then integers. The copy's
// Args carry the values used.
//
// How a value goes into a field depends on the field's language and on
// where in it the tag stands:
//   - In a query and in an expression (successCondition, failureCondition,
//     and the providers' fields that ResolveOptions.Languages names:
//     provider.prometheus.query, a judge's canary and baseline, a range
//     query's start and end), a value inside a string literal ("…", '…',
//     `…`) is escaped as the language escapes strings, so that the literal
//     holds exactly the value (Language.Escape); a value the literal cannot
//     hold (a backtick in a PromQL `…` string) is refused.
//   - Elsewhere in a query or an expression (outside string literals, or
//     in a comment) a value must be a plain literal, one token that cannot
//     join or split expressions, as the language says (Language.Plain): in
//     PromQL a number, a duration or a metric or label name that is not a
//     keyword; in expr a number, true or false. A sign (-1) only where an
//     operand starts.
//   - In every other field (names, durations, counts, the address, headers,
//     credentials) the value is the field's text, as it is.
//
// An argument marked freeText (a canaryd extension) is substituted as it
// is everywhere, as Argo Rollouts substitutes every value; so is every
// argument of an Argo document resolved with ResolveOptions.VerbatimArgs.
//
// overrides (from --arg NAME=VALUE, arg.NAME query parameters or a request
// body's args) replace the spec's values. It is an error to
//   - override an argument the spec does not declare ("args.NAME"): a typo
//     must not be silently ignored;
//   - leave an argument without a value: `argument "NAME" was not supplied`;
//   - rely on valueFrom (secretKeyRef, fieldRef), which only a controller
//     inside Kubernetes can read, unless an override supplies the value;
//   - use any tag other than a declared argument: `failed to resolve {{tag}}`;
//   - give a value that the rules above refuse where it would go: on
//     "args.NAME" for an override, "args[i].value" for the spec's value;
//   - go beyond the bounds of o on the length of a field or of all the
//     metrics, with the values substituted (checked before anything is
//     built).
//
// The values of secret arguments (o.SecretArg, and every argument read
// from a secretKeyRef) are not quoted in the problems, and the
// Resolution's Display has them masked.
//
// Every problem is reported, each on the field it is in
// ("metrics[0].provider.prometheus.query"). On error the Resolution is nil,
// unless o.Continue asks for one with placeholders where tags could not
// be substituted (see Resolution.Unresolved).
func (s *Spec) Resolve(overrides map[string]string, o ResolveOptions) (*Resolution, []api.FieldError) {
	args, values, errs := s.mergeArgs(overrides, o)
	r := &resolver{args: values, opts: o, seen: map[api.FieldError]bool{}, unresolved: map[string]Language{}}

	// First every field is measured and checked, and nothing is built: a
	// value a thousand times in a field would be a thousand copies.
	pending := make([]*pendingMetric, len(s.Metrics))
	var total int64
	for i := range s.Metrics {
		pm, err := r.measureMetric(&s.Metrics[i], indexPath("metrics", i))
		if err != nil {
			errs = append(errs, api.FieldError{Field: indexPath("metrics", i), Message: err.Error()})
			r.unresolved[indexPath("metrics", i)] = ValueText
			continue
		}
		pending[i] = pm
		total += pm.size
	}
	errs = append(errs, r.errs...)
	// A field over its own limit is reason enough, and says which.
	overTotal := o.MaxResolvedSize > 0 && total > int64(o.MaxResolvedSize)
	if overTotal && !r.oversize {
		errs = append(errs, api.FieldError{Field: "metrics", Message: fmt.Sprintf(
			"with their arguments substituted the metrics would be %d bytes, more than the %d this canaryd accepts in one spec", total, o.MaxResolvedSize)})
	}
	// A spec over a bound is not built, Continue or not: building it is
	// the work the bound saves.
	if len(errs) > 0 && (!o.Continue || r.oversize || overTotal) {
		return nil, errs
	}
	if len(errs) > 0 {
		r.explain(s, errs)
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
	res := &Resolution{Spec: out}
	if len(r.unresolved) > 0 {
		res.Unresolved = r.unresolved
	}
	for i, pm := range pending {
		if pm == nil { // not measured: kept as it is (Continue)
			out.Metrics[i] = s.Metrics[i]
			continue
		}
		m, err := r.build(pm, false)
		if err != nil {
			return nil, []api.FieldError{{Field: indexPath("metrics", i), Message: err.Error()}}
		}
		out.Metrics[i] = *m
	}
	if r.usedSecret {
		display := *out
		display.Metrics = make([]Metric, len(out.Metrics))
		for i, pm := range pending {
			if pm == nil {
				display.Metrics[i] = s.Metrics[i]
				continue
			}
			m, err := r.build(pm, true)
			if err != nil {
				return nil, []api.FieldError{{Field: indexPath("metrics", i), Message: err.Error()}}
			}
			display.Metrics[i] = *m
		}
		res.Display = &display
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if a := values[name]; a.secret && a.value != nil && *a.value != "" {
			res.Secrets = append(res.Secrets, *a.value)
		}
	}
	return res, errs
}

// explain adds to the problems of a spec resolved with Continue which of
// its fields wait for them: a value (an address, a duration) that holds
// a placeholder is checked once it resolves, while a query or an
// expression is checked with the placeholder in the tag's place.
func (r *resolver) explain(s *Spec, errs []api.FieldError) {
	waiting := map[string][]string{} // by argument, the values that wait for it
	for field, names := range r.waits {
		if r.unresolved[field] != ValueText {
			continue
		}
		for _, n := range names {
			if !slices.Contains(waiting[n], field) {
				waiting[n] = append(waiting[n], field)
			}
		}
	}
	for i := range errs {
		e := &errs[i]
		name := ""
		switch {
		case strings.HasPrefix(e.Field, "args."):
			name = strings.TrimPrefix(e.Field, "args.")
		case strings.HasPrefix(e.Field, "args["):
			var j int
			if _, err := fmt.Sscanf(e.Field, "args[%d]", &j); err == nil && j >= 0 && j < len(s.Args) {
				name = s.Args[j].Name
			}
		}
		if fields := waiting[name]; len(fields) > 0 {
			slices.Sort(fields)
			e.Message += "; checked once it has a value: " + strings.Join(fields, ", ")
			waiting[name] = nil
			continue
		}
		if lang, ok := r.unresolved[e.Field]; ok && lang == ValueText && !strings.Contains(e.Message, "checked once") {
			e.Message += "; the field's value is checked once it resolves"
		}
	}
}

// argValue is an argument as resolve substitutes it.
type argValue struct {
	name string
	// value is nil when the argument has none (already reported).
	value *string
	// field is where a problem with the value is reported: "args.NAME"
	// for an override, "args[i].value" for the spec's value.
	field string
	// secret: the value must not be shown (see ResolveOptions.SecretArg);
	// freeText:
	// the value is substituted as it is.
	secret, freeText bool
	// plain and escaped remember what depends on the value alone: whether
	// it is a plain literal (plainLiteral's answer, by language and
	// context) and its escaped length (by quote).
	plain   map[plainKey]string
	escaped map[escapeKey]escaped
}

type escapeKey struct {
	lang  Language
	quote byte
}

// escaped is a value's length escaped for a string literal, or why it
// cannot be.
type escaped struct {
	n       int
	refused string
}

type plainKey struct {
	lang Language
	ctx  lang.Context
}

func (a *argValue) plainLiteral(l Language, ctx lang.Context) string {
	k := plainKey{l, ctx}
	why, ok := a.plain[k]
	if !ok {
		why = l.Plain(*a.value, ctx)
		if a.plain == nil {
			a.plain = map[plainKey]string{}
		}
		a.plain[k] = why
	}
	return why
}

func (a *argValue) escapedLength(l Language, quote byte) (int, string) {
	k := escapeKey{l, quote}
	e, ok := a.escaped[k]
	if !ok {
		e.n, e.refused = l.EscapedLength(*a.value, quote)
		if a.escaped == nil {
			a.escaped = map[escapeKey]escaped{}
		}
		a.escaped[k] = e
	}
	return e.n, e.refused
}

// describe names the argument's value for a message, and quotes it unless
// it is secret.
func (a *argValue) describe() string {
	if a.secret {
		return fmt.Sprintf("the value of argument %q", a.name)
	}
	return fmt.Sprintf("the value of argument %q (%q)", a.name, clip(*a.value))
}

// notUTF8 says why an argument's value is refused: it is substituted into
// a JSON document (as Argo does), where invalid bytes would silently become
// U+FFFD and the query would ask for something the caller did not send.
const notUTF8 = "the value is not valid UTF-8; send text (percent-encode it in a query string)"

// mergeArgs merges the spec's arguments with the overrides. values maps
// every declared name to its argument, whose value is nil when it has
// none. args is a copy of s.Args carrying those values.
func (s *Spec) mergeArgs(overrides map[string]string, o ResolveOptions) (args []Argument, values map[string]*argValue, errs []api.FieldError) {
	values = make(map[string]*argValue, len(s.Args))
	for _, a := range s.Args {
		v := values[a.Name]
		if v == nil {
			v = &argValue{name: a.Name, secret: o.secret(a.Name)}
			values[a.Name] = v
		}
		v.secret = v.secret || (a.ValueFrom != nil && a.ValueFrom.SecretKeyRef != nil)
		v.freeText = v.freeText || a.FreeText
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
		field := indexPath("args", i) + ".value"
		if o, ok := overrides[a.Name]; ok {
			v, field = &o, "args."+a.Name
			if !utf8.ValidString(o) {
				errs = append(errs, api.FieldError{Field: field, Message: notUTF8})
				v, refused[a.Name] = nil, true
			}
		} else if a.ValueFrom == nil {
			v = a.Value
			if v != nil && !utf8.ValidString(*v) {
				errs = append(errs, api.FieldError{Field: field, Message: notUTF8})
				v, refused[a.Name] = nil, true
			}
		}
		switch arg := values[a.Name]; {
		case v == nil:
		case arg.value == nil:
			arg.value, arg.field = v, field
		case *arg.value != *v:
			errs = append(errs, api.FieldError{Field: indexPath("args", i) + ".value", Message: fmt.Sprintf(
				"Argument `%s` specified multiple times with different values: '%s', '%s'", a.Name, *arg.value, *v)})
		}
	}

	// Arguments left without a value, each reported once: on its valueFrom
	// if it has one, else where it is first declared.
	reported := refused
	for i, a := range s.Args {
		if values[a.Name].value != nil || reported[a.Name] {
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
		if v := values[args[i].Name].value; v != nil {
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

// resolver substitutes the arguments of one spec into its metrics.
type resolver struct {
	args map[string]*argValue
	opts ResolveOptions
	// errs are the problems found, each once (seen).
	errs []api.FieldError
	seen map[api.FieldError]bool
	// usedSecret: the value of a secret argument is substituted somewhere.
	usedSecret bool
	// oversize: a field is over its limit.
	oversize bool
	// unresolved are the fields that hold a tag left unsubstituted, with
	// their languages, and waits the arguments each waits for
	// (ResolveOptions.Continue).
	unresolved map[string]Language
	waits      map[string][]string
}

// unresolvedTag records that t, in field of language lang, cannot be
// substituted: with Continue, a placeholder takes its place.
func (r *resolver) unresolvedTag(t *tag, field string, lang Language) {
	t.placeholder = true
	r.unresolved[field] = lang
	if t.arg != nil {
		if r.waits == nil {
			r.waits = map[string][]string{}
		}
		r.waits[field] = append(r.waits[field], t.arg.name)
	}
}

func (r *resolver) add(field, msg string) {
	e := api.FieldError{Field: field, Message: msg}
	if !r.seen[e] {
		r.seen[e] = true
		r.errs = append(r.errs, e)
	}
}

// pendingMetric is a metric measured and checked, ready to be built. Like
// Argo, resolve goes through the metric's JSON form, so that no field can
// be missed; unlike Argo, it substitutes into the decoded strings rather
// than the JSON text, which gives every error its field.
type pendingMetric struct {
	// raw is the metric's JSON.
	raw []byte
	// strings are the tags of every string that has any, in the order
	// walkStrings visits them; nil when the metric needs no substitution
	// (then raw is decoded as it is).
	strings [][]tag
	// size is the length of the metric's JSON with every value
	// substituted (escaping within JSON aside).
	size int64
}

// measureMetric reads the tags of every string of m, checks each value
// where it would go, and measures every field and the whole metric as they
// would be once substituted. It builds nothing.
func (r *resolver) measureMetric(m *Metric, path string) (*pendingMetric, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	pm := &pendingMetric{raw: raw, size: int64(len(raw))}
	// encoding/json never escapes a brace, and outside strings JSON has no
	// "{{": without one, no string holds a tag. A metric whose JSON is no
	// longer than the least field limit has no field over its limit
	// either. Then there is nothing to walk (a metric is resolved on every
	// request that runs a spec).
	if !bytes.Contains(raw, []byte(openTag)) && len(raw) <= r.opts.leastFieldLength() {
		return pm, nil
	}
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	pm.strings = [][]tag{}
	walkStrings(tree, "", func(rel, s string) string {
		tags, n := r.measureString(s, path, rel)
		if tags != nil {
			pm.strings = append(pm.strings, tags)
		}
		pm.size += n - int64(len(s))
		return s
	})
	if len(pm.strings) == 0 {
		pm.strings = nil
	}
	return pm, nil
}

// leastFieldLength is the least of the limits on a field's length; every
// field is within its limit when the whole metric's JSON is no longer.
func (o ResolveOptions) leastFieldLength() int {
	least := math.MaxInt
	for _, n := range []int{o.MaxQueryLength, o.MaxConditionLength, o.MaxFieldLength} {
		if n > 0 {
			least = min(least, n)
		}
	}
	return least
}

// measureString reads the tags of s, the string at rel in the metric at
// path, checks each value where it would go and returns the tags (nil when
// there are none) and the length of s substituted.
func (r *resolver) measureString(s, path, rel string) (tags []tag, length int64) {
	field := joinPath(path, rel)
	length = int64(len(s))
	if strings.Contains(s, openTag) {
		var unclosed bool
		tags, unclosed = scanTags(s, r.args)
		if unclosed {
			r.add(field, fmt.Sprintf("failed to resolve: %q without a closing %q", openTag, closeTag))
			// Left as it is: a query or an expression is checked so,
			// a value waits.
			r.unresolved[field] = r.opts.fieldLanguage(rel)
			return []tag{}, length
		}
	}
	lang := r.opts.fieldLanguage(rel)
	if lang == ValueText && isCondition(rel) && len(tags) > 0 {
		r.add(field, "no language is declared for the conditions, so no argument is substituted into one")
		for i := range tags {
			r.unresolvedTag(&tags[i], field, lang)
		}
		return tags, length
	}
	if lang != ValueText && len(tags) > 0 && !r.opts.verbatim() {
		findContexts(lang, s, tags)
	}
	return tags, r.measureTags(tags, field, lang, rel, length)
}

// measureTags checks the value of each tag of the string at field, a text
// in lang at rel in its metric, where it would go, and returns the
// string's length, length before, with the values substituted.
func (r *resolver) measureTags(tags []tag, field string, lang Language, rel string, length int64) int64 {
	for i := range tags {
		t := &tags[i]
		length -= int64(t.end - t.start)
		a := t.arg
		if a == nil {
			r.add(field, "failed to resolve "+openTag+t.raw+closeTag)
			r.unresolvedTag(t, field, lang)
			continue
		}
		if a.value == nil {
			r.unresolvedTag(t, field, lang)
			continue // reported with the argument
		}
		r.usedSecret = r.usedSecret || (a.secret && *a.value != "")
		v := *a.value
		if lang == ValueText || a.freeText || r.opts.verbatim() {
			length += int64(len(v))
			continue
		}
		if t.ctx.Quote != 0 {
			n, refused := a.escapedLength(lang, t.ctx.Quote)
			switch {
			case t.ctx.InEscape:
				r.add(field, fmt.Sprintf("%s%s%s stands within an escape sequence of the string literal it is in (after its backslash), "+
					"so that the value's first characters would be read as part of the sequence; finish the escape sequence before the tag", openTag, t.raw, closeTag))
				r.unresolvedTag(t, field, lang)
			case refused != "":
				q := string(t.ctx.Quote)
				r.add(a.field, fmt.Sprintf("%s cannot be substituted into %s inside a %s…%s string: %s", a.describe(), field, q, q, refused))
				r.unresolvedTag(t, field, lang)
			}
			t.escape = true
			length += int64(n)
			continue
		}
		if why := a.plainLiteral(lang, t.ctx); why != "" {
			r.add(a.field, fmt.Sprintf("%s cannot be substituted into %s outside a string literal: %s; %s",
				a.describe(), field, why, r.optIn()))
			r.unresolvedTag(t, field, lang)
		}
		length += int64(len(v))
	}
	if limit, what, flag := r.opts.fieldLimit(lang, rel); limit > 0 && length > int64(limit) {
		msg := fmt.Sprintf("the %s is %d bytes long, longer than the %d this canaryd accepts%s", what, length, limit, flag)
		if len(tags) > 0 {
			msg = fmt.Sprintf("with its arguments substituted the %s would be %d bytes long, longer than the %d this canaryd accepts%s", what, length, limit, flag)
		}
		r.add(field, msg)
		r.oversize = true
	}
	return length
}

// optIn says how a template lets a value through unchecked.
func (r *resolver) optIn() string {
	const quote = "put the tag inside quotes, where any value is escaped"
	if r.opts.Argo {
		return quote + ", or make the document a canaryd template (apiVersion " + CanarydAPIVersion +
			") and mark the argument freeText: true to substitute it as it is; an " + APIVersion +
			" document has its values substituted as they are, as Argo Rollouts does, only where canaryd runs with --verbatim-args"
	}
	return quote + ", or mark the argument freeText: true to substitute it as it is"
}

// fieldLimit is the limit on the length of the string at rel, what to call
// the string, and the flag that sets the limit (with its parentheses).
func (o ResolveOptions) fieldLimit(lang Language, rel string) (limit int, what, flag string) {
	switch {
	case lang != ValueText && lang.Noun() == "query":
		return o.MaxQueryLength, "query", " (--max-query-length)"
	case isCondition(rel):
		return o.MaxConditionLength, "condition", " (--max-condition-length)"
	}
	return o.MaxFieldLength, "field", " in one field"
}

// build decodes a measured metric with its values substituted, escaped
// where measureString found they must be; with masked, the value of every
// secret argument is ***** instead.
func (r *resolver) build(pm *pendingMetric, masked bool) (*Metric, error) {
	raw := pm.raw
	if pm.strings != nil {
		tree, err := decodeTree(raw)
		if err != nil {
			return nil, err
		}
		next := 0
		tree = walkStrings(tree, "", func(rel, s string) string {
			if !strings.Contains(s, openTag) {
				return s
			}
			tags := pm.strings[next]
			next++
			return r.render(s, tags, masked, r.opts.fieldLanguage(rel))
		})
		if raw, err = json.Marshal(tree); err != nil {
			return nil, err
		}
	}
	var out Metric
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// render substitutes the values of s's tags, a text in lang, and
// placeholders for those that cannot be substituted (Continue).
func (r *resolver) render(s string, tags []tag, mask bool, lang Language) string {
	var b strings.Builder
	prev := 0
	for _, t := range tags {
		b.WriteString(s[prev:t.start])
		prev = t.end
		a := t.arg
		if t.placeholder {
			switch {
			case lang != ValueText && t.ctx.Quote == 0 && a != nil:
				b.WriteString(lang.Unknown(a.name))
			case lang != ValueText && t.ctx.Quote == 0:
				b.WriteString(lang.Unknown(""))
			case a == nil:
				b.WriteString(Placeholder(""))
			default:
				b.WriteString(Placeholder(a.name))
			}
			continue
		}
		switch v := *a.value; {
		case mask && a.secret && v != "":
			b.WriteString(Masked)
		case t.escape:
			b.WriteString(lang.Escape(v, t.ctx.Quote))
		default:
			b.WriteString(v)
		}
	}
	b.WriteString(s[prev:])
	return b.String()
}

func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	err := dec.Decode(&tree)
	return tree, err
}

// walkStrings calls visit with every string of a decoded JSON tree and its
// path, maps in the order of their keys, and puts what visit returns in
// the string's place.
func walkStrings(v any, path string, visit func(path, s string) string) any {
	switch x := v.(type) {
	case string:
		return visit(path, x)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			x[k] = walkStrings(x[k], joinPath(path, k), visit)
		}
	case []any:
		for i := range x {
			x[i] = walkStrings(x[i], indexPath(path, i), visit)
		}
	}
	return v
}
