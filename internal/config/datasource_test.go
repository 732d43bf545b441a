package config

import (
	"reflect"
	"strings"
	"testing"
)

// yamlKeys are the keys a struct reads from YAML, its inline fields' keys
// included.
func yamlKeys(t reflect.Type, into map[string]reflect.Type) {
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			if f.Type.Kind() == reflect.Struct {
				yamlKeys(f.Type, into)
			}
			continue
		}
		if name != "" && name != "-" {
			into[name] = f.Type
		}
	}
}

// TestDatasourceKeysDocumented checks that every key the reference lists
// for a datasource is one the file reads, down to its nested keys, and
// that every key the file reads, Prometheus' aside, is listed.
func TestDatasourceKeysDocumented(t *testing.T) {
	top := map[string]reflect.Type{}
	yamlKeys(reflect.TypeFor[fileDatasource](), top)
	listed := map[string]bool{}
	check := func(key string) {
		keys := top
		for part := range strings.SplitSeq(key, ".") {
			ft, ok := keys[part]
			if !ok {
				t.Errorf("the reference lists %s, which a datasource does not read", key)
				return
			}
			listed[part] = true
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			keys = map[string]reflect.Type{}
			if ft.Kind() == reflect.Struct {
				yamlKeys(ft, keys)
			}
		}
	}
	for _, k := range datasourceKeys {
		check(k.key)
	}
	for _, k := range oldDatasourceKeys {
		check(k.key)
	}
	for _, own := range []string{"name", "url", "headers", "sigv4", "basicAuth", "bearerTokenFile", "tls"} {
		if !listed[own] {
			t.Errorf("the reference does not list %s", own)
		}
	}
}
