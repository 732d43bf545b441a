package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/spec"
)

func TestCompiledCacheKeepsTheMostRecent(t *testing.T) {
	c := newCompiledCache(2)
	key := func(s string) []byte { return appendKey(nil, queryParams{}, nil, []byte(s)) }
	entry := func(name string) compiledEntry { return compiledEntry{template: name} }
	c.Add(nil, key("a"), entry("a"))
	c.Add(nil, key("b"), entry("b"))
	if _, ok := c.Get(nil, key("a")); !ok { // a is now the most recent
		t.Fatal("a is missing")
	}
	c.Add(nil, key("c"), entry("c"))
	if _, ok := c.Get(nil, key("b")); ok {
		t.Error("b, the least recently used, is still kept")
	}
	for _, k := range []string{"a", "c"} {
		if e, ok := c.Get(nil, key(k)); !ok || e.template != k {
			t.Errorf("%s: %+v %v", k, e, ok)
		}
	}
	if c.Len() != 2 {
		t.Errorf("%d entries, want 2", c.Len())
	}
	c.Add(nil, key("a"), entry("a again"))
	if e, ok := c.Get(nil, key("a")); !ok || e.template != "a again" || c.Len() != 2 {
		t.Errorf("a added again: %+v %v, %d entries", e, ok, c.Len())
	}
	doc := &spec.Document{}
	if _, ok := c.Get(doc, key("a")); ok {
		t.Error("a template's key found a body's entry")
	}
}

// TestCompiledCacheBoundsItsKeys checks that the keys the cache holds
// take at most its bytes: the least recently used go first.
func TestCompiledCacheBoundsItsKeys(t *testing.T) {
	c := newCompiledCache(100)
	c.maxBytes = 3000
	body := func(b byte) []byte { return appendKey(nil, queryParams{}, nil, bytes.Repeat([]byte{b}, 1000)) }
	for b := byte('a'); b <= 'e'; b++ {
		c.Add(nil, body(b), compiledEntry{template: string(b)})
		if c.bytes > c.maxBytes {
			t.Fatalf("after %c: keys of %d bytes held, above %d", b, c.bytes, c.maxBytes)
		}
	}
	if c.Len() != 2 {
		t.Errorf("%d entries of a kilobyte each within 3000 bytes, want 2", c.Len())
	}
	for b, want := range map[byte]bool{'a': false, 'c': false, 'd': true, 'e': true} {
		if _, ok := c.Get(nil, body(b)); ok != want {
			t.Errorf("%c kept: %v, want %v", b, ok, want)
		}
	}
}

func TestAppendKey(t *testing.T) {
	key := func(params queryParams, args map[string]string, parts ...string) string {
		var bs [][]byte
		for _, p := range parts {
			bs = append(bs, []byte(p))
		}
		return string(appendKey(nil, params, args, bs...))
	}
	base := key(queryParams{}, map[string]string{"a": "1", "b": "2"}, "json", "body")
	same := key(queryParams{}, map[string]string{"b": "2", "a": "1"}, "json", "body")
	if base != same {
		t.Error("the same arguments in another order make another key")
	}
	long := strings.Repeat("x", 300) // a length of two bytes
	for name, other := range map[string]string{
		"another body":            key(queryParams{}, map[string]string{"a": "1", "b": "2"}, "json", "body "),
		"another media type":      key(queryParams{}, map[string]string{"a": "1", "b": "2"}, "yaml", "body"),
		"another argument":        key(queryParams{}, map[string]string{"a": "1", "b": "3"}, "json", "body"),
		"one argument fewer":      key(queryParams{}, map[string]string{"a": "1"}, "json", "body"),
		"no arguments":            key(queryParams{}, nil, "json", "body"),
		"parts split apart":       key(queryParams{}, map[string]string{"a": "1", "b": "2"}, "jsonb", "ody"),
		"name and value moved":    key(queryParams{}, map[string]string{"a1": "", "b": "2"}, "json", "body"),
		"an argument in the body": key(queryParams{}, map[string]string{"b": "2"}, "json", "body\x01a\x011"),
		"a long part":             key(queryParams{}, map[string]string{"a": "1", "b": "2"}, "json", long),
		"a backtest":              key(queryParams{backtest: true}, map[string]string{"a": "1", "b": "2"}, "json", "body"),
	} {
		if other == base {
			t.Errorf("%s makes the original's key", name)
		}
	}
	// Options read per request do not change how a spec compiles.
	if key(queryParams{wait: true, timeout: true, webhook: true}, map[string]string{"a": "1", "b": "2"}, "json", "body") != base {
		t.Error("wait, timeout or webhook changed the key")
	}
}

// FuzzAppendKey holds keys to naming what they were made from: two lists
// of parts and arguments make the same key only when they are the same.
func FuzzAppendKey(f *testing.F) {
	f.Add("json", "body", "a", "1", false, "json", "body", "a", "1", false)
	f.Add("json", "bo", "dy", "", false, "json", "bod", "y", "", false)
	f.Add("yaml", "", "", "", true, "yaml", "", "", "", false)
	f.Fuzz(func(t *testing.T, mt1, body1, name1, value1 string, bt1 bool, mt2, body2, name2, value2 string, bt2 bool) {
		key := func(mt, body, name, value string, bt bool) []byte {
			args := map[string]string{}
			if name != "" {
				args[name] = value
			}
			return appendKey(nil, queryParams{backtest: bt}, args, []byte(mt), []byte(body))
		}
		same := mt1 == mt2 && body1 == body2 && bt1 == bt2 && name1 == name2 && (name1 == "" || value1 == value2)
		if got := bytes.Equal(key(mt1, body1, name1, value1, bt1), key(mt2, body2, name2, value2, bt2)); got != same {
			t.Errorf("keys equal: %v, want %v", got, same)
		}
	})
}

// TestCompiledCacheGetAllocatesNothing holds a cache hit to no
// allocation: the key's text is looked up as it is.
func TestCompiledCacheGetAllocatesNothing(t *testing.T) {
	c := newCompiledCache(2)
	key := appendKey(nil, queryParams{}, map[string]string{"namespace": "echo"}, []byte("json"), bytes.Repeat([]byte("{}"), 200))
	c.Add(nil, key, compiledEntry{template: "t"})
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := c.Get(nil, key); !ok {
			t.Fatal("not found")
		}
	}); n != 0 {
		t.Errorf("a cache hit made %v allocations, want none", n)
	}
}
