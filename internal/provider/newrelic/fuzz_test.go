package newrelic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeAnswer holds the decoder of the usual answer to
// encoding/json: on any body it decodes, it decodes as json.Unmarshal
// does, and it never panics.
func FuzzDecodeAnswer(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow answer
		if !decodeAnswer(body, &fast) {
			return
		}
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("decoded a body encoding/json refuses: %v", err)
		}
		for _, a := range []*answer{&fast, &slow} {
			if len(a.Errors) == 0 {
				a.Errors = nil
			}
			if len(a.Data.Actor.Account.NRQL.Results) == 0 {
				a.Data.Actor.Account.NRQL.Results = nil
			}
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoded %+v; encoding/json %+v", fast, slow)
		}
	})
}
