package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/canaryd/canaryd/internal/canarybench"
)

func TestWrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cases.ndjson")
	if err := run([]string{"-scale", "1", "-seed", "3", "-write", out}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := canarybench.ReadCases(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != len(canarybench.Generate(3, 1)) {
		t.Errorf("wrote %d cases", len(cases))
	}
	if err := run([]string{"-looks", "no-such-case"}); err == nil {
		t.Error("-looks of a case that does not exist printed nothing and no error")
	}
	if err := run([]string{"-scale", "0"}); err == nil {
		t.Error("-scale 0 was taken")
	}
	if err := run([]string{"-scale", "1", "-history=false", "-seed", "3"}); err != nil {
		t.Errorf("-history=false: %v", err)
	}
	if err := run([]string{"-scale", "1", "-dispersion", "0.5"}); err == nil {
		t.Error("-dispersion 0.5 was taken")
	}
}
