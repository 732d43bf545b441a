package provider

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/analysis"
)

func TestRegistry(t *testing.T) {
	var got json.RawMessage
	p := Func(func(config json.RawMessage) (analysis.Source, map[string]string, []api.FieldError) {
		got = config
		return nil, nil, nil
	})
	r := NewRegistry().Register("web", p).Register("prometheus", p)
	if names := r.Names(); !slices.Equal(names, []string{"prometheus", "web"}) {
		t.Errorf("Names() = %v", names)
	}
	if _, ok := r.Lookup("datadog"); ok {
		t.Error("an unregistered name was found")
	}
	w, ok := r.Lookup("web")
	if !ok {
		t.Fatal("web not found")
	}
	w.Source(json.RawMessage(`{"cfg":1}`))
	if string(got) != `{"cfg":1}` {
		t.Errorf("the provider got %v", got)
	}

	for name, register := range map[string]func(){
		"twice":      func() { r.Register("web", p) },
		"empty name": func() { NewRegistry().Register("", p) },
		"nil":        func() { NewRegistry().Register("x", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering %s did not panic", name)
				}
			}()
			register()
		}()
	}
}
