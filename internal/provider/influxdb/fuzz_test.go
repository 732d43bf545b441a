package influxdb

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead: whatever a backend answers, reading it ends, with values or
// an error, never a panic, and never with more values than the bound.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var sc scratch
		values, err := sc.read(append([]byte(nil), body...), 3)
		if err == nil && values.len() > 3 {
			t.Fatalf("%d values, over the bound of 3", values.len())
		}
		if err == nil && values.len() > 0 {
			_ = values.display()
		}
	})
}
