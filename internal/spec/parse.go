package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/canaryd/canaryd/api"
)

// bodyField is the Field of errors about the input as a whole.
const bodyField = "body"

// maxDepth bounds the nesting of decoded input. Argo documents, including
// kubectl's managedFields, nest a few dozen levels at most; the bound keeps
// hostile input from recursing without end.
const maxDepth = 256

// Parse decodes one input, JSON or YAML (told apart by content), into a
// Document. It accepts an Argo Rollouts document of apiVersion
// argoproj.io/v1alpha1 and kind AnalysisTemplate, ClusterAnalysisTemplate or
// AnalysisRun, exactly as `kubectl get -o yaml` prints it; a canaryd
// template, of apiVersion canaryd.io/v1alpha1 and kind AnalysisTemplate or
// ClusterAnalysisTemplate; or a bare spec {"metrics": [...], "args": [...],
// "dryRun": [...], "measurementRetention": [...], "scoring": {...}}.
//
// canaryd's extensions that Argo Rollouts cannot run, provider.judge and
// scoring, are errors in an argoproj.io/v1alpha1 document (Argo would
// refuse the metric, or drop the scoring and reach another verdict); like
// unknown fields, they do not keep the document from being returned.
//
// Every metadata field, and an AnalysisRun's spec.terminate, spec.ttlStrategy
// and status, are accepted and ignored. Any other unknown field, duplicate
// key or value of the wrong type is an error; Parse reports all of them, each
// with its path relative to the spec ("metrics[0].failureLimt"). Problems
// outside an Argo document's spec are reported on "apiVersion", "kind",
// "metadata…" or the top-level key; problems with the input as a whole
// (empty, not JSON or YAML, not an object) on "body".
//
// Parse checks the shape of the input only; Resolve and Validate check
// the spec's content (internal/compile takes a document through every
// step).
func Parse(data []byte) (*Document, []api.FieldError) {
	doc, _, errs := ParseInput(data)
	return doc, errs
}

// Input is one JSON or YAML input as Parse read it, kept for what is said
// of it after Parse, so that it is not read again: the providers'
// configurations of a document Parse refused (ProviderConfigs), the
// decoded value that problems' fields are found in (Value), and the tree
// of nodes their lines come from (Tree). It is not safe for concurrent
// use: Tree reads a JSON input the first time it is asked.
type Input struct {
	data  []byte
	value any
	tree  *yamlv3.Node
	// yamlRead says data was read as YAML, whatever came of it: its tree,
	// if any, is tree.
	yamlRead bool
}

// ParseInput is Parse, and the input as it read it. The Input is never
// nil.
func ParseInput(data []byte) (*Document, *Input, []api.FieldError) {
	d := decode(data)
	in := &Input{data: data, value: d.root, tree: d.tree, yamlRead: d.yamlRead}
	doc, errs := parseDecoded(d)
	return doc, in, errs
}

// Value is the input decoded as a tree of map[string]any, []any, string,
// json.Number, bool and nil, as encoding/json decodes JSON with
// UseNumber; nil when Parse refused the input as a whole (not JSON or
// YAML, anchors or aliases, too many nodes) or in is nil.
func (in *Input) Value() any {
	if in == nil {
		return nil
	}
	return in.value
}

// Tree is the input's tree of nodes, for the lines of its fields: nil
// when in is nil or the input is not YAML (nor JSON), has anchors or
// aliases or more than MaxYAMLNodes nodes. A YAML input's is the tree
// Parse read; a JSON input, which Parse decoded as JSON, is read as YAML
// for it the first time it is asked for.
func (in *Input) Tree() *yamlv3.Node {
	if in == nil {
		return nil
	}
	if !in.yamlRead {
		in.tree, in.yamlRead = NodeTree(in.data), true
	}
	return in.tree
}

