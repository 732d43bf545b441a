package server

import (
	"maps"
	"regexp"

	"github.com/canaryd/canaryd/internal/redact"
)

// userinfo matches the credentials of a URL (scheme://user:password@) in a
// value, wherever in the value it is.
var userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]+@`)

// redactArgs returns args with the credentials of every URL in their values
// replaced by *****: an argument may carry an address with credentials
// (arg.prom=http://user:password@prometheus:9090), which must show neither
// in the resource's args nor in the log. (Arguments named like secrets are
// masked whole already; see compile.IsSecretArg.) args itself is not changed.
func redactArgs(args map[string]string) map[string]string {
	var out map[string]string
	for k, v := range args {
		if r := userinfo.ReplaceAllString(v, "${1}"+redact.Mask+"@"); r != v {
			if out == nil {
				out = maps.Clone(args)
			}
			out[k] = r
		}
	}
	if out == nil {
		return args
	}
	return out
}
