package report_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/canaryd/canaryd/internal/report"
)

// TestCountsHTML checks that the HTML report draws a counts metric's
// charts in the metric's section, with the judge's table beneath them.
func TestCountsHTML(t *testing.T) {
	page := writeHTML(t, report.NewFromAnalysis(countsAnalysis(t)))
	section := regexp.MustCompile(`<section class="metric" id="metric-errors"[\s\S]*?</section>`).FindString(page)
	if section == "" {
		t.Fatal("no section for the metric errors")
	}
	charts := strings.Index(section, `<div class="count-charts" data-metric="errors"`)
	table := strings.Index(section, `<table class="judge">`)
	if charts < 0 || table < charts {
		t.Errorf("the counts charts are at %d of the section, the judge's table at %d: want the charts first", charts, table)
	}
	for _, want := range []string{`class="count-chart count-e"`, `class="count-chart count-ratio"`, `class="threshold"`, `class="cs-band"`, `class="decisive-look"`} {
		if !strings.Contains(section, want) {
			t.Errorf("the metric's section lacks %s", want)
		}
	}
}
