package server

import (
	"testing"

	"github.com/canaryd/canaryd/internal/spec"
)

func TestCompiledCacheKeepsTheMostRecent(t *testing.T) {
	c := newCompiledCache(2)
	key := func(s string) compiledKey { return compiledKey{sum: keySum(queryParams{}, nil, []byte(s))} }
	entry := func(name string) compiledEntry { return compiledEntry{template: name} }
	c.Add(key("a"), entry("a"))
	c.Add(key("b"), entry("b"))
	if _, ok := c.Get(key("a")); !ok { // a is now the most recent
		t.Fatal("a is missing")
	}
	c.Add(key("c"), entry("c"))
	if _, ok := c.Get(key("b")); ok {
		t.Error("b, the least recently used, is still kept")
	}
	for _, k := range []string{"a", "c"} {
		if e, ok := c.Get(key(k)); !ok || e.template != k {
			t.Errorf("%s: %+v %v", k, e, ok)
		}
	}
	if c.Len() != 2 {
		t.Errorf("%d entries, want 2", c.Len())
	}
}

func TestKeySum(t *testing.T) {
	base := keySum(queryParams{}, map[string]string{"a": "1", "b": "2"}, []byte("json"), []byte("body"))
	same := keySum(queryParams{}, map[string]string{"b": "2", "a": "1"}, []byte("json"), []byte("body"))
	if base != same {
		t.Error("the same arguments in another order hash differently")
	}
	for name, other := range map[string][32]byte{
		"another body":         keySum(queryParams{}, map[string]string{"a": "1", "b": "2"}, []byte("json"), []byte("body ")),
		"another media type":   keySum(queryParams{}, map[string]string{"a": "1", "b": "2"}, []byte("yaml"), []byte("body")),
		"another argument":     keySum(queryParams{}, map[string]string{"a": "1", "b": "3"}, []byte("json"), []byte("body")),
		"one argument fewer":   keySum(queryParams{}, map[string]string{"a": "1"}, []byte("json"), []byte("body")),
		"parts split apart":    keySum(queryParams{}, map[string]string{"a": "1", "b": "2"}, []byte("jsonb"), []byte("ody")),
		"name and value moved": keySum(queryParams{}, map[string]string{"a1": "", "b": "2"}, []byte("json"), []byte("body")),
		"a backtest":           keySum(queryParams{backtest: true}, map[string]string{"a": "1", "b": "2"}, []byte("json"), []byte("body")),
	} {
		if other == base {
			t.Errorf("%s hashes as the original", name)
		}
	}
	// Options read per request do not change how a spec compiles.
	if keySum(queryParams{wait: true, timeout: true, webhook: true}, map[string]string{"a": "1", "b": "2"}, []byte("json"), []byte("body")) != base {
		t.Error("wait, timeout or webhook changed the key")
	}
	doc := &spec.Document{}
	if (compiledKey{doc: doc, sum: base}) == (compiledKey{sum: base}) {
		t.Error("a template's key equals a body's")
	}
}
