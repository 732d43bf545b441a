package datadog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzFast holds the fast path to encoding/json: whatever answer it reads,
// it reads as encoding/json decodes Argo's shapes (the first series'
// points or the first column's values, the counts, the errors), and it
// never reads what encoding/json refuses.
func FuzzFast(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.*"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"Series":[{"pointlist":[[1,2]]}]}`, `{"series":[{"pointlist":[[1,2]]}],"series":[]}`,
		`{"series":[{"pointlist":[[1,2]],"pointList":[[3,4]]}]}`, `{"series":[{"p\u006fintlist":[[1,2]]}]}`,
		`{"data":{"errors":"a\"b","attributes":{"columns":[{"values":[1]}]}}}`, `{"data":{"attributes":{"columns":[{"values":[1e400]}]}}}`,
		`{"series":[null,{"pointlist":[[1,2]]}]}`, `{"series":[{"x":{"y":[1,{"z":"]"}]},"pointlist":[[1,-2.5e-3]]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if first, series, total, ok := fastV1(b); ok {
			var r responseV1
			if err := json.Unmarshal(b, &r); err != nil {
				if json.Valid(b) {
					t.Fatalf("fastV1 read what encoding/json refuses: %v", err)
				}
				return
			}
			n := 0
			for _, s := range r.Series {
				n += s.Pointlist.n
			}
			if len(r.Series) != series || n != total || r.Series[0].Pointlist != first {
				t.Fatalf("fastV1 = %+v %d %d; encoding/json %+v %d", first, series, total, r.Series, n)
			}
		}
		if first, columns, total, errs, ok := fastV2(b); ok {
			var r responseV2
			if err := json.Unmarshal(b, &r); err != nil {
				if json.Valid(b) {
					t.Fatalf("fastV2 read what encoding/json refuses: %v", err)
				}
				return
			}
			cols := r.Data.Attributes.Columns
			n := 0
			for _, c := range cols {
				n += c.Values.n
			}
			if len(cols) != columns || n != total || cols[0].Values != first || r.Data.Errors != errs {
				t.Fatalf("fastV2 = %+v %d %d %q; encoding/json %+v %d %q", first, columns, total, errs, cols, n, r.Data.Errors)
			}
		}
	})
}
