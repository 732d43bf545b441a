package archtest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/canaryd/canaryd/internal/archtest"
)

// TestPackageMap checks that every package has a doc comment and that the
// package map of docs/developing.md is the one its packages' doc comments
// make (`make docs` writes it).
func TestPackageMap(t *testing.T) {
	m := load(t)
	for _, p := range m.Packages {
		if p.Doc == "" {
			t.Errorf("%s has no doc comment", m.Rel(p.ImportPath))
		}
	}
	path := filepath.Join(m.Dir, "docs", "developing.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := archtest.ReplaceMap(doc, archtest.PackageMap(m))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Errorf("the package map of docs/developing.md is not what the packages' doc comments say: run `make docs`")
	}
}

// TestReplaceMap checks that the map replaces what is between its markers
// and nothing else.
func TestReplaceMap(t *testing.T) {
	doc := "# A\n\n" + archtest.MapStart + "\nold\n" + archtest.MapEnd + "\n\nafter\n"
	got, err := archtest.ReplaceMap([]byte(doc), "- `a` new\n")
	want := "# A\n\n" + archtest.MapStart + "\n\n- `a` new\n\n" + archtest.MapEnd + "\n\nafter\n"
	if err != nil || string(got) != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	if _, err := archtest.ReplaceMap([]byte("# A\n"), ""); err == nil {
		t.Error("a document without the markers: no error")
	}
}

// TestSummary checks that a doc comment's "Package name" or "Command
// name" is left out.
func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		p    archtest.Package
		want string
	}{
		{archtest.Package{Name: "clock", Dir: "/m/internal/clock", Doc: "Package clock gives the engine its notion of time."}, "gives the engine its notion of time."},
		{archtest.Package{Name: "main", Dir: "/m/cmd/canaryd", Doc: "Command canaryd is a service."}, "is a service."},
		{archtest.Package{Name: "x", Dir: "/m/x", Doc: "Other text."}, "Other text."},
	} {
		if got := archtest.Summary(tc.p); got != tc.want {
			t.Errorf("Summary(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
