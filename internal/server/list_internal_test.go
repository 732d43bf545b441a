package server

import (
	"testing"
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
	var after *Cursor
	for pages := 1; ; pages++ {
		page, more := a.Page(ListOptions{Limit: 10, Measurements: true, After: after})
		if len(page) != 1 || len(page[0].MetricResults[0].Measurements) != 2 {
			t.Fatalf("page %d with measurements over a page's bytes: %d analyses, want 1 with its 2 measurements", pages, len(page))
		}
		seen++
		if !more {
			break
		}
		c := cursorOf(page[0])
		after = &c
	}
	if seen != 3 {
		t.Errorf("%d pages, want 3", seen)
	}
	if page, more := a.Page(ListOptions{Limit: 10}); len(page) != 3 || more {
		t.Errorf("without measurements: %d analyses, more %v; want all 3 on one page", len(page), more)
	}
}
