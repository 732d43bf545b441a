package credentials

import "sync"

// Cache remembers what a provider builds from one set of credentials (an
// endpoint: its URLs and headers), keyed by the credentials themselves,
// so that the measurements with the same ones share it and a rotated
// Secret's new values get their own. It holds at most its size; beyond,
// it is emptied. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	size int
	mu   sync.Mutex
	m    map[K]V
}

// NewCache returns an empty Cache of at most size entries.
func NewCache[K comparable, V any](size int) *Cache[K, V] {
	return &Cache[K, V]{size: size, m: map[K]V{}}
}

// Get returns what is remembered for k, or else build(k), remembered
// unless it is an error. build runs without the lock: two callers may
// build for the same k, and either result is kept.
func (c *Cache[K, V]) Get(k K, build func(K) (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build(k)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.m) >= c.size {
		clear(c.m)
	}
	c.m[k] = v
	c.mu.Unlock()
	return v, nil
}
