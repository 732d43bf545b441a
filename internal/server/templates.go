package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analyses"
	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/spec"
	"github.com/canaryd/canaryd/internal/templates"
)

// TemplateStore is where the named templates come from: a
// *templates.Store, loaded from --templates and kept current by it.
type TemplateStore interface {
	// Get returns the template served under name.
	Get(name string) (*templates.Template, bool)
	// List returns every template served and every document that does
	// not load, sorted by name.
	List() []templates.Info
}

// noTemplates is the store of a canaryd started without --templates.
type noTemplates struct{}

func (noTemplates) Get(string) (*templates.Template, bool) { return nil, false }
func (noTemplates) List() []templates.Info                 { return []templates.Info{} }

// TemplateList is the body of GET /v1/templates.
type TemplateList struct {
	Templates []templates.Info `json:"templates"`
}

// TemplateDetail is the body of GET /v1/templates/{name}: what the list
// says of the template, and its spec as loaded, arguments unresolved
// (templates.Template.View). Values that may be credentials
// (secret-looking arguments' defaults, and the fields each provider
// declares credentials: header values such as Authorization, passwords,
// client secrets) read "*****".
type TemplateDetail struct {
	templates.Info
	Spec map[string]any `json:"spec"`
}

// handleListTemplates lists the templates served and the documents that do
// not load, with their errors.
func handleListTemplates(store TemplateStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		list := store.List()
		if list == nil {
			list = []templates.Info{}
		}
		writeJSON(w, http.StatusOK, TemplateList{Templates: list})
	})
}

// handleGetTemplate answers with one served template.
func handleGetTemplate(store TemplateStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, p := findTemplate(store, chi.URLParam(r, "name"))
		if p != nil {
			writeProblem(w, r, *p)
			return
		}
		writeJSON(w, http.StatusOK, TemplateDetail{Info: infoOfTemplate(store, t), Spec: t.View()})
	})
}

// findTemplate returns the template served under name, or the 404 to answer
// with: one that lists the errors of a template that does not load, so the
// caller learns why rather than only that it is missing.
func findTemplate(store TemplateStore, name string) (*templates.Template, *api.Problem) {
	if t, ok := store.Get(name); ok {
		return t, nil
	}
	if _, none := store.(noTemplates); none {
		return nil, ptr(problem(http.StatusNotFound, ProblemNotFound,
			"no template "+quote(name)+": this canaryd serves no named templates (it was started without --templates)"))
	}
	for _, info := range store.List() {
		if info.Name == name && info.Status == templates.StatusError {
			p := problem(http.StatusNotFound, ProblemNotFound, fmt.Sprintf(
				"template %s in %s (line %d) does not load, so it is not served; errors lists why", quote(name), info.File, info.Line))
			p.Errors = info.Errors
			return nil, &p
		}
	}
	return nil, ptr(problem(http.StatusNotFound, ProblemNotFound,
		"no template "+quote(name)+"; GET /v1/templates lists the templates served"))
}

// infoOfTemplate returns the list entry of t: its status (ok or stale) and
// the errors of its file's current content. Should a reload replace t
// between the two reads, the entry is rebuilt from t itself.
func infoOfTemplate(store TemplateStore, t *templates.Template) templates.Info {
	for _, info := range store.List() {
		if info.Name == t.Name && info.File == t.File && info.Status != templates.StatusError && info.LoadedAt.Equal(t.LoadedAt) {
			return info
		}
	}
	return templates.Info{Name: t.Name, Kind: t.Kind, File: t.File, Line: t.Line, Status: templates.StatusOK, LoadedAt: t.LoadedAt, Args: t.Args}
}

// Fields of the template endpoints' body, and the webhook's query
// parameters.
const (
	fieldArgs          = "args"
	fieldWebhook       = "webhook"
	fieldWebhookURL    = fieldWebhook + ".url"
	fieldWebhookEvents = fieldWebhook + ".events"
)

// flaggerFields are the fields of Flagger's webhook payload
// (pkg/controller/webhook.go: name, namespace, phase, checksum, metadata),
// which POST /v1/gates/{name} takes as it is.
var flaggerFields = []string{"name", "namespace", "phase", "checksum", "metadata"}

