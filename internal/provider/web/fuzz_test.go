package web

import (
	"encoding/json"
	"testing"
)

// FuzzJSONPath holds the jsonPath subset to what it promises on any path
// and any JSON document: parsing either refuses the path or gives one that
// finds a value or an error, without a panic, and a parsed path has at
// most maxJSONPathSteps steps.
func FuzzJSONPath(f *testing.F) {
	for _, seed := range []struct{ path, doc string }{
		{"{$.a.b}", `{"a":{"b":1}}`},
		{"{$.items[*].v}", `{"items":[{"v":1},{"v":2}]}`},
		{"{$['a b'][0]}", `{"a b":[true]}`},
		{"{$.x[-1]}", `{"x":[]}`},
		{"{$.m.*}", `{"m":{"b":2,"a":1}}`},
		{"{$..a}", `{}`},
		{"{$.a[?(@.x)]}", `null`},
		{"", `"text"`},
	} {
		f.Add(seed.path, seed.doc)
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		jp, err := parseJSONPath(path)
		if err != nil {
			return
		}
		if len(jp.steps) > maxJSONPathSteps {
			t.Fatalf("%q: %d steps", path, len(jp.steps))
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		_, _ = jp.find(v) // a value or an error; a panic fails
	})
}
