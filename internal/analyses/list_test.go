package analyses

import (
	"testing"

	"github.com/canaryd/canaryd/internal/store"
)

// TestPageBytes checks that a page with measurements is cut once the
// analyses on it take the page's bytes (at least one a page), and that one
// without them is not.
func TestPageBytes(t *testing.T) {
	a := newTestAnalyses(t, 10)
	for range 3 {
		run, err := a.Start(plan(t, 2), StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		<-run.Done()
	}
	a.pageBytes = 1
	var seen int
	var after string
	for pages := 1; ; pages++ {
		page, next, err := a.Page(ListOptions{Filter: store.Filter{Limit: 10, Cursor: after}, Measurements: true})
		if err != nil || len(page) != 1 || len(page[0].MetricResults[0].Measurements) != 2 {
			t.Fatalf("page %d with measurements over a page's bytes: %d analyses (%v), want 1 with its 2 measurements", pages, len(page), err)
		}
		seen++
		if next == "" {
			break
		}
		after = next
	}
	if seen != 3 {
		t.Errorf("%d pages, want 3", seen)
	}
	if page, next, _ := a.Page(ListOptions{Filter: store.Filter{Limit: 10}}); len(page) != 3 || next != "" {
		t.Errorf("without measurements: %d analyses, next %q; want all 3 on one page", len(page), next)
	}
}