// templateBody is the decoded body of a template endpoint.
type templateBody struct {
	args    map[string]string
	webhook *webhookBody
	// flagger is set when the body carries any field of Flagger's
	// payload.
	flagger *flaggerPayload
	// tree is the body as decoded, in which its problems are located
	// (at); nil without a body.
	tree map[string]any
}

// at returns a problem with the body's field, with the field's pointer
// into the body when it is there (see spec.FieldPointer).
func (tb templateBody) at(field, message string) api.FieldError {
	e := api.FieldError{Field: field, Message: message}
	if tb.tree == nil {
		return e
	}
	if p, _, ok := spec.FieldPointer(tb.tree, field); ok {
		e.Pointer = &p
	}
	return e
}

// webhookBody is the body's webhook: {"url": …, "events": […]}.
type webhookBody struct {
	url string
	// hasURL is set when url was given as a string, to be checked.
	hasURL bool
	events []string
}

// flaggerPayload is what canaryd reads of Flagger's webhook payload.
type flaggerPayload struct {
	// name and namespace are the canary's; nil when absent.
	name, namespace *string
	phase, checksum string
	metadata        map[string]string
}

// readTemplate returns the reader of a template endpoint: the template
// named in the path, arguments from the body ({"args": {...}}, or on gates
// Flagger's payload) and the query (arg.NAME=VALUE), checked against the
// template's declared arguments, then compiled as a posted document is.
//
// Arguments are taken lowest first, a later source replacing an earlier
// one's value: Flagger's name and namespace, Flagger's metadata, the body's
// args, the query's arg.NAME. The URL is the one place every caller
// controls (a tool's payload often is not), so it has the last word.
//
// An argument the template does not declare is an error wherever the caller
// wrote it (args, metadata, the query), naming it; Flagger's name,
// namespace, phase and checksum are sent whatever the template, and are
// ignored unless it declares them (phase and checksum never become
// arguments; they go to the log).
func (in *inputReader) readTemplate(store TemplateStore, params queryParams, flagger bool) requestReader {
	return func(w http.ResponseWriter, r *http.Request) (*specRequest, *api.Problem) {
		t, p := findTemplate(store, chi.URLParam(r, "name"))
		if p != nil {
			return nil, p
		}
		body, p := in.readBody(w, r)
		if p != nil {
			return nil, p
		}
		req := &specRequest{template: t.Name}
		overrides, errs := req.query(r.URL.RawQuery, params, in.checkWebhook)
		errs = append(errs, req.timeoutHeader(r, params)...)
		errs = append(errs, req.readWindow(params, in.now())...)

		var tb templateBody
		// No body at all is fine: the arguments may all be in the query,
		// and callers such as curl -X POST send none.
		if len(bytes.TrimSpace(body)) > 0 {
			isJSON, p := bodyMediaType(r)
			if p != nil {
				return nil, p
			}
			if p := in.acquireDecode(r.Context()); p != nil {
				return nil, p
			}
			defer in.decodes.release()
			var berrs []api.FieldError
			tb, berrs = decodeTemplateBody(body, isJSON, flagger)
			errs = append(errs, berrs...)
		}
		if tb.webhook != nil {
			switch {
			case !params.webhook:
				errs = append(errs, tb.at(fieldWebhook, noWebhookHere))
			case req.webhook != nil:
				errs = append(errs, tb.at(fieldWebhook, "given both as ?webhook= and in the body; give it once"))
			case !tb.webhook.hasURL:
				// decodeWebhook has said what is wrong with it.
			default:
				if err := in.checkWebhook(tb.webhook.url); err != nil {
					errs = append(errs, tb.at(fieldWebhookURL, err.Error()))
				} else {
					req.webhook = &analyses.WebhookRequest{URL: tb.webhook.url, Events: tb.webhook.events}
				}
			}
		}
		args, aerrs := mergeArgs(t, tb, overrides)
		errs = append(errs, aerrs...)
		req.args = args
		if len(errs) > 0 {
			return nil, ptr(invalidInput(errs))
		}
		key := appendKey(nil, params, args)
		if e, ok := in.compiled.Get(t.Document, key); ok {
			req.compiled, req.round = e.compiled, e.round
		} else {
			compiled, problems := compile.Compile(t.Document, args, in.sources, in.compileOptions(params)...)
			if len(problems) > 0 {
				return nil, ptr(invalidInput(problems))
			}
			req.compiled, req.round = compiled, &roundPlan{}
			in.compiled.Add(t.Document, key, compiledEntry{compiled: compiled, template: t.Name, round: req.round})
		}
		if f := tb.flagger; f != nil {
			req.caller = []zap.Field{zap.String("template", t.Name), zap.String("flagger_canary", deref(f.namespace)+"/"+deref(f.name)),
				zap.String("flagger_phase", f.phase), zap.String("flagger_checksum", f.checksum)}
		}
		return req, nil
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// mergeArgs gathers the arguments of a request to run t (see readTemplate
// for the order and the rules) and names every argument that is not
// declared and every required one that is missing.
func mergeArgs(t *templates.Template, body templateBody, query map[string]string) (map[string]string, []api.FieldError) {
	declared := make([]string, 0, len(t.Args))
	for _, a := range t.Args {
		declared = append(declared, a.Name)
	}
	declaredList := "it declares no arguments"
	if len(declared) > 0 {
		declaredList = "declared: " + strings.Join(declared, ", ")
	}
	args := map[string]string{}
	var errs []api.FieldError
	// take takes the arguments of the body (inBody) or of the query; the
	// body's problems point into it.
	take := func(field string, values map[string]string, inBody bool) {
		for _, name := range slices.Sorted(maps.Keys(values)) {
			if !slices.Contains(declared, name) {
				e := api.FieldError{Field: field + "." + name, Message: fmt.Sprintf(
					"argument %q is not declared by template %q (%s)", name, t.Name, declaredList)}
				if inBody {
					e = body.at(e.Field, e.Message)
				}
				errs = append(errs, e)
				continue
			}
			args[name] = values[name]
		}
	}
	if f := body.flagger; f != nil {
		for name, v := range map[string]*string{"name": f.name, "namespace": f.namespace} {
			if v != nil && slices.Contains(declared, name) {
				args[name] = *v
			}
		}
		take("metadata", f.metadata, true)
	}
	take(fieldArgs, body.args, true)
	take(fieldArgs, query, false)
	for _, name := range t.MissingArgs(args) {
		// Where the body's args would have it, when the body has args.
		errs = append(errs, body.at(fieldArgs+"."+name, fmt.Sprintf(
			"template %q requires argument %q: give it in the body as {\"args\": {%q: \"…\"}} or in the query as arg.%s=…",
			t.Name, name, name, name)))
	}
	return args, errs
}

// decodeTemplateBody decodes the body of a template endpoint, JSON or
// YAML: an object of args and webhook, and, when flagger is set, the
// fields of Flagger's webhook payload. Every unknown field and every value
// of the wrong type is reported.
func decodeTemplateBody(body []byte, isJSON bool, flagger bool) (templateBody, []api.FieldError) {
	var out templateBody
	obj, e := decodeObject(body, isJSON)
	if e != nil {
		return out, []api.FieldError{inBody(*e)}
	}
	out.tree = obj
	known := []string{fieldArgs, fieldWebhook}
	if flagger {
		known = append(known, flaggerFields...)
	}
	var errs []api.FieldError
	add := func(field, format string, a ...any) {
		errs = append(errs, out.at(field, fmt.Sprintf(format, a...)))
	}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		v := obj[key]
		switch {
		case key == "":
			// The field is named after the body; the pointer names the
			// key "" (RFC 6901: "/").
			errs = append(errs, api.FieldError{Field: fieldBody, Pointer: ptr("/"), Message: fmt.Sprintf(
				"a field with an empty name; this endpoint's body takes %s", strings.Join(known, ", "))})
		case !slices.Contains(known, key):
			add(key, "unknown field; this endpoint's body takes %s", strings.Join(known, ", "))
		case key == fieldArgs:
			out.args = stringMap(fieldArgs, v, add)
		case key == fieldWebhook:
			if v != nil { // null: none, as templating tools write it
				out.webhook = decodeWebhook(v, add)
			}
		default: // Flagger's
			if out.flagger == nil {
				out.flagger = &flaggerPayload{}
			}
			f := out.flagger
			if key == "metadata" {
				f.metadata = stringMap(key, v, add)
				continue
			}
			s, ok := scalar(v)
			if !ok {
				add(key, "must be a string, got %s", spec.JSONKind(v))
				continue
			}
			switch key {
			case "name":
				f.name = &s
			case "namespace":
				f.namespace = &s
			case "phase":
				f.phase = s
			case "checksum":
				f.checksum = s
			}
		}
	}
	return out, errs
}

// decodeObject decodes a JSON or YAML object, numbers kept as written. An
// empty YAML document or a JSON null is an empty object.
func decodeObject(body []byte, isJSON bool) (map[string]any, *api.FieldError) {
	text := body
	if isJSON {
		if err := spec.CheckJSON(body); err != nil {
			return nil, &api.FieldError{Field: "body", Message: err.Error()}
		}
	} else {
		var err error
		text, err = spec.YAMLToJSON(body) // refuses anchors and aliases before expanding any
		if err != nil {
			return nil, &api.FieldError{Field: "body", Message: "invalid YAML: " + err.Error()}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &api.FieldError{Field: "body", Message: "invalid body: " + err.Error()}
	}
	if v == nil {
		return map[string]any{}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &api.FieldError{Field: "body", Message: fmt.Sprintf(`expected an object such as {"args": {"namespace": "echo"}}, got %s`, spec.JSONKind(v))}
	}
	return obj, nil
}

// stringMap reads an object of scalar values as strings: arguments are
// strings, and templating tools (Argo's jsonBody, Helm) turn them into
// numbers and booleans as readily as not.
func stringMap(field string, v any, add func(field, format string, a ...any)) map[string]string {
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		add(field, `must be an object of NAME: VALUE, such as {"namespace": "echo"}, got %s`, spec.JSONKind(v))
		return nil
	}
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k == "" {
			add(field, "an argument name must not be empty")
			continue
		}
		s, ok := scalar(obj[k])
		if !ok {
			add(field+"."+k, "must be a string (or a number or a boolean, read as a string), got %s", spec.JSONKind(obj[k]))
			continue
		}
		out[k] = s
	}
	return out
}

