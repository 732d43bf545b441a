package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// The kinds the chart and the overlays render, by apiVersion and kind,
// with the Go types the API server decodes them into.
var schemaKinds = []struct {
	apiVersion, kind string
	typ              reflect.Type
}{
	{"apps/v1", "Deployment", reflect.TypeFor[appsv1.Deployment]()},
	{"v1", "Service", reflect.TypeFor[corev1.Service]()},
	{"v1", "ServiceAccount", reflect.TypeFor[corev1.ServiceAccount]()},
	{"v1", "ConfigMap", reflect.TypeFor[corev1.ConfigMap]()},
	{"v1", "Secret", reflect.TypeFor[corev1.Secret]()},
	{"v1", "Namespace", reflect.TypeFor[corev1.Namespace]()},
	{"policy/v1", "PodDisruptionBudget", reflect.TypeFor[policyv1.PodDisruptionBudget]()},
	{"networking.k8s.io/v1", "NetworkPolicy", reflect.TypeFor[networkingv1.NetworkPolicy]()},
	{"monitoring.coreos.com/v1", "ServiceMonitor", reflect.TypeFor[monitoringv1.ServiceMonitor]()},
}

var schemas struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the schemas' directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if schemas.dir != "" {
		_ = os.RemoveAll(schemas.dir)
	}
	os.Exit(code)
}

// kubeconformValidator is kubeconform's validator in strict mode (unknown
// fields and duplicate keys refused), on schemas that need no network:
// each kind's JSON schema is made from the Go type of k8s.io/api (or of
// the Prometheus Operator, for ServiceMonitor) that the API server
// decodes it into, every object closed to fields the type does not have.
// They are written once, in kubeconform's layout, as "strict" schemas.
func kubeconformValidator(t *testing.T) validator.Validator {
	t.Helper()
	schemas.once.Do(func() {
		dir, err := os.MkdirTemp("", "canaryd-kubeconform-")
		if err != nil {
			schemas.err = err
			return
		}
		schemas.dir = dir
		sub := filepath.Join(dir, "master-standalone-strict")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			schemas.err = err
			return
		}
		for _, k := range schemaKinds {
			b, err := json.MarshalIndent(kindSchema(k.apiVersion, k.kind, k.typ), "", " ")
			if err != nil {
				schemas.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(sub, schemaFile(k.apiVersion, k.kind)), b, 0o644); err != nil {
				schemas.err = err
				return
			}
		}
	})
	if schemas.err != nil {
		t.Fatal(schemas.err)
	}
	v, err := validator.New(
		[]string{schemas.dir + "/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"},
		validator.Opts{Strict: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// schemaFile is kubeconform's name for a kind's schema: kind-group-version.
func schemaFile(apiVersion, kind string) string {
	group, version, found := strings.Cut(apiVersion, "/")
	if !found {
		return strings.ToLower(kind) + "-" + apiVersion + ".json"
	}
	group, _, _ = strings.Cut(group, ".")
	return strings.ToLower(kind) + "-" + group + "-" + version + ".json"
}

// kubeconform validates every object with kubeconformValidator: each must
// be Valid, which needs a schema for its kind.
func kubeconform(t *testing.T, name string, objs []rendered) {
	t.Helper()
	v := kubeconformValidator(t)
	for _, o := range objs {
		res := v.ValidateResource(resource.Resource{Path: name, Bytes: o.yaml})
		if res.Status != validator.Valid {
			msg := fmt.Sprint(res.Err)
			for _, e := range res.ValidationErrors {
				msg += fmt.Sprintf("\n  %s: %s", e.Path, e.Msg)
			}
			t.Errorf("kubeconform -strict %s: %s %s: status %d: %s", name, o.Kind, o.Metadata.Name, res.Status, msg)
		}
	}
}

// kindSchema is the JSON schema of a kind: its Go type's, with apiVersion
// and kind fixed, as draft 4 (kubeconform's default).
func kindSchema(apiVersion, kind string, typ reflect.Type) map[string]any {
	g := schemaGen{defs: map[string]any{}}
	root := g.schema(typ)
	s := map[string]any{
		"$schema":     "http://json-schema.org/draft-04/schema#",
		"definitions": g.defs,
		"allOf": []any{root, map[string]any{
			"required": []string{"apiVersion", "kind"},
			"properties": map[string]any{
				"apiVersion": map[string]any{"enum": []string{apiVersion}},
				"kind":       map[string]any{"enum": []string{kind}},
			},
		}},
	}
	return s
}

type schemaGen struct {
	defs map[string]any
}

// special are the types whose JSON is not their Go structure (they have
// their own MarshalJSON), by package path and name.
var special = map[string]map[string]any{
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": {"oneOf": []any{
		map[string]any{"type": "string"}, map[string]any{"type": "integer"},
	}},
	"k8s.io/apimachinery/pkg/api/resource.Quantity": {"oneOf": []any{
		map[string]any{"type": "string", "pattern": `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`},
		map[string]any{"type": "number"},
	}},
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":      {"type": "string", "format": "date-time"},
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": {"type": "string", "format": "date-time"},
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":  {"type": "string"},
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":  {"type": "object"},
	"k8s.io/apimachinery/pkg/runtime.RawExtension":   {},
	"encoding/json.RawMessage":                       {},
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := special[t.PkgPath()+"."+t.Name()]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string"} // base64
		}
		return map[string]any{"type": []string{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := strings.NewReplacer("/", ".", "~", ".").Replace(t.PkgPath() + "." + t.Name())
		if t.Name() == "" {
			return g.object(t)
		}
		ref := map[string]any{"$ref": "#/definitions/" + name}
		if _, done := g.defs[name]; done {
			return ref
		}
		g.defs[name] = nil // being made: a recursive use refers to it
		g.defs[name] = g.object(t)
		return ref
	}
	panic(fmt.Sprintf("no JSON schema for %s", t))
}

