package credentials_test

import (
	"errors"
	"testing"

	"github.com/canaryd/canaryd/internal/credentials"
)

func TestCache(t *testing.T) {
	c := credentials.NewCache[string, int](2)
	builds := 0
	build := func(k string) (int, error) {
		builds++
		if k == "bad" {
			return 0, errors.New("bad")
		}
		return len(k), nil
	}
	for _, k := range []string{"a", "a", "bb", "a"} {
		if v, err := c.Get(k, build); err != nil || v != len(k) {
			t.Fatalf("Get(%q) = %d, %v", k, v, err)
		}
	}
	if builds != 2 {
		t.Errorf("%d builds for a, a, bb, a; want 2", builds)
	}
	if _, err := c.Get("bad", build); err == nil {
		t.Error("Get(bad): no error")
	}
	if _, err := c.Get("bad", build); err == nil || builds != 4 {
		t.Errorf("an error is remembered: %v, %d builds", err, builds)
	}
	// A third key empties the full cache: a is built again.
	c.Get("ccc", build)
	c.Get("a", build)
	if builds != 6 {
		t.Errorf("%d builds after the cache was emptied; want 6", builds)
	}
}