func decodeWebhook(v any, add func(field, format string, a ...any)) *webhookBody {
	obj, ok := v.(map[string]any)
	if !ok {
		add(fieldWebhook, `must be an object such as {"url": "https://hooks.example.com/ci", "events": ["completed"]}, got %s`, spec.JSONKind(v))
		return nil
	}
	out := &webhookBody{}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		field := fieldWebhook + "." + k
		switch k {
		case "":
			add(fieldWebhook, "a field with an empty name; webhook takes url, events")
		case "url":
			s, ok := obj[k].(string)
			if !ok {
				add(field, "must be a string, got %s", spec.JSONKind(obj[k]))
				continue
			}
			out.url, out.hasURL = s, true
		case "events":
			if obj[k] == nil {
				continue // the default, as if absent
			}
			events, ok := obj[k].([]any)
			if !ok {
				add(field, `must be a list of event types ("measurement", "completed"), got %s`, spec.JSONKind(obj[k]))
				continue
			}
			out.events = []string{}
			for i, e := range events {
				s, ok := e.(string)
				if !ok {
					add(fmt.Sprintf("%s[%d]", field, i), `must be a string, "measurement" or "completed", got %s`, spec.JSONKind(e))
					continue
				}
				if err := analyses.CheckWebhookEvents([]string{s}); err != nil {
					add(fmt.Sprintf("%s[%d]", field, i), "%s", err.Error())
					continue
				}
				out.events = append(out.events, s)
			}
		default:
			add(field, "unknown field; webhook takes url, events")
		}
	}
	if _, ok := obj["url"]; !ok {
		add(fieldWebhookURL, "is required")
	}
	return out
}

// scalar returns a string, number or boolean as a string.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
