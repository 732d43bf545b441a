package compile

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/provider"
)

// checkLanguages parses the query and expression fields of a metric's
// provider configuration, config (its JSON, arguments substituted), each
// with its language (Provider.Languages, lang.Language.Check), and
// returns a problem for each one that does not parse, on its path
// relative to the metric ("provider.prometheus.query"); a path whose last
// key is "*" is every field of that object, and "[]" after a key every
// element of that list ("metricDataQueries[].expression", each checked on
// its own path, "metricDataQueries[0].expression"). A field that is
// missing, empty or not a string is the provider's to report.
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
		fields := map[string]any{}
		expandPath(tree, "", f, fields)
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

// expandPath adds to out the values of a decoded JSON tree at a dotted
// path ("counts.canary.bad"), by their paths after prefix: a key "*" is
// every field of an object, and "[]" after a key every element of a list
// ("queries[].expression" adds "queries[0].expression"…). A path that is
// not there adds nothing.
func expandPath(tree any, prefix, path string, out map[string]any) {
	key, rest, more := strings.Cut(path, ".")
	key, list := strings.CutSuffix(key, "[]")
	obj, ok := tree.(map[string]any)
	if !ok {
		return
	}
	children := map[string]any{}
	if key == "*" {
		for k, v := range obj {
			children[joinKey(prefix, k)] = v
		}
	} else if v, ok := obj[key]; ok {
		children[joinKey(prefix, key)] = v
	}
	if list {
		elements := map[string]any{}
		for p, v := range children {
			arr, _ := v.([]any)
			for i, e := range arr {
				elements[p+"["+strconv.Itoa(i)+"]"] = e
			}
		}
		children = elements
	}
	for p, v := range children {
		if more {
			expandPath(v, p, rest, out)
		} else {
			out[p] = v
		}
	}
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