// object is a struct's schema: its JSON fields, embedded structs' inlined,
// no others; the fields without omitempty required.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var fields func(t reflect.Type)
	fields = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			if f.Anonymous && name == "" {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					fields(ft)
					continue
				}
			}
			if name == "" {
				name = f.Name
			}
			props[name] = g.schema(f.Type)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && !strings.Contains(opts, "inline") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
	}
	fields(t)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// TestKubeconformRefuses: the schemas are strict and typed; an unknown
// field, a field of the wrong type, a missing required field and a
// duplicate key are each refused, and a kind without a schema is not
// waved through.
func TestKubeconformRefuses(t *testing.T) {
	v := kubeconformValidator(t)
	const base = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: canaryd
spec:
  selector:
    matchLabels: {app: canaryd}
  template:
    metadata:
      labels: {app: canaryd}
    spec:
      containers:
        - name: canaryd
          image: canaryd
%s`
	for _, tc := range []struct {
		name, extra string
		want        validator.Status
	}{
		{"valid", "          ports: [{name: http, containerPort: 8080}]\n", validator.Valid},
		{"unknown field", "          readinesProbe: {}\n", validator.Invalid},
		{"wrong type", "          ports: [{name: http, containerPort: \"8080\"}]\n", validator.Invalid},
		{"missing required field", "          ports: [{name: http}]\n", validator.Invalid},
		{"duplicate key", "          image: other\n", validator.Error},
		{"quantity", "          resources: {limits: {memory: 256Mx}}\n", validator.Invalid},
	} {
		res := v.ValidateResource(resource.Resource{Path: tc.name, Bytes: fmt.Appendf(nil, base, tc.extra)})
		if res.Status != tc.want {
			t.Errorf("%s: status %d (%v %v), want %d", tc.name, res.Status, res.Err, res.ValidationErrors, tc.want)
		}
	}
	res := v.ValidateResource(resource.Resource{Path: "job", Bytes: []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n")})
	if res.Status == validator.Valid {
		t.Errorf("a Job, which has no schema here, is Valid")
	}
}
