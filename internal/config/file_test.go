package config

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestFileShapes checks what the file says of values of the wrong shape,
// of keys given twice and of a file that is not a mapping, each with its
// line; and that an empty file or a key without a value sets nothing.
func TestFileShapes(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string // "" for no problem
	}{
		{file: ""},
		{file: "listen:\nprometheus:\n# nothing\n"},
		{file: "- a\n", want: "line 1: the file must be a mapping of keys to values"},
		{file: "a: [\n", want: "line 1: did not find expected node content"},
		{file: "listen: :1\nlisten: :2\n", want: "line 2: listen: given twice"},
		{file: "webhookAllow: http://x/\n", want: "line 1: a string cannot be a list of strings (webhookAllow)"},
		{file: "webhookAllow: {a: b}\n", want: "line 1: a mapping cannot be a list of strings (webhookAllow)"},
		{file: "webhookAllow: [[a]]\n", want: "line 1: item 0: a list cannot be a string (webhookAllow)"},
		{file: "maxAnalyses: {n: 1}\n", want: "line 1: a mapping cannot be a string (maxAnalyses)"},
		{file: "\nmaxAnalyses: many\n", want: `line 2: maxAnalyses: invalid integer "many"`},
		{file: "prometheus:\n  - url: {a: b}\n    headers: [x]\n", want: "line 3: a list cannot be a mapping of strings"},
	} {
		path := writeFile(t, t.TempDir(), "c.yaml", tc.file)
		c, err := Load([]string{"--config", path}, env(), io.Discard)
		if tc.want == "" {
			if err != nil || c.Listen != DefaultListen || len(c.Datasources) != 1 {
				t.Errorf("%q: %v, want the defaults", tc.file, err)
			}
			continue
		}
		var cerr *Error
		if !errors.As(err, &cerr) || !strings.Contains(strings.Join(cerr.Problems, "\n"), path+": "+tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
}
