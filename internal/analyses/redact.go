package analyses

import (
	"maps"

	"github.com/canaryd/canaryd/internal/redact"
)

// RedactArgs returns args with the credentials of every URL in their values
// replaced by *****: an argument may carry an address with credentials
// (arg.prom=http://user:password@prometheus:9090), which must show neither
// in the resource's args nor in the log. (Arguments named like secrets are
// masked whole already; see compile.IsSecretArg.) args itself is not changed.
func RedactArgs(args map[string]string) map[string]string {
	var out map[string]string
	for k, v := range args {
		if r := redact.Userinfo(v); r != v {
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
