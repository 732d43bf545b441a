package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/canaryd/canaryd/internal/canarybench"
)

// written runs judgebench with args and -write, and reads back the cases
// it wrote.
func written(t *testing.T, args ...string) []canarybench.Case {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cases.ndjson")
	if err := run(append(args, "-write", out)); err != nil {
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
	return cases
}

func TestWrite(t *testing.T) {
	cases := written(t, "-scale", "1", "-seed", "3")
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
	for _, bad := range [][]string{{"-history-steps", "-1"}, {"-history-step", "0s"}, {"-history-step", "1500ms"}} {
		if err := run(append([]string{"-scale", "1"}, bad...)); err == nil {
			t.Errorf("%v was taken", bad)
		}
	}
}

// TestHistoryShape: -history-steps and -history-step shape every case's
// history, and leave its looks as they are.
func TestHistoryShape(t *testing.T) {
	d := written(t, "-scale", "1", "-seed", "3")
	w := written(t, "-scale", "1", "-seed", "3", "-history-steps", "2016", "-history-step", "5m")
	for i := range d {
		if len(d[i].History) != canarybench.HistorySteps || len(w[i].History) != 2016 || w[i].HistoryStepSeconds != 300 {
			t.Fatalf("%s: histories of %d and %d points (%d s), want %d and 2016 (300 s)", d[i].ID, len(d[i].History), len(w[i].History), w[i].HistoryStepSeconds, canarybench.HistorySteps)
		}
		if !reflect.DeepEqual(d[i].Looks, w[i].Looks) {
			t.Fatalf("%s: the looks changed with the history's length", d[i].ID)
		}
	}
}
