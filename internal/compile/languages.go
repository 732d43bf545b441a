package compile

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider"
)

// checkLanguages parses the query and expression fields of a metric's
// provider configuration, config (its JSON, arguments substituted), each
// with its language (Provider.Languages, lang.Language.Check), and
// returns a problem for each one that does not parse, on its path
// relative to the metric ("provider.prometheus.query"); a path whose last
// key is "*" is every field of that object. A field that is missing, empty
// or not a string is the provider's to report.
func checkLanguages(name string, p provider.Provider, config json.RawMessage) []api.FieldError {
	langs := p.Languages()
	if len(langs) == 0 {
		return nil
	}
	var tree any
	if json.Unmarshal(config, &tree) != nil {
		return nil
	}
	var out []api.FieldError
	for _, f := range slices.Sorted(maps.Keys(langs)) {
		parent, each := strings.CutSuffix(f, ".*")
		fields := map[string]any{f: lookupPath(tree, f)}
		if each {
			obj, _ := lookupPath(tree, parent).(map[string]any)
			fields = make(map[string]any, len(obj))
			for k, v := range obj {
				fields[parent+"."+k] = v
			}
		}
		for _, field := range slices.Sorted(maps.Keys(fields)) {
			text, _ := fields[field].(string)
			if strings.TrimSpace(text) == "" {
				continue
			}
			if msg := langs[f].Check(text); msg != "" {
				out = append(out, api.FieldError{Field: "provider." + name + "." + field, Message: msg})
			}
		}
	}
	return out
}

// lookupPath is the value at a dotted path ("counts.canary.bad") of a
// decoded JSON tree; nil when it is not there.
func lookupPath(tree any, path string) any {
	for _, key := range strings.Split(path, ".") {
		obj, ok := tree.(map[string]any)
		if !ok {
			return nil
		}
		tree = obj[key]
	}
	return tree
}
