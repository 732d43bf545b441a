package templates

import (
	"bytes"
	"encoding/json"

	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/provider"
	"github.com/canaryd/canaryd/internal/redact"
)

// View is the template's spec for reading (GET /v1/templates/{name}), its
// arguments unresolved and its credentials masked: the default values of
// secret arguments (compile.IsSecretArg), and the fields each provider
// declares credentials (Provider.CredentialFields). Every string of a
// provider's configuration that the store's providers do not know is
// masked, its credentials being undeclared. Empty objects (an unset
// authentication) are left out.
func (t *Template) View() map[string]any {
	raw, err := json.Marshal(&t.Document.Spec)
	if err != nil {
		return map[string]any{} // cannot happen: a parsed spec marshals
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return map[string]any{}
	}
	for _, a := range list(tree["args"]) {
		if arg, ok := a.(map[string]any); ok {
			if name, _ := arg["name"].(string); compile.IsSecretArg(name) && arg["value"] != nil {
				arg["value"] = redact.Mask
			}
		}
	}
	for _, m := range list(tree["metrics"]) {
		metric, _ := m.(map[string]any)
		providers, _ := metric["provider"].(map[string]any)
		for name, config := range providers {
			var p provider.Provider
			if t.providers != nil {
				p, _ = t.providers.Lookup(name)
			}
			if p == nil {
				providers[name] = provider.MaskAll(config)
				continue
			}
			provider.Mask(config, p.CredentialFields())
		}
	}
	prune(tree)
	return tree
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// prune removes the empty objects of a tree, deepest first.
func prune(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if prune(e) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any:
		for _, e := range x {
			prune(e)
		}
	}
	return false
}
