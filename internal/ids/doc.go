// Package ids names a replica of canaryd and makes the parts of the
// ids of its analyses.
//
// A replica's name (an RFC 1123 DNS label, the pod name in Kubernetes)
// says which replica holds an analysis's lease in the store; it is not part
// of any id. An analysis's id is "<epoch><random>": when the process that
// started it began (9 characters), so that a canaryd on memory: can tell
// an id made before it started (whose analysis went with that process)
// from one it never made, and 26 random characters. Ids made by earlier
// versions carry a replica's name before a dot ("<replica>.<epoch><random>")
// or no epoch at all; they are still read, and only ever looked up as they
// are.
//
// The random part, and canaryd's request ids, are crypto/rand's bytes,
// read a buffer at a time (Random). Beside that, the package is pure: it
// parses and formats, and must not resolve names, open connections or
// log.
package ids