// parseDecoded is Parse of a decoded input.
func parseDecoded(d decoded) (*Document, []api.FieldError) {
	root, text, tree, errs, fatal := d.root, d.text, d.tree, d.errs, d.fatal
	if fatal != nil {
		return nil, fatal
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, []api.FieldError{{Field: bodyField, Message: fmt.Sprintf(
			"expected an object (an Argo Rollouts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, or a bare spec), got %s",
			JSONKind(root))}}
	}

	c := &checker{errs: errs}
	document := isDocument(obj)
	if document {
		if !c.document(obj) {
			return nil, c.errs
		}
	} else {
		c.spec("", obj, "")
	}
	// A value of the wrong type is left out, so that the rest of the
	// document is decoded and checked in the same pass (Document.Pruned);
	// a problem that no field of the spec can be left out for stops here.
	var pruned []string
	for _, e := range c.errs {
		if e.Message == unknownField {
			continue
		}
		if e.Field == "spec" || e.Field == bodyField || !prune(obj, e.Field, document) {
			return nil, append(c.errs, c.extensions...)
		}
		pruned = append(pruned, e.Field)
	}
	c.errs = append(c.errs, c.extensions...)
	if len(pruned) > 0 {
		var err error
		if text, err = json.Marshal(obj); err != nil {
			return nil, c.errs
		}
	}

	// The input has been checked against the types, so this cannot fail
	// but for a bug; encoding/json now only has to fill in the values. With
	// unknown fields alone the document is still returned (encoding/json
	// skips them), so that callers can report the other problems too.
	var doc Document
	target := any(&doc)
	if !document {
		target = &doc.Spec
	}
	if err := json.Unmarshal(text, target); err != nil {
		if len(pruned) > 0 {
			return nil, c.errs
		}
		return nil, []api.FieldError{{Field: bodyField, Message: err.Error()}}
	}
	doc.pruned = pruned
	if tree != nil {
		// YAML, not JSON: a comment may have cut a condition short.
		doc.cutByComments = conditionsCutByComments(tree)
	}
	return &doc, c.errs
}

// prune sets the value at field (a path as the checker names it, relative
// to an Argo document's spec but for its own top-level fields) to null,
// which decodes as "not set", and reports whether it found it. Keys are
// matched longest first, so that a key with a "." of its own is found.
func prune(obj map[string]any, field string, document bool) bool {
	var node any = obj
	if document {
		first := field
		if i := strings.IndexAny(field, ".["); i >= 0 {
			first = field[:i]
		}
		if !slices.Contains([]string{"apiVersion", "kind", "metadata", "status"}, first) {
			node = obj["spec"]
		}
	}
	rest := field
	for {
		child, step, after, ok := fieldStep(node, rest)
		if !ok {
			return false
		}
		if after == "" {
			switch n := node.(type) {
			case map[string]any:
				n[step] = nil
			case []any:
				i, _ := strconv.Atoi(step)
				n[i] = nil
			}
			return true
		}
		node, rest = child, after
	}
}

// fieldStep takes the first step of path, a field as problems name it
// ("metrics[0].provider.prometheus.query"), into node, a decoded JSON
// value: a key of an object, matched longest first so that a key with a
// "." or "[" of its own is found ("app.kubernetes.io/name"), or an index of
// an array ("[0]"). It returns the member, the step (the key, or the index
// in decimal), and the rest of the path after it; ok is false when node
// has no such member.
func fieldStep(node any, path string) (child any, step, rest string, ok bool) {
	switch n := node.(type) {
	case map[string]any:
		key, found := "", false
		for k := range n {
			if k != "" && (!found || len(k) > len(key)) && strings.HasPrefix(path, k) &&
				(len(path) == len(k) || path[len(k)] == '.' || path[len(k)] == '[') {
				key, found = k, true
			}
		}
		if !found {
			return nil, "", "", false
		}
		return n[key], key, strings.TrimPrefix(path[len(key):], "."), true
	case []any:
		end := strings.IndexByte(path, ']')
		if !strings.HasPrefix(path, "[") || end < 0 {
			return nil, "", "", false
		}
		i, err := strconv.Atoi(path[1:end])
		if err != nil || i < 0 || i >= len(n) {
			return nil, "", "", false
		}
		return n[i], strconv.Itoa(i), strings.TrimPrefix(path[end+1:], "."), true
	}
	return nil, "", "", false
}

// unknownField is the message of a field that no type has.
const unknownField = "unknown field"

