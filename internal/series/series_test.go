package series_test

import (
	"strings"
	"testing"
	"time"

	"github.com/canaryd/canaryd/internal/series"
)

// TestStepFor checks that the step chosen for a range never gives more
// points than asked, whatever the range, and that Check agrees.
func TestStepFor(t *testing.T) {
	from := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, span := range []time.Duration{0, time.Millisecond, 400 * time.Millisecond, time.Second, 239 * time.Second, 240 * time.Second,
		time.Hour, 7 * 24 * time.Hour, 365 * 24 * time.Hour, 1234567 * time.Millisecond} {
		for _, points := range []int{2, 10, 240} {
			step := series.StepFor(from, from.Add(span), points)
			q := series.Query{Start: from, End: from.Add(span), Step: step, MaxSeries: 1, MaxPoints: points}
			if err := q.Check(); err != nil {
				t.Errorf("%s in %d points: step %s: %v", span, points, step, err)
			}
			if step%time.Millisecond != 0 || step <= 0 {
				t.Errorf("%s in %d points: step %s is not a positive whole number of milliseconds", span, points, step)
			}
		}
	}
	q := series.Query{Start: from, End: from.Add(time.Hour), Step: time.Minute, MaxSeries: 1, MaxPoints: 60}
	if err := q.Check(); err == nil || !strings.Contains(err.Error(), "more than 60 points") {
		t.Errorf("an hour a minute apart in 60 points: %v", err)
	}
}

// TestCutLabels checks that a long labels text is cut on a rune boundary
// to MaxLabelBytes.
func TestCutLabels(t *testing.T) {
	long := `{a="` + strings.Repeat("é", series.MaxLabelBytes) + `"}`
	got := series.CutLabels(long)
	if len(got) > series.MaxLabelBytes || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, `{a="é`) {
		t.Errorf("cut to %d bytes: %q", len(got), got)
	}
	if s := `{a="b"}`; series.CutLabels(s) != s {
		t.Error("a short text is changed")
	}
}
