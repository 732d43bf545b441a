package server

import (
	"encoding/binary"
	"maps"
	"slices"
	"sync"

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

// compiledEntry is what a request needs of a compiled spec.
type compiledEntry struct {
	compiled *compile.Compiled
	// template is the document's name when it is a template.
	template string
	// round is the plan rounds of it run (roundPlan), made by the first.
	round *roundPlan
}

// maxCompiledKeyBytes bounds the bytes of the keys the cache of compiled
// specs holds (their bodies, mostly): the least recently used entries are
// dropped while their keys take more. 256 documents of a few kilobytes
// each take a fraction of it; 256 of the largest cached body would take
// four times as much.
const maxCompiledKeyBytes = 4 << 20

// compiledCache keeps the specs compiled most recently, so that a body
// sent again is neither parsed, resolved, validated nor compiled again: at
// most size, and keys of at most maxBytes, the least recently used
// dropped first. Only specs that compiled without a problem are kept. The
// entries are shared by every request that finds them and must not be
// changed: a request that needs a different plan copies it, or makes it
// once for the entry (roundPlan). Its methods are safe for concurrent use.
type compiledCache struct {
	size, maxBytes int

	mu      sync.Mutex
	bytes   int // of the keys held
	entries map[cachedKey]*cachedSpec
	// recent is the ring of the entries, most recently used first
	// (recent.next) and least recently used last (recent.prev).
	recent cachedSpec
}

// cachedKey is what a compiled spec was compiled from, exactly. For a
// posted document, doc is nil and text holds the body, its media type,
// the arguments and the route's options; for a named template, doc is the
// template's parsed document (a reload makes a new one, so a reloaded
// template is never answered from the old one's entries) and text holds
// the arguments and the route's options (appendKey). Two keys are the same
// only when their bytes are: no sum stands for them, so that no two
// different bodies can ever find each other's spec.
type cachedKey struct {
	doc  *spec.Document
	text string
}

type cachedSpec struct {
	key        cachedKey
	entry      compiledEntry
	prev, next *cachedSpec
}

// newCompiledCache returns a cache of at most size compiled specs, whose
// keys take at most maxCompiledKeyBytes.
func newCompiledCache(size int) *compiledCache {
	if size < 1 {
		panic("server: a cache of compiled specs holds at least one")
	}
	c := &compiledCache{size: size, maxBytes: maxCompiledKeyBytes, entries: map[cachedKey]*cachedSpec{}}
	c.recent.prev, c.recent.next = &c.recent, &c.recent
	return c
}

// Get returns the entry of doc and the key text (appendKey), the most
// recently used from now on.
func (c *compiledCache) Get(doc *spec.Document, text []byte) (compiledEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Looked up without a copy of text.
	e, ok := c.entries[cachedKey{doc: doc, text: string(text)}]
	if !ok {
		return compiledEntry{}, false
	}
	c.unlink(e)
	c.pushFront(e)
	return e.entry, true
}

// Add keeps entry under doc and the key text (appendKey), the most
// recently used, and drops the least recently used while there are more
// than size or their keys take more than maxBytes.
func (c *compiledCache) Add(doc *spec.Document, text []byte, entry compiledEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[cachedKey{doc: doc, text: string(text)}]; ok {
		e.entry = entry
		c.unlink(e)
		c.pushFront(e)
		return
	}
	e := &cachedSpec{key: cachedKey{doc: doc, text: string(text)}, entry: entry}
	c.entries[e.key] = e
	c.bytes += len(e.key.text)
	c.pushFront(e)
	for len(c.entries) > c.size || c.bytes > c.maxBytes && len(c.entries) > 1 {
		old := c.recent.prev
		c.unlink(old)
		delete(c.entries, old.key)
		c.bytes -= len(old.key.text)
	}
}

// Len is how many specs are kept.
func (c *compiledCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *compiledCache) unlink(e *cachedSpec) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *compiledCache) pushFront(e *cachedSpec) {
	e.prev, e.next = &c.recent, c.recent.next
	e.prev.next, e.next.prev = e, e
}

// appendKey appends to b the text of a key (cachedKey.text): the
// route's options, parts, then the arguments in name order, each
// length-prefixed so that no two different lists of them make the same
// text.
func appendKey(b []byte, params queryParams, args map[string]string, parts ...[]byte) []byte {
	// Only backtest changes how a spec is compiled (its duration is not
	// bounded); the others are read per request.
	backtest := []byte{0}
	if params.backtest {
		backtest[0] = 1
	}
	b = appendPart(b, backtest)
	for _, p := range parts {
		b = appendPart(b, p)
	}
	if len(args) == 0 {
		// Sorting no keys still allocates their iterator: a round
		// without arguments, every time.
		return b
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		b = appendPart(b, name)
		b = appendPart(b, args[name])
	}
	return b
}

// appendPart appends p to b after its length.
func appendPart[P string | []byte](b []byte, p P) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}
