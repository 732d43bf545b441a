package provider

import (
	"strings"

	"github.com/canaryd/canaryd/internal/redact"
)

// CredentialField is a field of a provider's configuration that may hold
// a credential, which everything that shows the configuration masks (a
// template as GET /v1/templates/{name} shows it).
type CredentialField struct {
	// Path is the field's path in the configuration, its keys joined by
	// dots: "authentication.basicAuth.password". "[]" after a key is
	// every element of that list: "headers[].value".
	Path string
	// HeaderName, when set, makes the field a header's value, a
	// credential only when the header's name, the sibling field of this
	// name ("key"), is one (redact.IsCredentialHeader: Authorization,
	// X-Api-Key, …).
	HeaderName string
	// URL makes the field an address whose userinfo only is the
	// credential ("http://user:pass@host").
	URL bool
}

// Mask replaces, in place, the credentials of a decoded configuration
// (JSON as encoding/json decodes it into any) at the fields declared:
// a secret with redact.Mask, an address's userinfo with redact.Mask. A
// field that is missing, empty or of another type is left as it is.
func Mask(config any, fields []CredentialField) {
	for _, f := range fields {
		maskPath(config, strings.Split(f.Path, "."), f)
	}
}

// MaskAll replaces every string of a decoded configuration with
// redact.Mask: what is shown of a provider that canaryd does not know,
// whose credentials nothing declares.
func MaskAll(config any) any {
	switch x := config.(type) {
	case map[string]any:
		for k, v := range x {
			x[k] = MaskAll(v)
		}
	case []any:
		for i, v := range x {
			x[i] = MaskAll(v)
		}
	case string:
		if x != "" {
			return redact.Mask
		}
	}
	return config
}

func maskPath(node any, path []string, f CredentialField) {
	obj, ok := node.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	key, each := strings.CutSuffix(path[0], "[]")
	if each {
		list, _ := obj[key].([]any)
		for _, e := range list {
			maskPath(e, path[1:], f)
		}
		return
	}
	if len(path) > 1 {
		maskPath(obj[key], path[1:], f)
		return
	}
	v, ok := obj[key].(string)
	switch {
	case !ok || v == "":
	case f.URL:
		obj[key] = redact.Userinfo(v)
	case f.HeaderName != "":
		if name, _ := obj[f.HeaderName].(string); redact.IsCredentialHeader(name) {
			obj[key] = redact.Mask
		}
	default:
		obj[key] = redact.Mask
	}
}
