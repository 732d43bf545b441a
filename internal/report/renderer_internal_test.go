package report

import (
	"fmt"
	"testing"
)

// TestByteCacheBound checks that the cache keeps within its bytes,
// dropping the entries used least recently, and keeps nothing bigger than
// its bound.
func TestByteCacheBound(t *testing.T) {
	c := newByteCache(1000)
	for i := range 20 {
		c.add(fmt.Sprint(i), i, 100-1) // 100 bytes with its key of 1 byte
		if i == 5 {
			c.get("0") // used: kept over 1
		}
	}
	if c.bytes > c.max || c.len() > 10 {
		t.Errorf("%d entries of %d bytes in all, bound %d", c.len(), c.bytes, c.max)
	}
	if _, ok := c.get("19"); !ok {
		t.Error("the newest entry was dropped")
	}
	if _, ok := c.get("1"); ok {
		t.Error("an old entry used least recently was kept")
	}
	c.add("big", 0, 2000)
	if _, ok := c.get("big"); ok {
		t.Error("an entry beyond the bound was kept")
	}
}
