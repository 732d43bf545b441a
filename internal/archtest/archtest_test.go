package archtest_test

import (
	"sync"
	"testing"

	"github.com/canaryd/canaryd/internal/archtest"
)

// module is the module's packages, listed once for every test.
var module = sync.OnceValues(func() (*archtest.Module, error) { return archtest.Load(".") })

// load returns the module, or fails t.
func load(t *testing.T) *archtest.Module {
	t.Helper()
	m, err := module()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Packages {
		if p.Error != nil {
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
	}
	return m
}

// checkKnown fails t for each of found not in known ("NAME: X is not
// allowed") and each of known not found ("NAME: X is listed as known but
// holds now: take it off the list").
func checkKnown(t *testing.T, name string, found []string, known []string, fix string) {
	t.Helper()
	listed := make(map[string]bool, len(known))
	for _, k := range known {
		if listed[k] {
			t.Errorf("%s: %s is listed twice", name, k)
		}
		listed[k] = true
	}
	for _, f := range found {
		if !listed[f] {
			t.Errorf("%s: %s (%s)", name, f, fix)
		}
		delete(listed, f)
	}
	for _, k := range known {
		if listed[k] {
			t.Errorf("%s: %s is listed as known but no longer is: take it off the list", name, k)
			delete(listed, k)
		}
	}
}
