package server

import (
	"crypto/sha256"
	"maps"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/canaryd/canaryd/internal/compile"
	"github.com/canaryd/canaryd/internal/spec"
)

// defaultCompiledCacheSize is how many compiled specs a server keeps: one
// per distinct body and arguments that callers send again and again (Argo
// Rollouts' web provider posts the same body at every interval of every
// rollout's analysis). A few kilobytes each.
const defaultCompiledCacheSize = 256

// maxCachedBody is the largest body whose compiled spec is kept. Templates
// are a few kilobytes, kubectl's managedFields included; what a larger body
// compiles to (its queries, its conditions) is not kept, so that the cache
// holds at most a few megabytes whatever callers send.
const maxCachedBody = 64 << 10

// compiledKey names what a compiled spec was compiled from. For a posted
// document, doc is nil and sum covers the body, its media type, the
// arguments and the route's options; for a named template, doc is the
// template's parsed document (a reload makes a new one, so a reloaded
// template is never answered from the old one's entries) and sum covers the
// arguments and the route's options.
type compiledKey struct {
	doc *spec.Document
	sum [sha256.Size]byte
}

// compiledEntry is what a request needs of a compiled spec.
type compiledEntry struct {
	compiled *compile.Compiled
	// template is the document's name when it is a template.
	template string
	// round is the plan rounds of it run (roundPlan), made by the first.
	round *roundPlan
}

// newCompiledCache returns the cache of the specs compiled most recently,
// so that a body sent again is neither parsed, resolved, validated nor
// compiled again: the size most recently used, safe for concurrent use.
// Only specs that compiled without a problem are kept. The entries are
// shared by every request that finds them and must not be changed: a
// request that needs a different plan copies it, or makes it once for the
// entry (roundPlan).
func newCompiledCache(size int) *lru.Cache[compiledKey, compiledEntry] {
	c, err := lru.New[compiledKey, compiledEntry](size)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}

// keySum hashes the parts of a key, each length-prefixed so that no two
// different lists of parts hash alike, then the arguments in name order.
func keySum(params queryParams, args map[string]string, parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		l := uint64(len(b))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	flag := func(b bool) []byte {
		if b {
			return []byte{1}
		}
		return []byte{0}
	}
	// Only backtest changes how a spec is compiled (its duration is not
	// bounded); the others are read per request.
	write(flag(params.backtest))
	for _, p := range parts {
		write(p)
	}
	if len(args) == 0 {
		// Sorting no keys still allocates their iterator: a round
		// without arguments, every time.
		var sum [sha256.Size]byte
		h.Sum(sum[:0])
		return sum
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		write([]byte(name))
		write([]byte(args[name]))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