// isDocument tells an Argo document from a bare spec: a spec has none of a
// Kubernetes object's top-level fields.
func isDocument(obj map[string]any) bool {
	for _, k := range []string{"apiVersion", "kind", "spec"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decoded is what decode makes of an input.
type decoded struct {
	// root is the input as a tree of map[string]any, []any, string,
	// json.Number, bool and nil; text its JSON.
	root any
	text []byte
	// tree is a YAML input's tree of nodes (lines and comments); yamlRead
	// says the input was read as YAML, whatever came of it.
	tree     *yamlv3.Node
	yamlRead bool
	// errs are duplicate keys (decoding goes on); fatal any other
	// problem.
	errs, fatal []api.FieldError
}

// decode turns the input into a tree of map[string]any, []any, string,
// json.Number, bool and nil, and returns the JSON text of that tree and,
// for YAML, the tree of nodes it was read into (lines and comments).
// Duplicate keys are returned as errs (decoding goes on); any other problem
// is fatal: the input as a whole is not a document (one error on "body"),
// it has more than MaxYAMLNodes nodes, or it has YAML anchors or aliases
// (one error for each, up to a few).
func decode(data []byte) decoded {
	data = bytes.TrimPrefix(data, utf8BOM)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return decoded{fatal: emptyInput()}
	}

	if trimmed[0] == '{' || trimmed[0] == '[' {
		root, errs, err := decodeJSON(trimmed)
		if err == nil {
			return decoded{root: root, text: trimmed, errs: errs}
		}
		// A YAML flow mapping ({metrics: [...]}) starts with a brace too.
		in, refused, yerr := readYAML(data, MaxYAMLNodes)
		if len(refused) > 0 {
			return decoded{yamlRead: true, fatal: refused}
		}
		if yerr == nil {
			if root, errs, jerr := decodeJSON(in.text); jerr == nil && root != nil {
				return decoded{root: root, text: in.text, tree: in.root, yamlRead: true, errs: errs}
			}
		}
		return decoded{tree: in.root, yamlRead: true, fatal: bodyError("invalid JSON: " + err.Error())}
	}

	in, refused, err := readYAML(data, MaxYAMLNodes)
	if len(refused) > 0 {
		return decoded{yamlRead: true, fatal: refused}
	}
	if err != nil {
		return decoded{yamlRead: true, fatal: bodyError("invalid YAML: " + err.Error())}
	}
	root, errs, err := decodeJSON(in.text)
	if err != nil {
		return decoded{tree: in.root, yamlRead: true, fatal: bodyError("invalid YAML: " + err.Error())}
	}
	if root == nil {
		return decoded{tree: in.root, yamlRead: true, fatal: emptyInput()}
	}
	return decoded{root: root, text: in.text, tree: in.root, yamlRead: true, errs: errs}
}

func bodyError(msg string) []api.FieldError {
	return []api.FieldError{{Field: bodyField, Message: msg}}
}

func emptyInput() []api.FieldError {
	return bodyError("empty input: expected an Argo Rollouts AnalysisTemplate, ClusterAnalysisTemplate or AnalysisRun, or a bare spec")
}

// YAMLToJSON converts one YAML document to JSON as Parse reads YAML, for
// the other bodies that may be YAML (a template endpoint's arguments, a
// refused body decoded again to point at its problems): anchors and
// aliases are refused before anything expands them, with an *AnchorError;
// duplicate keys and a second document are errors too.
func YAMLToJSON(data []byte) ([]byte, error) {
	in, refused, err := readYAML(data, MaxYAMLNodes)
	if len(refused) > 0 {
		return nil, &AnchorError{Errors: refused}
	}
	return in.text, err
}

// NodeTree is the tree of nodes of one JSON or YAML document as Parse
// reads it, for the lines of its fields: nil when Parse would refuse it as
// a whole (not YAML, anchors or aliases, more than MaxYAMLNodes nodes).
func NodeTree(data []byte) *yamlv3.Node {
	in, refused, err := readYAML(bytes.TrimPrefix(data, utf8BOM), MaxYAMLNodes)
	if err != nil || len(refused) > 0 {
		return nil
	}
	return in.root
}

// AnchorError is YAMLToJSON's error for YAML refused while it was read:
// with anchors or aliases, or more than MaxYAMLNodes nodes.
type AnchorError struct {
	// Errors has one error for each anchor and alias, up to a few, each on
	// the field it is in (relative to an Argo document's spec), or the one
	// error on body of too many nodes.
	Errors []api.FieldError
}

// Error is the first anchor's or alias' error, with its field.
func (e *AnchorError) Error() string {
	if len(e.Errors) == 0 {
		return errAnchors.Error()
	}
	first := e.Errors[0]
	if len(e.Errors) > 1 {
		return fmt.Sprintf("%s: %s (and %d more)", first.Field, first.Message, len(e.Errors)-1)
	}
	return first.Field + ": " + first.Message
}

// decodeJSON decodes one JSON value, keeping numbers as json.Number.
// Duplicate keys, which encoding/json would silently resolve to the last,
// are returned as errors with their path.
func decodeJSON(data []byte) (any, []api.FieldError, error) {
	d := &jsonDecoder{dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	v, err := d.value("", 0)
	offset := d.dec.InputOffset()
	if err == nil {
		if _, terr := d.dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("unexpected data after the top-level value")
			rest := data[offset:]
			offset += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		}
	}
	if err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			offset = syntax.Offset
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("unexpected end of input")
		}
		line, col := position(data, offset)
		return nil, nil, fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	return v, d.dups, nil
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

type jsonDecoder struct {
	dec  *json.Decoder
	dups []api.FieldError
}

func (d *jsonDecoder) value(path string, depth int) (any, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth >= maxDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxDepth)
	}
	switch delim {
	case '{':
		obj := map[string]any{}
		for d.dec.More() {
			tok, err := d.dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := tok.(string)
			p := joinPath(path, key)
			if _, dup := obj[key]; dup {
				d.dups = append(d.dups, api.FieldError{Field: specRelative(p), Message: "duplicate key"})
			}
			if obj[key], err = d.value(p, depth+1); err != nil {
				return nil, err
			}
		}
		_, err := d.dec.Token() // '}'
		return obj, err
	case '[':
		arr := []any{}
		for i := 0; d.dec.More(); i++ {
			v, err := d.value(indexPath(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := d.dec.Token() // ']'
		return arr, err
	}
	return nil, fmt.Errorf("unexpected %q", delim)
}

// specRelative drops an Argo document's "spec." prefix from a path found
// before the input is known to be a document. A bare spec has no field
// "spec", so nothing of it is mistaken.
func specRelative(path string) string {
	return strings.TrimPrefix(path, "spec.")
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func indexPath(prefix string, i int) string {
	return prefix + "[" + strconv.Itoa(i) + "]"
}

// checker compares a decoded tree with the Go types it will be decoded
// into and collects every difference.
type checker struct {
	errs []api.FieldError
	// extensions are canaryd extensions used in an Argo document: errors
	// that, like unknown fields, leave the document decodable.
	extensions []api.FieldError
}

func (c *checker) add(field, msg string) {
	c.errs = append(c.errs, api.FieldError{Field: field, Message: msg})
}

// document checks an Argo document's top level, and its spec unless the
// apiVersion or kind is wrong (then every field of the spec would be noise).
// It reports whether the spec was checked.
func (c *checker) document(obj map[string]any) bool {
	const versions = APIVersion + ", or " + CanarydAPIVersion + " for a canaryd template"
	apiVersion, okVersion := obj["apiVersion"].(string)
	switch {
	case obj["apiVersion"] == nil:
		c.add("apiVersion", "apiVersion must be specified: "+versions)
	case !okVersion || (apiVersion != APIVersion && apiVersion != CanarydAPIVersion):
		c.add("apiVersion", fmt.Sprintf("unsupported apiVersion %s: canaryd accepts %s", display(obj["apiVersion"]), versions))
	}
	kind, okKind := obj["kind"].(string)
	const kinds = KindAnalysisTemplate + ", " + KindClusterAnalysisTemplate + " or " + KindAnalysisRun
	switch {
	case obj["kind"] == nil:
		c.add("kind", "kind must be specified: "+kinds)
	case !okKind || (kind != KindAnalysisTemplate && kind != KindClusterAnalysisTemplate && kind != KindAnalysisRun):
		c.add("kind", fmt.Sprintf("unsupported kind %s: canaryd accepts %s", display(obj["kind"]), kinds))
	case apiVersion == CanarydAPIVersion && kind == KindAnalysisRun:
		c.add("kind", fmt.Sprintf("unsupported kind %q for apiVersion %s: a canaryd template is an %s or a %s",
			kind, CanarydAPIVersion, KindAnalysisTemplate, KindClusterAnalysisTemplate))
	}
	if len(c.errs) > 0 {
		return false
	}

	for _, key := range slices.Sorted(maps.Keys(obj)) {
		v := obj[key]
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			c.metadata(v)
		case "spec":
			if v == nil {
				c.add("spec", "spec must be specified")
				continue
			}
			specObj, ok := v.(map[string]any)
			if !ok {
				c.add("spec", "must be an object, got "+JSONKind(v))
				continue
			}
			c.spec("", specObj, kind)
			if apiVersion == APIVersion {
				c.argoExtensions(specObj)
			}
		case "status":
			if kind != KindAnalysisRun {
				c.add(key, unknownField)
			}
		default:
			c.add(key, unknownField)
		}
	}
	if _, ok := obj["spec"]; !ok {
		c.add("spec", "spec must be specified")
	}
	return true
}

// metadata checks the metadata fields canaryd reads; the others (labels,
// uid, managedFields, …) are Kubernetes' business and are ignored.
func (c *checker) metadata(v any) {
	if v == nil {
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		c.add("metadata", "must be an object, got "+JSONKind(v))
		return
	}
	for _, key := range []string{"name", "namespace"} {
		if s, ok := obj[key]; ok && s != nil {
			if _, ok := s.(string); !ok {
				c.add("metadata."+key, "must be a string, got "+JSONKind(s))
			}
		}
	}
}

var specType = reflect.TypeFor[Spec]()

// spec checks a spec object. kind is the document's kind, "" for a bare
// spec.
func (c *checker) spec(path string, obj map[string]any, kind string) {
	fields := jsonFields(specType)
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		p := joinPath(path, key)
		if f, ok := fields[key]; ok {
			c.value(p, obj[key], f.Type)
			continue
		}
		switch {
		case key == "templates":
			c.add(p, "template references are not supported by canaryd: it cannot read other templates from a cluster; copy the referenced templates' metrics into this spec")
		case kind == KindAnalysisRun && (key == "terminate" || key == "ttlStrategy"):
			// Run-only fields that mean nothing to a run canaryd starts.
		default:
			c.add(p, unknownField)
		}
	}
}

// argoExtensions reports canaryd's extensions that an Argo document uses
// although Argo Rollouts cannot run them: a judge metric (Argo would refuse
// a metric without one of its providers), scoring (Argo would drop it and
// judge the analysis metric by metric) and an argument's freeText (Argo
// would drop it, and canaryd would substitute the value otherwise than
// Argo). noData is not among them: Argo
// drops it and runs the metric with its own behaviour, which canaryd's
// default is too.
func (c *checker) argoExtensions(specObj map[string]any) {
	const where = "use it in a bare spec or in a canaryd template (apiVersion " + CanarydAPIVersion +
		"), not in an " + APIVersion + " document"
	if specObj["scoring"] != nil {
		c.extensions = append(c.extensions, api.FieldError{Field: "scoring", Message: "scoring is a canaryd extension that " +
			"Argo Rollouts does not have (it would drop it and judge the analysis metric by metric): " + where})
	}
	args, _ := specObj["args"].([]any)
	for i, a := range args {
		arg, _ := a.(map[string]any)
		if arg["freeText"] != nil {
			c.extensions = append(c.extensions, api.FieldError{Field: indexPath("args", i) + ".freeText",
				Message: "freeText is a canaryd extension that Argo Rollouts does not have (it substitutes every value as it is): " + where +
					"; an " + APIVersion + " document has its values substituted as they are only where canaryd runs with --verbatim-args"})
		}
	}
	metrics, _ := specObj["metrics"].([]any)
	for i, m := range metrics {
		metric, _ := m.(map[string]any)
		provider, _ := metric["provider"].(map[string]any)
		if provider["judge"] != nil {
			c.extensions = append(c.extensions, api.FieldError{Field: indexPath("metrics", i) + ".provider.judge",
				Message: "provider.judge is a canaryd extension that Argo Rollouts does not have (it would refuse the metric): " + where})
		}
	}
}

// DecodeStrict decodes a provider's configuration, raw (its JSON, the
// arguments substituted), into into, a pointer to the provider's type,
// checking it as Parse checks a document: every unknown field, duplicate
// key and value of the wrong type is a problem, each on its path under
// path, the configuration's path relative to its metric
// ("provider.prometheus.timeout"), with Parse's messages. A field of type
// json.RawMessage is not looked into: its provider checks it. into is
// filled only when there is no problem.
func DecodeStrict(raw json.RawMessage, into any, path string) []api.FieldError {
	t := reflect.TypeOf(into)
	if t == nil || t.Kind() != reflect.Pointer {
		return []api.FieldError{{Field: path, Message: fmt.Sprintf("canaryd cannot decode into a %T", into)}}
	}
	root, dups, err := decodeJSON(raw)
	if err != nil {
		return []api.FieldError{{Field: path, Message: "invalid JSON: " + err.Error()}}
	}
	c := &checker{}
	for _, d := range dups {
		c.add(joinPath(path, d.Field), d.Message)
	}
	c.value(path, root, t.Elem())
	if len(c.errs) > 0 {
		return c.errs
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return []api.FieldError{{Field: path, Message: err.Error()}}
	}
	return nil
}

var (
	intOrStringType = reflect.TypeFor[IntOrString]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// value checks v against the Go type t it will be decoded into. A JSON null
// is accepted anywhere: encoding/json, like Kubernetes, reads it as "not
// set".
func (c *checker) value(path string, v any, t reflect.Type) {
	if v == nil {
		return
	}
	switch t {
	case rawMessageType:
		return // another provider's configuration: named, never read
	case intOrStringType:
		switch x := v.(type) {
		case string:
		case json.Number:
			if _, err := strconv.ParseInt(x.String(), 10, 32); err != nil {
				c.add(path, "must be an integer (a 32-bit one) or a string, got "+x.String())
			}
		default:
			c.add(path, "must be an integer or a string, got "+JSONKind(v))
		}
		return
	}

	switch t.Kind() {
	case reflect.Pointer:
		c.value(path, v, t.Elem())
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			c.add(path, "must be an object, got "+JSONKind(v))
			return
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[key]
			if !ok {
				c.add(joinPath(path, key), unknownField)
				continue
			}
			c.value(joinPath(path, key), obj[key], f.Type)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			c.add(path, "must be a list, got "+JSONKind(v))
			return
		}
		for i, e := range arr {
			c.value(indexPath(path, i), e, t.Elem())
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			c.add(path, "must be a string, got "+JSONKind(v)+quoteHint(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			c.add(path, "must be true or false, got "+JSONKind(v))
		}
	case reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			c.add(path, "must be an integer, got "+JSONKind(v))
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			c.add(path, fmt.Sprintf("must be an integer (a %d-bit one), got %s", t.Bits(), n))
		}
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			c.add(path, "must be a number, got "+JSONKind(v))
			return
		}
		if _, err := strconv.ParseFloat(n.String(), 64); err != nil {
			c.add(path, "must be a number within float64's range, got "+n.String())
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			c.add(path, "must be an object, got "+JSONKind(v))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			c.value(joinPath(path, key), obj[key], t.Elem())
		}
	default:
		// Every field of the spec types is one of the kinds above; a new
		// kind must be taught to the checker, not silently accepted.
		c.add(path, fmt.Sprintf("canaryd cannot check a field of Go type %s", t))
	}
}

// quoteHint explains the usual cause of a number or boolean where a string
// belongs: YAML reads unquoted 5, 1.0, yes and off as numbers and booleans.
func quoteHint(v any) string {
	switch v.(type) {
	case json.Number, bool:
		return " (quote the value in YAML)"
	}
	return ""
}

// jsonFields maps the JSON names of t's fields to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := make(map[string]reflect.StructField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if name := jsonName(f); f.IsExported() && name != "" {
			fields[name] = f
		}
	}
	return fields
}

// jsonName is the name encoding/json gives a field, "" for a field it
// skips.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// JSONKind names the JSON type of a decoded value, for messages: "an
// object", "a list", "a number"…
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// display shows a decoded scalar as it was written.
func display(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return JSONKind(v)
}
